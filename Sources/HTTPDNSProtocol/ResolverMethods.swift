// The DNS methods: resolve, reverse, flushCache.

public enum AddressFamily: String, Sendable, CaseIterable {
    case ipv4, ipv6, both
}

// MARK: resolve

public struct ResolveParams: MethodParams {
    public var host: String
    public var family: AddressFamily
    public var allowStale: Bool
    /// nil: the configured `Timeout=`.
    public var timeoutMs: Int?

    /// Longest wait a caller may ask for (resolved's method timeout is 45 s).
    public static let maxTimeoutMs: Int64 = 60_000

    public init(host: String, family: AddressFamily = .both, allowStale: Bool = true, timeoutMs: Int? = nil) {
        self.host = host
        self.family = family
        self.allowStale = allowStale
        self.timeoutMs = timeoutMs
    }

    public init(_ params: Params) throws(RPCError) {
        host = try params.requiredString("host")
        family = try params.optionalEnum("family", AddressFamily.self) ?? .both
        allowStale = try params.optionalBool("allowStale") ?? true
        timeoutMs = try params.optionalInt("timeoutMs", in: 1...Self.maxTimeoutMs).map(Int.init)
    }

    public var json: JSONObject {
        var o = JSONObject()
        o.append("host", .string(host))
        o.append("family", .string(family.rawValue))
        o.append("allowStale", .bool(allowStale))
        if let timeoutMs { o.append("timeoutMs", .int(timeoutMs)) }
        return o
    }
}

public struct ResolveResult: MethodResult {
    public enum Source: String, Sendable {
        case cache, upstream, system, literal, `static`, fleet
    }

    /// Each family's own TTL in a dual-family answer (`ttls`).
    public struct FamilyTTLs: Sendable, Equatable {
        public var ipv4: Int
        public var ipv6: Int

        public init(ipv4: Int, ipv6: Int) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
        }
    }

    public var host: String
    public var ipv4: [String]
    public var ipv6: [String]
    /// Seconds the addresses are valid: the smaller TTL of the families that have addresses.
    public var ttl: Int
    /// For `family: both`: each family's TTL (a family without an address has the negative TTL).
    public var ttls: FamilyTTLs?
    public var stale: Bool
    public var source: Source
    /// The upstream that answered, for `source` `upstream` (and `cache`, where known).
    public var upstream: String?

    public init(
        host: String, ipv4: [String], ipv6: [String], ttl: Int, ttls: FamilyTTLs? = nil, stale: Bool,
        source: Source, upstream: String? = nil
    ) {
        self.host = host
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
        self.ttls = ttls
        self.stale = stale
        self.source = source
        self.upstream = upstream
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"host":"#, to: &out)
        JSONWriter.string(host, to: &out)
        JSONWriter.raw(#","ipv4":"#, to: &out)
        JSONWriter.stringArray(ipv4, to: &out)
        JSONWriter.raw(#","ipv6":"#, to: &out)
        JSONWriter.stringArray(ipv6, to: &out)
        JSONWriter.raw(#","ttl":"#, to: &out)
        JSONWriter.integer(ttl, to: &out)
        if let ttls {
            JSONWriter.raw(#","ttls":{"ipv4":"#, to: &out)
            JSONWriter.integer(ttls.ipv4, to: &out)
            JSONWriter.raw(#","ipv6":"#, to: &out)
            JSONWriter.integer(ttls.ipv6, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        JSONWriter.raw(#","stale":"#, to: &out)
        JSONWriter.bool(stale, to: &out)
        JSONWriter.raw(#","source":"#, to: &out)
        JSONWriter.string(source.rawValue, to: &out)
        if let upstream {
            JSONWriter.raw(#","upstream":"#, to: &out)
            JSONWriter.string(upstream, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let host = json["host"]?.stringValue,
            let v4 = json["ipv4"]?.arrayValue?.compactMap(\.stringValue),
            let v6 = json["ipv6"]?.arrayValue?.compactMap(\.stringValue),
            let ttl = json["ttl"]?.numberValue?.int64Value,
            let source = json["source"]?.stringValue.flatMap(Source.init(rawValue:))
        else { return nil }
        var ttls: FamilyTTLs?
        if let object = json["ttls"] {
            guard let v4TTL = object["ipv4"]?.numberValue?.int64Value,
                let v6TTL = object["ipv6"]?.numberValue?.int64Value
            else { return nil }
            ttls = FamilyTTLs(ipv4: Int(v4TTL), ipv6: Int(v6TTL))
        }
        self.init(
            host: host, ipv4: v4, ipv6: v6, ttl: Int(ttl), ttls: ttls, stale: json["stale"]?.boolValue ?? false,
            source: source, upstream: json["upstream"]?.stringValue)
    }
}

// MARK: reverse

public struct ReverseParams: MethodParams {
    /// An IPv4 or IPv6 literal.
    public var address: String

    public init(address: String) { self.address = address }

    public init(_ params: Params) throws(RPCError) {
        address = try params.requiredString("address")
    }

    public var json: JSONObject { ["address": .string(address)] }
}

/// The host names the daemon handed `address` out for, to the calling uid, most recent first.
public struct ReverseResult: MethodResult {
    /// The address in canonical form.
    public var address: String
    public var hosts: [String]
    /// Seconds the most recent attribution is still backed by a live answer (0 once only retained).
    public var ttl: Int

    public init(address: String, hosts: [String], ttl: Int) {
        self.address = address
        self.hosts = hosts
        self.ttl = ttl
    }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"address":"#, to: &out)
        JSONWriter.string(address, to: &out)
        JSONWriter.raw(#","hosts":"#, to: &out)
        JSONWriter.stringArray(hosts, to: &out)
        JSONWriter.raw(#","ttl":"#, to: &out)
        JSONWriter.integer(ttl, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let address = json["address"]?.stringValue, let hosts = json["hosts"]?.arrayValue,
            let ttl = json["ttl"]?.numberValue?.int64Value, ttl >= 0
        else { return nil }
        var names: [String] = []
        for host in hosts {
            guard let name = host.stringValue else { return nil }
            names.append(name)
        }
        self.init(address: address, hosts: names, ttl: Int(ttl))
    }
}

// MARK: flushCache

public struct FlushCacheParams: MethodParams {
    /// One host; nil flushes every entry.
    public var host: String?

    public init(host: String? = nil) { self.host = host }

    public init(_ params: Params) throws(RPCError) {
        host = try params.optionalString("host")
    }

    public var json: JSONObject {
        var o = JSONObject()
        if let host { o.append("host", .string(host)) }
        return o
    }
}

public struct FlushCacheResult: MethodResult {
    /// How many cache entries were dropped.
    public var flushed: Int

    public init(flushed: Int) { self.flushed = flushed }

    public func write(to out: inout JSONOutput) {
        JSONWriter.raw(#"{"flushed":"#, to: &out)
        JSONWriter.integer(flushed, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    public init?(json: JSON) {
        guard let flushed = nonNegativeInteger("flushed", in: json) else { return nil }
        self.flushed = flushed
    }
}
