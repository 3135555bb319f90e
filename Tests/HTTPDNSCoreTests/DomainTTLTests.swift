import HTTPDNSProtocol
import Testing

@testable import HTTPDNSCore

/// `DomainTTL=` and `RankPorts=` in the configuration, and the per-domain TTL bounds in the
/// cache (issue 29): the most specific domain's bounds replace `MinTTL=`/`MaxTTL=` for its names.
struct DomainTTLTests {
    private func parse(_ text: String) throws -> DaemonConfiguration.Resolver {
        try DaemonConfiguration.parse(text: "[Resolver]\n" + text, path: "t.conf").get().0.resolver
    }

    private func problems(_ text: String) -> [String] {
        switch DaemonConfiguration.parse(text: "[Resolver]\n" + text, path: "t.conf") {
        case .success: return []
        case .failure(let problems): return problems.errors.map(\.description)
        }
    }

    @Test func domainTTLLinesAccumulateAndResolveAgainstTheGlobalKeys() throws {
        let resolver = try parse(
            "MinTTL=5\nDomainTTL=1min..1h example.com ~corp.example.\nDomainTTL=..10s api.example.com\n"
                + "DomainTTL=30s..infinity static.example.org\n")
        #expect(
            resolver.domainTTLs == [
                DomainTTL(domains: ["example.com", "corp.example"], minTTLMs: 60_000, maxTTLMs: 3_600_000),
                DomainTTL(domains: ["api.example.com"], minTTLMs: nil, maxTTLMs: 10_000),
                DomainTTL(domains: ["static.example.org"], minTTLMs: 30_000, maxTTLMs: .max),
            ])
        let limits = DNSCacheLimits(resolver)
        #expect(limits.bounds(for: "www.example.com") == TTLBounds(minTTL: 60, maxTTL: 3_600))
        #expect(limits.bounds(for: "v1.api.example.com") == TTLBounds(minTTL: 5, maxTTL: 10), "MinTTL= fills MIN")
        #expect(limits.bounds(for: "static.example.org").maxTTL == Int(Int32.max))
        #expect(limits.bounds(for: "notexample.com") == TTLBounds(minTTL: 5, maxTTL: 86_400))
        #expect(try parse("DomainTTL=1s..2s a.example\nDomainTTL=\n").domainTTLs.isEmpty, "an empty line resets")
    }

    @Test func badDomainTTLLinesAreRefusedWithTheirLine() {
        for (text, message) in [
            ("DomainTTL=1h example.com", "expected MIN..MAX DOMAIN"),
            ("DomainTTL=1s..2s", "expected MIN..MAX DOMAIN"),
            ("DomainTTL=1x..2s example.com", "invalid time span \"1x\""),
            ("DomainTTL=infinity.. example.com", "invalid time span \"infinity\""),
            ("DomainTTL=1s..2s bad_host!", "invalid host name"),
            ("DomainTTL=1s..2s .", "is every name"),
            ("DomainTTL=1h..1min example.com", "MIN is greater than MAX"),
            ("MaxTTL=1min\nDomainTTL=1h.. example.com", "MIN is greater than MaxTTL="),
            ("MinTTL=1h\nDomainTTL=..1min example.com", "MinTTL= is greater than this line's MAX"),
            ("DomainTTL=1s..2s example.com\nDomainTTL=1s..3s example.com", "has TTL bounds twice (first on line 2)"),
            ("DomainTL=1s..2s example.com", "did you mean DomainTTL=?"),
        ] {
            let found = problems(text)
            #expect(found.count == 1 && found[0].contains(message), "\(text): \(found)")
        }
    }

    @Test func rankPortsNameHostsAndPorts() throws {
        let resolver = try parse("RankPorts=www.example.com:443 API.example.com.:8443\nRankPorts=www.example.com:443\n")
        #expect(
            resolver.rankPorts == [
                RankPort(host: "www.example.com", port: 443), RankPort(host: "api.example.com", port: 8443),
            ])
        #expect(try parse("RankPorts=a.example:1\nRankPorts=\n").rankPorts.isEmpty)
        for (text, message) in [
            ("RankPorts=www.example.com", "expected HOST:PORT"),
            ("RankPorts=www.example.com:0", "invalid port \"0\""),
            ("RankPorts=www.example.com:65536", "invalid port \"65536\""),
            ("RankPorts=www.example.com:", "invalid port \"\""),
            ("RankPorts=192.0.2.1:443", "is an address"),
            ("RankPorts=a.example:1 a.example:2", "ranked on two ports (1 and 2)"),
            ("RankPort=a.example:1", "did you mean RankPorts=?"),
        ] {
            let found = problems(text)
            #expect(found.count == 1 && found[0].contains(message), "\(text): \(found)")
        }
    }

    /// Answers of names in a bounded domain are cached (and answered) within its bounds, the
    /// most specific domain's; a fleet answer is never lengthened, only cut at the ceiling.
    @Test func theCacheClampsEachNameByItsDomain() {
        let policy = DomainTTLPolicy([
            (["example.com"], TTLBounds(minTTL: 300, maxTTL: 600)),
            (["api.example.com"], TTLBounds(minTTL: 0, maxTTL: 5)),
        ])
        let cache = DNSCache(limits: DNSCacheLimits(minTTL: 0, maxTTL: 86_400, domainTTLs: policy))
        let now = MonotonicInstant(seconds: 10)
        func ttl(_ host: String, _ upstreamTTL: Int) -> Int {
            cache.ttl(of: CachePart(family: .ipv4, addresses: ["192.0.2.1"], ttl: upstreamTTL), host: host)
        }
        #expect(ttl("www.example.com", 30) == 300)
        #expect(ttl("www.example.com", 3_000) == 600)
        #expect(ttl("v1.api.example.com", 30) == 5)
        #expect(ttl("example.org", 30) == 30)
        #expect(cache.ttl(of: CachePart(family: .ipv6, addresses: [], ttl: 0), host: "www.example.com") == 300)

        cache.insert(
            host: "www.example.com", parts: [CachePart(family: .ipv4, addresses: ["192.0.2.1"], ttl: 30)],
            upstream: "x",
            now: now)
        #expect(cache.peek(host: "www.example.com", family: .ipv4)?.expiresAt == now + 300)
        cache.insertShared(
            [
                DNSCacheEntry(
                    host: "api.example.com", family: .ipv4, addresses: ["192.0.2.2"], upstream: nil,
                    expiresAt: now + 60, negative: false),
                DNSCacheEntry(
                    host: "shop.example.com", family: .ipv4, addresses: ["192.0.2.3"], upstream: nil,
                    expiresAt: now + 60, negative: false),
            ], now: now)
        #expect(cache.peek(host: "api.example.com", family: .ipv4)?.expiresAt == now + 5)
        #expect(cache.peek(host: "shop.example.com", family: .ipv4)?.expiresAt == now + 60, "never lengthened")
    }
}
