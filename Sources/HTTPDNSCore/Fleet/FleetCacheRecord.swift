import HTTPDNSProtocol

/// One shared DNS answer, as sealed into its fleet key: the addresses of a host in one family
/// (or the fact that it has none) and the absolute time at which the answer expires.
///
/// Encoded as compact JSON before sealing:
/// `{"v":1,"host":"api.example.com","family":"ipv4","addresses":["203.0.113.10"],"negative":false,"expires":1767225600123}`
/// with `expires` in Unix milliseconds, and `"nxdomain":true` in a negative record of a name that
/// does not exist (left out otherwise, so machines that do not know the member read the same
/// records). Decoding re-validates everything: the host must be
/// the one asked for, and every address must be an IP literal of the family (canonicalised),
/// so even a machine holding the fleet key cannot make a daemon answer with a non-address.
public struct FleetCacheRecord: Sendable, Equatable {
    /// The `v` of records written by this version.
    public static let formatVersion = 1
    /// More addresses than any real answer has; a longer list is refused.
    public static let maximumAddresses = 64

    public var host: String
    public var family: IPFamily
    /// Canonical address text, in the upstream's order; empty when `negative`.
    public var addresses: [String]
    /// The upstream said the host has no address of this family.
    public var negative: Bool
    /// A negative record of a name that does not exist at all (NXDOMAIN).
    public var noSuchName: Bool
    /// Unix milliseconds at which the answer stops being fresh on every machine.
    public var expiresAtUnixMs: Int64

    public init(
        host: String, family: IPFamily, addresses: [String], negative: Bool, noSuchName: Bool = false,
        expiresAtUnixMs: Int64
    ) {
        self.host = host
        self.family = family
        self.addresses = addresses
        self.negative = negative
        self.noSuchName = negative && noSuchName
        self.expiresAtUnixMs = expiresAtUnixMs
    }

    /// The record to publish for a fresh local answer: its expiry is the local entry's remaining
    /// lifetime from now, so publishing never extends a TTL. Nil when the entry has no time left.
    public init?(entry: DNSCacheEntry, now: MonotonicInstant, nowUnixMs: Int64) {
        let leftMs = entry.expiresAt.nanoseconds(since: now) / 1_000_000
        guard leftMs > 0 else { return nil }
        self.init(
            host: entry.host, family: entry.family, addresses: entry.negative ? [] : entry.addresses,
            negative: entry.negative, noSuchName: entry.noSuchName, expiresAtUnixMs: nowUnixMs + leftMs)
    }

    /// Milliseconds until the record expires (negative once it has).
    public func millisecondsLeft(nowUnixMs: Int64) -> Int64 { expiresAtUnixMs - nowUnixMs }

    /// The local cache entry for a fleet hit with `millisecondsLeft` to live (see
    /// `FleetCacheHit`), which counts down from there like any cached answer.
    public func cacheEntry(now: MonotonicInstant, millisecondsLeft: Int64) -> DNSCacheEntry {
        DNSCacheEntry(
            host: host, family: family, addresses: addresses, upstream: nil,
            expiresAt: now.advanced(byNanoseconds: millisecondsLeft * 1_000_000), negative: negative,
            noSuchName: noSuchName)
    }

    /// The plaintext that gets sealed.
    public func encoded() -> [UInt8] {
        var object = JSONObject()
        object.append("v", .int(Self.formatVersion))
        object.append("host", .string(host))
        object.append("family", .string(family.rawValue))
        object.append("addresses", .array(addresses.map(JSON.string)))
        object.append("negative", .bool(negative))
        if noSuchName { object.append("nxdomain", .bool(true)) }
        object.append("expires", .int64(expiresAtUnixMs))
        return JSON.object(object).encoded
    }

    /// Decodes and validates an opened record that was stored under the key of `host` and
    /// `family`.
    public static func decode(_ bytes: [UInt8], host expectedHost: String, family expectedFamily: IPFamily)
        -> Result<FleetCacheRecord, FleetRecordError>
    {
        guard let json = try? JSONParser.parse(bytes), let object = json.objectValue else {
            return .failure(FleetRecordError("not a JSON object"))
        }
        guard object["v"]?.numberValue?.int64Value == Int64(formatVersion) else {
            return .failure(FleetRecordError("unknown record version"))
        }
        guard let rawHost = object["host"]?.stringValue, case .success(let host) = HostName.validate(rawHost),
            host == expectedHost
        else { return .failure(FleetRecordError("host does not match its key")) }
        guard object["family"]?.stringValue == expectedFamily.rawValue else {
            return .failure(FleetRecordError("family does not match its key"))
        }
        guard let negative = object["negative"]?.boolValue, let expires = object["expires"]?.numberValue?.int64Value
        else { return .failure(FleetRecordError("missing negative or expires")) }
        guard let list = object["addresses"]?.arrayValue, list.count <= maximumAddresses else {
            return .failure(FleetRecordError("missing or oversized address list"))
        }
        var addresses: [String] = []
        for item in list {
            guard let text = item.stringValue,
                let address = expectedFamily == .ipv4 ? IPAddress(ipv4: text) : IPAddress(ipv6: text)
            else { return .failure(FleetRecordError("an address is not an IP literal of the family")) }
            addresses.append(address.description)
        }
        guard negative == addresses.isEmpty else {
            return .failure(FleetRecordError("negative and addresses disagree"))
        }
        return .success(
            FleetCacheRecord(
                host: host, family: expectedFamily, addresses: addresses, negative: negative,
                noSuchName: object["nxdomain"]?.boolValue ?? false, expiresAtUnixMs: expires))
    }
}

/// A fleet answer ready to serve: the record and how long it has left, which is the smaller of
/// the record's own expiry and the Redis key's remaining lifetime (so neither a clock ahead of
/// the publisher's nor anything in Redis can lengthen it).
public struct FleetCacheHit: Sendable, Equatable {
    public var record: FleetCacheRecord
    public var millisecondsLeft: Int64

    public init(record: FleetCacheRecord, millisecondsLeft: Int64) {
        self.record = record
        self.millisecondsLeft = millisecondsLeft
    }

    /// A hit for `record` read at `nowUnixMs` from a key with `keyMillisecondsLeft` (`PTTL`;
    /// negative when the key has no expiry); nil when nothing is left.
    public init?(record: FleetCacheRecord, nowUnixMs: Int64, keyMillisecondsLeft: Int64) {
        var left = record.millisecondsLeft(nowUnixMs: nowUnixMs)
        if keyMillisecondsLeft >= 0 { left = min(left, keyMillisecondsLeft) }
        guard left > 0 else { return nil }
        self.init(record: record, millisecondsLeft: left)
    }

    /// Whole seconds left, rounded up (what `resolve` reports as `ttl`).
    public var ttlSeconds: Int { Int((millisecondsLeft + 999) / 1_000) }
}

/// Why an opened fleet value was refused. Never contains the value.
public struct FleetRecordError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}
