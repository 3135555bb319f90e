import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// The sealed record formats' plaintext: round trips and the validation a daemon applies to
/// whatever it opens.
struct FleetRecordTests {
    static let machineA = FleetMachineID(String(repeating: "a", count: 32))!
    static let machineB = FleetMachineID(String(repeating: "b", count: 32))!

    @Test func cacheRecordRoundTrips() throws {
        let record = FleetCacheRecord(
            host: "api.example.com", family: .ipv4, addresses: ["203.0.113.10", "203.0.113.11"], negative: false,
            expiresAtUnixMs: 1_767_225_600_123)
        let bytes = record.encoded()
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"v":1,"host":"api.example.com","family":"ipv4","addresses":["203.0.113.10","203.0.113.11"],"#
                + #""negative":false,"expires":1767225600123}"#)
        #expect(try FleetCacheRecord.decode(bytes, host: "api.example.com", family: .ipv4).get() == record)
        let negative = FleetCacheRecord(
            host: "v4only.example", family: .ipv6, addresses: [], negative: true, expiresAtUnixMs: 5)
        #expect(
            try FleetCacheRecord.decode(negative.encoded(), host: "v4only.example", family: .ipv6).get() == negative)
    }

    @Test func publishingUsesTheEntrysRemainingLifetime() throws {
        let now = MonotonicInstant(seconds: 1_000)
        let entry = DNSCacheEntry(
            host: "a.example", family: .ipv6, addresses: ["2001:db8::1"], upstream: "alibaba",
            expiresAt: now.advanced(byMilliseconds: 42_500), negative: false)
        let record = try #require(FleetCacheRecord(entry: entry, now: now, nowUnixMs: 1_700_000_000_000))
        #expect(record.expiresAtUnixMs == 1_700_000_042_500)
        #expect(record.millisecondsLeft(nowUnixMs: 1_700_000_000_000) == 42_500)
        var expired = entry
        expired.expiresAt = now
        #expect(FleetCacheRecord(entry: expired, now: now, nowUnixMs: 1) == nil)
    }

    @Test func aFleetHitNeverOutlivesTheRecordOrTheRedisKey() throws {
        let record = FleetCacheRecord(
            host: "a.example", family: .ipv4, addresses: ["192.0.2.1"], negative: false, expiresAtUnixMs: 10_000)
        // The record's own clock wins when Redis would keep the key longer (a publisher's clock
        // behind ours, or an expiry set by hand).
        #expect(FleetCacheHit(record: record, nowUnixMs: 4_000, keyMillisecondsLeft: 60_000)?.millisecondsLeft == 6_000)
        // The key's expiry wins when our clock is behind the publisher's.
        #expect(FleetCacheHit(record: record, nowUnixMs: 1_000, keyMillisecondsLeft: 3_000)?.millisecondsLeft == 3_000)
        #expect(FleetCacheHit(record: record, nowUnixMs: 4_000, keyMillisecondsLeft: -1)?.millisecondsLeft == 6_000)
        #expect(FleetCacheHit(record: record, nowUnixMs: 10_000, keyMillisecondsLeft: 5_000) == nil)
        #expect(FleetCacheHit(record: record, nowUnixMs: 1_000, keyMillisecondsLeft: 0) == nil)
        let hit = try #require(FleetCacheHit(record: record, nowUnixMs: 8_999, keyMillisecondsLeft: 60_000))
        #expect(hit.ttlSeconds == 2)
        // The local entry made from a hit counts down from the hit's remaining time.
        let now = MonotonicInstant(seconds: 50)
        let entry = record.cacheEntry(now: now, millisecondsLeft: hit.millisecondsLeft)
        #expect(entry.expiresAt == now.advanced(byMilliseconds: 1_001))
        #expect(entry.addresses == ["192.0.2.1"] && entry.upstream == nil && !entry.negative)
    }

    @Test func openedCacheRecordsAreRevalidated() throws {
        func decode(_ text: String, host: String = "a.example", family: IPFamily = .ipv4) -> String? {
            switch FleetCacheRecord.decode(Array(text.utf8), host: host, family: family) {
            case .success: return nil
            case .failure(let error): return error.reason
            }
        }
        let valid =
            #"{"v":1,"host":"a.example","family":"ipv4","addresses":["192.0.2.1"],"negative":false,"expires":9}"#
        #expect(decode(valid) == nil)
        #expect(decode(valid, host: "b.example") == "host does not match its key")
        #expect(decode(valid, family: .ipv6) == "family does not match its key")
        #expect(decode(valid.replacing("192.0.2.1", with: "evil.example")) != nil)
        #expect(decode(valid.replacing("192.0.2.1", with: "2001:db8::1")) != nil)
        #expect(decode(valid.replacing("192.0.2.1", with: "192.0.2.01")) != nil)
        #expect(decode(valid.replacing("\"v\":1", with: "\"v\":2")) == "unknown record version")
        #expect(decode(valid.replacing("\"negative\":false", with: "\"negative\":true")) != nil)
        #expect(decode(valid.replacing(",\"expires\":9", with: "")) != nil)
        #expect(decode("not json") == "not a JSON object")
        let many = (0...64).map { "\"192.0.2.\($0)\"" }.joined(separator: ",")
        #expect(decode(valid.replacing("\"192.0.2.1\"", with: many)) != nil)
        // IPv6 text is canonicalised.
        let v6 =
            #"{"v":1,"host":"a.example","family":"ipv6","addresses":["2001:DB8:0:0::1"],"negative":false,"expires":9}"#
        #expect(
            try FleetCacheRecord.decode(Array(v6.utf8), host: "a.example", family: .ipv6).get().addresses == [
                "2001:db8::1"
            ])
    }

    static func cookie(
        _ name: String = "sid", value: String = "abc", domain: String = "example.com", path: String = "/",
        hostOnly: Bool = true, expires: Int64? = 1_767_225_600
    ) -> Cookie {
        Cookie(
            name: name, value: value, domain: domain, hostOnly: hostOnly, path: path, expires: expires, secure: true,
            httpOnly: true, sameSite: .lax, partitioned: false, created: 1_764_400_000, creationIndex: 7,
            lastAccess: 1_764_400_100)
    }

    @Test func cookieChangesRoundTrip() throws {
        let address = FleetCookieAddress(
            jar: "user:crawler", key: CookieKey(domain: "example.com", path: "/", name: "sid"))
        let version = FleetVersion(updatedAtMs: 1_767_225_600_123, machine: Self.machineA)
        let set = FleetCookieChange(address: address, version: version, content: .set(FleetCookieValue(Self.cookie())))
        #expect(
            String(decoding: set.encoded(), as: UTF8.self)
                == #"{"v":1,"jar":"user:crawler","domain":"example.com","path":"/","name":"sid","updated":1767225600123,"#
                + #""machine":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","cookie":{"value":"abc","hostOnly":true,"#
                + #""expires":1767225600,"secure":true,"httpOnly":true,"sameSite":"lax","partitioned":false,"#
                + #""created":1764400000}}"#)
        #expect(try FleetCookieChange.decode(set.encoded()).get() == set)
        let session = FleetCookieChange(
            address: address, version: version, content: .set(FleetCookieValue(Self.cookie(expires: nil))))
        #expect(try FleetCookieChange.decode(session.encoded()).get() == session)
        let deleted = FleetCookieChange(address: address, version: version, content: .deleted)
        #expect(try FleetCookieChange.decode(deleted.encoded()).get() == deleted)
        // The jar's bookkeeping is the receiver's own.
        guard case .set(let value) = set.content else { return }
        let stored = value.cookie(address.key, creationIndex: 99, lastAccess: 5)
        #expect(stored.creationIndex == 99 && stored.lastAccess == 5 && stored.value == "abc" && stored.hostOnly)
    }

    /// A path is tested as octets, as the jar stores it: "/" then a combining mark (one grapheme,
    /// so `hasPrefix("/")` is false) is a path the jar accepts, and the fleet carries it.
    @Test func aPathIsCheckedAsOctets() throws {
        let path = "/\u{06EC}a"
        let address = FleetCookieAddress(jar: "user:c", key: CookieKey(domain: "example.com", path: path, name: "sid"))
        let version = FleetVersion(updatedAtMs: 1_767_225_600_123, machine: Self.machineA)
        let set = FleetCookieChange(
            address: address, version: version, content: .set(FleetCookieValue(Self.cookie(path: path))))
        #expect(try FleetCookieChange.decode(set.encoded()).get() == set)
        let relative = FleetCookieChange(
            address: FleetCookieAddress(jar: "user:c", key: CookieKey(domain: "example.com", path: "a/", name: "sid")),
            version: version, content: .deleted)
        #expect(throws: (any Error).self) { try FleetCookieChange.decode(relative.encoded()).get() }
    }

    @Test func openedCookieChangesAreRevalidated() throws {
        let address = FleetCookieAddress(jar: "user:c", key: CookieKey(domain: "example.com", path: "/", name: "sid"))
        let good = FleetCookieChange(
            address: address, version: FleetVersion(updatedAtMs: 1, machine: Self.machineA),
            content: .set(FleetCookieValue(Self.cookie()))
        ).encoded()
        let text = String(decoding: good, as: UTF8.self)
        let broken = [
            text.replacing(#""value":"abc""#, with: #""value":"a\nb""#),
            text.replacing(#""value":"abc""#, with: "\"value\":\"\(String(repeating: "x", count: 4_096))\""),
            text.replacing(#""name":"sid""#, with: #""name":"s\u0000d""#),
            text.replacing(#""path":"/""#, with: #""path":"nopath""#),
            text.replacing(#""domain":"example.com""#, with: #""domain":"Example.com""#),
            text.replacing(#""machine":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa""#, with: #""machine":"zz""#),
            text.replacing(#""sameSite":"lax""#, with: #""sameSite":"sometimes""#),
            text.replacing(#""expires":1767225600"#, with: #""expires":"soon""#),
            text.replacing(#""updated":1"#, with: #""updated":-1"#),
            text.replacing(#""jar":"user:c""#, with: #""jar":"""#),
            text.replacing(#""v":1"#, with: #""v":7"#),
            text.replacing(#""cookie":{"#, with: #""deleted":true,"cookie":{"#),
        ]
        for variant in broken {
            #expect(throws: FleetRecordError.self, "\(variant.prefix(160))") {
                try FleetCookieChange.decode(Array(variant.utf8)).get()
            }
        }
    }

    @Test func versionsOrderByTimeThenMachineAndTheirSortKeysAgree() throws {
        let early = FleetVersion(updatedAtMs: 100, machine: Self.machineB)
        let late = FleetVersion(updatedAtMs: 101, machine: Self.machineA)
        let tieA = FleetVersion(updatedAtMs: 101, machine: Self.machineA)
        let tieB = FleetVersion(updatedAtMs: 101, machine: Self.machineB)
        #expect(early < late && tieA < tieB && !(tieB < tieA) && tieA == late)
        var generator = SeededGeneratorFacade(seed: 7)
        let machines = (0..<4).map { _ in FleetMachineID(bytes: (0..<16).map { _ in generator.byte() })! }
        let versions = (0..<200).map { _ in
            FleetVersion(updatedAtMs: Int64(generator.below(1 << 45)), machine: machines[generator.below(4)])
        }
        for version in versions { #expect(version.sortKey.utf8.count == FleetVersion.sortKeyLength) }
        for (a, b) in zip(versions, versions.dropFirst()) {
            #expect((a < b) == a.sortKey.utf8.lexicographicallyPrecedes(b.sortKey.utf8))
        }
        #expect(FleetMachineID("ABCDEF0123456789abcdef0123456789") == nil)
        #expect(FleetMachineID("abc") == nil)
        #expect(
            FleetMachineID(bytes: [0xAB] + Array(repeating: 0, count: 15))?.text == "ab"
                + String(repeating: "0", count: 30))
    }

    @Test func keysCarryTheFleetHashTagAndNoPlaintext() {
        let keyspace = FleetKeyspace(fleetName: "gateways", hasher: ReversingHasher())
        let keys = [
            keyspace.cacheKey(host: "api.example.com", family: .ipv4),
            keyspace.cacheKey(host: "api.example.com", family: .ipv6),
            keyspace.lockKey(host: "api.example.com"),
            keyspace.changesKey, keyspace.snapshotKey, keyspace.epochKey,
        ]
        #expect(Set(keys).count == keys.count)
        for key in keys {
            #expect(key.hasPrefix("httpdnsd:{gateways}:"))
            #expect(!key.contains("example"))
            // One hash tag: the first {...} is the fleet name.
            #expect(key.firstIndex(of: "}") == key.index(key.startIndex, offsetBy: "httpdnsd:{gateways".count))
        }
        let field = keyspace.snapshotField(
            FleetCookieAddress(jar: "user:c", key: CookieKey(domain: "example.com", path: "/", name: "sid")))
        #expect(!field.contains("example") && !field.contains("sid"))
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        #expect(
            keyspace.snapshotField(FleetCookieAddress(jar: "j", key: CookieKey(domain: "ab", path: "c", name: "")))
                != keyspace.snapshotField(
                    FleetCookieAddress(jar: "j", key: CookieKey(domain: "a", path: "bc", name: ""))))
    }
}

/// A stand-in for the keyed hash: hex of the reversed material with the purpose, deterministic
/// and free of plaintext runs.
struct ReversingHasher: FleetNameHashing {
    func hashedName(purpose: String, _ material: [UInt8]) -> String {
        let bytes = Array(purpose.utf8) + [0] + material
        return bytes.reversed().map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}

/// Small helpers over the seeded generator.
struct SeededGeneratorFacade {
    var generator: SeededGenerator
    init(seed: UInt64) { generator = SeededGenerator(state: seed) }
    mutating func below(_ bound: Int) -> Int { Int(generator.next() % UInt64(bound)) }
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: generator.next()) }
}
