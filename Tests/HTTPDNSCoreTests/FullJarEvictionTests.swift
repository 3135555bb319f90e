import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSCore

/// A full jar evicts exactly the least recently used cookie (RFC 6265bis 5.7) without scanning
/// the jar for each one (`CookieBuckets.leastRecentlyUsed`, `earliestExpiry`): checked against
/// the definition, a scan of the jar before each set, over a random run of sets, sends,
/// deletions and expiries longer than the batch of oldest cookies a scan keeps.
struct FullJarEvictionTests {
    /// Every live cookie with its access order, read from the jar's table.
    static func live(_ jar: CookieJar, now: Int64) -> [CookieKey: UInt64] {
        var orders: [CookieKey: UInt64] = [:]
        for cookies in jar.buckets.byBucket.values {
            for stored in cookies where !stored.cookie.isExpired(at: now) {
                orders[stored.cookie.key] = stored.accessOrder
            }
        }
        return orders
    }

    @Test func aFullJarEvictsTheLeastRecentlyUsedEveryTime() throws {
        var rng = SeededGenerator(state: 0x6576_6963_7401)
        let limits = CookieJarLimits(maxPerDomain: 1000, maxTotal: 150)
        let jar = CookieJar(rules: BasicDomainRules(), limits: limits)
        let hosts = (0..<40).map { "h\($0).example" }
        var now: Int64 = 1_800_000_000
        var evictions = 0
        var purges = 0
        for round in 0..<6000 {
            now += Int64(rng.next() % 2)
            let host = hosts[Int(rng.next() % UInt64(hosts.count))]
            let url = try #require(RequestURL("https://\(host)/"))
            let request = try CookieRequest(url, for: jar)
            switch rng.next() % 100 {
            case 0..<55:
                let name = "c\(rng.next() % 12)"
                let expiry = ["", "", "", "; Max-Age=2", "; Max-Age=30"][Int(rng.next() % 5)]
                let before = Self.live(jar, now: now)
                let key = CookieKey(domain: host, path: "/", name: name)
                _ = jar.setCookies(["\(name)=\(round)\(expiry)"], for: request, now: now)
                let after = Self.live(jar, now: now)
                #expect(jar.buckets.count <= limits.maxTotal, "round \(round)")
                #expect(after[key] != nil, "round \(round): the cookie set is kept")
                if before[key] == nil && before.count == limits.maxTotal {
                    let victim = try #require(before.min { $0.value < $1.value }?.key)
                    #expect(after[victim] == nil, "round \(round): the least recently used goes")
                    #expect(Set(before.keys).subtracting(after.keys) == [victim], "round \(round): nothing else goes")
                    #expect(after.count == limits.maxTotal, "round \(round)")
                    evictions += 1
                } else {
                    #expect(Set(before.keys).subtracting(after.keys).isEmpty, "round \(round): nothing goes")
                }
                if jar.buckets.count < before.count + (before[key] == nil ? 1 : 0) { purges += 1 }
            case 55..<58:
                _ = try jar.delete(.request(request), name: "c\(rng.next() % 12)", now: now)
            default:
                _ = jar.cookieHeader(for: request, now: now)
            }
            // The expiry bound stays below every stored expiry.
            let earliest = jar.buckets.byBucket.values.joined().compactMap(\.cookie.expires).min()
            if let earliest { #expect(try #require(jar.buckets.earliestExpiry) <= earliest, "round \(round)") }
        }
        #expect(evictions > 500, "the run should evict often (\(evictions))")
        #expect(purges > 20, "expired cookies should make room too (\(purges))")
    }

    /// A jar full of cookies that never expire stores a cookie without a purge scan, and a scan
    /// for the oldest serves a batch of evictions.
    @Test func theExpiryBoundAndTheBatchOfOldest() throws {
        let jar = CookieJar(rules: BasicDomainRules(), limits: CookieJarLimits(maxPerDomain: 1000, maxTotal: 100))
        let now: Int64 = 1_800_000_000
        let request = try CookieRequest(#require(RequestURL("https://a.example/")), for: jar)
        _ = jar.setCookies((0..<100).map { "k\($0)=v" }, for: request, now: now)
        #expect(jar.buckets.earliestExpiry == nil)
        #expect(!jar.buckets.mayHoldExpired(at: now))
        _ = jar.setCookies(["late=v; Max-Age=60"], for: request, now: now)
        #expect(jar.buckets.earliestExpiry == now + 60)
        #expect(!jar.buckets.mayHoldExpired(at: now + 59) && jar.buckets.mayHoldExpired(at: now + 60))
        // The first evictions went in order: k0, then k1.
        #expect(
            jar.buckets.location(of: CookieKey(domain: "a.example", path: "/", name: "k0"), inBucket: "a.example")
                == nil)
        _ = jar.setCookies((100..<150).map { "k\($0)=v" }, for: request, now: now)
        let left = Set(jar.buckets.storedCookies(inBucket: "a.example").map(\.cookie.name))
        #expect(left == Set((51..<150).map { "k\($0)" }).union(["late"]))
        // The late cookie expires: the purge makes room, and the bound is exact again.
        _ = jar.setCookies(["after=v"], for: request, now: now + 60)
        #expect(jar.buckets.count == 100)
        #expect(jar.buckets.earliestExpiry == nil)
        #expect(
            jar.buckets.location(of: CookieKey(domain: "a.example", path: "/", name: "k51"), inBucket: "a.example")
                != nil)
    }

    /// The buckets related to a domain, found by the domain's suffixes (or a scan of the keys by
    /// bytes for a domain with no registrable domain), are those the definition names: keys that
    /// domain-match the domain or that it domain-matches.
    @Test func relatedBucketsAreThoseTheDefinitionNames() {
        var buckets = CookieBuckets(rules: BasicDomainRules())
        let domains = [
            "a.example.com", "example.com", "b.a.example.com", "other.org", "x.co.uk", "co.uk", "uk", "localhost",
            "a.localhost", "github.io", "me.github.io", "192.0.2.1", "2001:db8::1", "1.2.3.4", "com",
        ]
        for domain in domains {
            let cookie = Cookie(
                name: "n", value: "v", domain: domain, hostOnly: true, path: "/", expires: nil, secure: false,
                httpOnly: false, sameSite: .lax, partitioned: false, created: 0)
            buckets.insert(cookie, inBucket: buckets.bucketKey(domain))
        }
        let keys = Array(buckets.byBucket.keys)
        for domain in domains + ["z.b.a.example.com", "nowhere.net", "example", "q.me.github.io", "2.3.4"] {
            let expected = Set(
                keys.filter { key in
                    IPLiteral.isIPLiteral(domain)
                        ? key == domain
                        : CookieMatching.domainMatches(key, domain: domain)
                            || CookieMatching.domainMatches(domain, domain: key)
                })
            #expect(Set(buckets.bucketKeys(relatedTo: domain)) == expected, "\(domain)")
        }
    }
}
