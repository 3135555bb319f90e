import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// The cache rules seen at the socket: TTL clamps, the entry cap, negative caching and
/// prefetch batches, each counted at a fake upstream. What happens as time passes (expiry,
/// stale windows, refresh timing) is ResolverServiceTests', on a manual clock.
@Suite(.serialized)
struct CachePolicyTests {
    @Test func minTTLRaisesAndMaxTTLCaps() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: [
            "short.example.com": (["203.0.113.1"], [], 1),
            "long.example.com": (["203.0.113.2"], [], 3600),
        ])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nMinTTL=30s\nMaxTTL=100s\n")
        let client = try daemon.connectReady()

        let short = try result(client, ["host": "short.example.com", "family": "ipv4"])
        #expect((29...30).contains(short["ttl"]?.numberValue?.int64Value ?? -1), "\(short.encodedString)")
        let long = try result(client, ["host": "long.example.com", "family": "ipv4"], id: 2)
        #expect((99...100).contains(long["ttl"]?.numberValue?.int64Value ?? -1), "\(long.encodedString)")
        #expect(upstream.requestCount == 2)
        let again = try result(client, ["host": "short.example.com", "family": "ipv4"], id: 3)
        #expect(again["source"] == "cache")
        #expect(upstream.requestCount == 2)
    }

    @Test func cacheSizeEvictsTheEarliestExpiry() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: [
            "c1.example.com": (["203.0.113.11"], [], 100),
            "c2.example.com": (["203.0.113.12"], [], 200),
            "c3.example.com": (["203.0.113.13"], [], 300),
        ])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nCacheSize=2\n")
        let client = try daemon.connectReady()
        // One family per name: one cache entry each.
        for (index, host) in ["c1.example.com", "c2.example.com", "c3.example.com"].enumerated() {
            _ = try result(client, ["host": .string(host), "family": "ipv4"], id: index)
        }
        #expect(upstream.requestCount == 3)
        let status = try #require(try client.call("status", [:], id: 10)?["result"])
        #expect(status["cache"]?["entries"]?.numberValue?.int64Value ?? -1 <= 2)

        let kept = try result(client, ["host": "c2.example.com", "family": "ipv4"], id: 11)
        #expect(kept["source"] == "cache")
        #expect(upstream.requestCount == 3)
        let evicted = try result(client, ["host": "c1.example.com", "family": "ipv4"], id: 12)
        #expect(evicted["source"] == "upstream")
        #expect(evicted["ipv4"] == ["203.0.113.11"])
        #expect(upstream.requestCount == 4)
    }

    @Test func negativeAnswersAreCachedForNegativeTTL() throws {
        let zone = FakeDNSZone(records: [], nonexistent: ["nx.example.com"])
        let upstream = try FakeHTTPServer.dohJSON(zone: zone)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=doh-json \(upstream.baseURL)/resolve\nNegativeTTL=1h\n")
        let client = try daemon.connectReady()
        let first = try response(client, ["host": "nx.example.com", "family": "ipv4"])
        #expect(first["error"]?["code"] == .int(-32001), "\(first.encodedString)")
        #expect(upstream.requestCount == 1)
        let second = try response(client, ["host": "nx.example.com", "family": "ipv4"], id: 2)
        #expect(second["error"]?["code"] == .int(-32001))
        #expect(upstream.requestCount == 1)
    }

    @Test func alibabaPrefetchUsesBatchesOfAtMostFive() throws {
        let hosts = (1...6).map { "b\($0).example.com" }
        var answers: [String: (v4: [String], v6: [String], ttl: Int)] = [:]
        for (index, host) in hosts.enumerated() { answers[host] = (["203.0.113.\(40 + index)"], [], 300) }
        let upstream = try FakeHTTPServer.alibaba(answers: answers)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nPrefetch=\(hosts.joined(separator: " "))\n")
        _ = try daemon.connectReady()
        func asked() -> Set<String> {
            Set(upstream.requests.flatMap { ($0.queryValue("host") ?? "").split(separator: ",").map(String.init) })
        }
        #expect(eventually(5) { asked().count >= hosts.count })
        #expect(asked() == Set(hosts))
        // Prefetch asks in batches (/resolve?host=a,b), at most 5 hosts a request.
        let paths = upstream.requests.map(\.path)
        #expect(paths.allSatisfy { $0.hasSuffix("/resolve") }, "\(paths)")
        #expect(upstream.requestCount == 2)
        for request in upstream.requests {
            #expect((request.queryValue("host") ?? "").split(separator: ",").count <= 5)
        }
    }

    // MARK: helpers

    func response(_ client: LineClient, _ params: JSON, id: Int = 1) throws -> JSON {
        try #require(try client.call("resolve", params, id: id))
    }

    func result(_ client: LineClient, _ params: JSON, id: Int = 1) throws -> JSON {
        let response = try response(client, params, id: id)
        return try #require(response["result"], "\(response.encodedString)")
    }
}
