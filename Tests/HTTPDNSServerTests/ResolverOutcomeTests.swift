import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// A resolve answers from its own upstream query, not from what the cache kept of it: TTL 0,
/// `MaxTTL=0`, `NegativeTTL=0`, a full cache and huge answers all still answer the caller.
@Suite(.serialized)
struct ResolverOutcomeTests {
    static func daemon(_ upstream: FakeHTTPServer, _ extra: String = "") throws -> DaemonHarness {
        try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n\(extra)")
    }

    static func call(_ client: LineClient, _ method: String, _ params: JSON, id: Int = 1) throws -> JSON {
        try #require(try client.call(method, params, id: id))
    }

    static func resolve(_ client: LineClient, _ params: JSON, id: Int = 1) throws -> JSON {
        try call(client, "resolve", params, id: id)
    }

    static func ttl(_ response: JSON) -> Int64? { response["result"]?["ttl"]?.numberValue?.int64Value }

    /// RFC 1035: TTL 0 means "use for this transaction only". The caller gets the answer with
    /// `ttl: 0`; the next caller asks the upstream again.
    @Test func aZeroTTLAnswerIsAnsweredWithTTLZeroAndNotCached() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["zero.example.com": (["203.0.113.1"], ["2001:db8::1"], 0)])
        let daemon = try Self.daemon(upstream)
        let client = try daemon.connectReady()
        for id in 1...2 {
            let response = try Self.resolve(client, ["host": "zero.example.com"], id: id)
            #expect(response["result"]?["ipv4"] == ["203.0.113.1"], "\(response.encodedString)")
            #expect(response["result"]?["ipv6"] == ["2001:db8::1"])
            #expect(Self.ttl(response) == 0)
            #expect(response["result"]?["source"] == "upstream")
        }
        #expect(upstream.requestCount == 2)
        let status = try Self.call(client, "status", [:], id: 3)
        #expect(status["result"]?["cache"]?["entries"] == 0)
    }

    @Test func maxTTLZeroAnswersEveryResolveFromUpstream() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["a.example.com": (["203.0.113.1"], [], 300)])
        let daemon = try Self.daemon(upstream, "MaxTTL=0\n")
        let client = try daemon.connectReady()
        for id in 1...2 {
            let response = try Self.resolve(client, ["host": "a.example.com", "family": "ipv4"], id: id)
            #expect(response["result"]?["ipv4"] == ["203.0.113.1"], "\(response.encodedString)")
            #expect(Self.ttl(response) == 0)
        }
        #expect(upstream.requestCount == 2)
    }

    @Test func nxdomainWithZeroNegativeTTLIsHostNotFound() throws {
        let upstream = try FakeHTTPServer.dohJSON(zone: FakeDNSZone(records: [], nonexistent: ["nx.example.com"]))
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=doh-json \(upstream.baseURL)/resolve\nNegativeTTL=0\n")
        let client = try daemon.connectReady()
        for id in 1...2 {
            let response = try Self.resolve(client, ["host": "nx.example.com"], id: id)
            #expect(response["error"]?["code"] == .int(-32001), "\(response.encodedString)")
            #expect(response["error"]?["data"]?["name"] == "HostNotFound")
        }
        // Nothing negative was cached: each resolve asked (A and AAAA each).
        #expect(upstream.requestCount == 4)
    }

    /// `status` counts requests: a cold dual-family resolve is one miss and no hit, the next one
    /// hit.
    @Test func aColdResolveCountsOneMissAndNoHit() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["a.example.com": (["203.0.113.1"], ["2001:db8::1"], 300)])
        let daemon = try Self.daemon(upstream)
        let client = try daemon.connectReady()
        #expect(try Self.resolve(client, ["host": "a.example.com"])["result"]?["source"] == "upstream")
        var cache = try Self.call(client, "status", [:], id: 2)["result"]?["cache"]
        #expect(cache?["misses"] == 1, "\(cache?.encodedString ?? "nil")")
        #expect(cache?["hits"] == 0)
        #expect(try Self.resolve(client, ["host": "a.example.com"], id: 3)["result"]?["source"] == "cache")
        cache = try Self.call(client, "status", [:], id: 4)["result"]?["cache"]
        #expect(cache?["misses"] == 1 && cache?["hits"] == 1, "\(cache?.encodedString ?? "nil")")
    }

    /// With the cache full of longer-lived names, a dual-family answer with the shortest TTL is
    /// still answered (and both of its families cached), not "uncacheable".
    @Test func aFullCacheStillAnswersAndKeepsBothFamiliesOfAnAnswer() throws {
        var answers: [String: (v4: [String], v6: [String], ttl: Int)] = [:]
        for index in 0..<200 { answers["n\(index).example.com"] = (["198.51.100.\(index % 250)"], [], 3600) }
        answers["short.example.com"] = (["203.0.113.5"], ["2001:db8::5"], 60)
        let upstream = try FakeHTTPServer.alibaba(answers: answers)
        let daemon = try Self.daemon(upstream, "CacheSize=64\nUpstreamQueryBurstPerUser=1000\n")
        let client = try daemon.connectReady()
        for index in 0..<200 {
            let response = try Self.resolve(client, ["host": .string("n\(index).example.com")], id: index)
            #expect(response["result"] != nil, "\(response.encodedString)")
        }
        let short = try Self.resolve(client, ["host": "short.example.com", "family": "both"], id: 500)
        #expect(short["result"]?["ipv4"] == ["203.0.113.5"], "\(short.encodedString)")
        #expect(short["result"]?["ipv6"] == ["2001:db8::5"])
        let cached = try Self.resolve(client, ["host": "short.example.com", "family": "both"], id: 501)
        #expect(cached["result"]?["source"] == "cache", "\(cached.encodedString)")
        let status = try Self.call(client, "status", [:], id: 502)
        #expect((status["result"]?["cache"]?["entries"]?.numberValue?.int64Value ?? 99) <= 64)
    }

    /// 40 000 addresses in one answer: answered within the default timeout, with the documented
    /// number of addresses kept, and without flushing the caller's IP -> host memory.
    @Test func aHugeAnswerIsCappedAndLeavesTheAddressMemoryAlone() throws {
        let many = (0..<40_000).map { "10.\($0 >> 16).\($0 >> 8 & 0xff).\($0 & 0xff)" }
        let upstream = try FakeHTTPServer.alibaba(answers: [
            "a.example.com": (["203.0.113.10"], [], 300), "huge.example.com": (many, [], 300),
        ])
        let daemon = try Self.daemon(upstream)
        let client = try daemon.connectReady()
        #expect(try Self.resolve(client, ["host": "a.example.com", "family": "ipv4"])["result"] != nil)
        let huge = try Self.resolve(client, ["host": "huge.example.com", "family": "ipv4"], id: 2)
        let kept = try #require(huge["result"]?["ipv4"]?.arrayValue, "\(huge.encodedString.prefix(300))")
        #expect(kept.compactMap(\.stringValue) == Array(many.prefix(32)))
        let stored = try Self.call(
            client, "handleSetCookie", ["url": "https://203.0.113.10/", "setCookie": ["sid=1"]], id: 3)
        #expect(stored["result"]?["host"] == "a.example.com", "\(stored.encodedString)")
    }

    /// `MaxTTL=infinity` must not put a TTL above 2^53-1 (JavaScript's largest exact integer) on
    /// the wire: not for literals, `Static=` answers, upstream answers, cache hits nor `reverse`.
    @Test func noTTLOnTheWireExceedsJSONsSafeIntegers() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["a.example.com": (["203.0.113.1"], [], 2_147_483_647)])
        let daemon = try Self.daemon(upstream, "MaxTTL=infinity\nStatic=intranet.example 10.0.0.5\n")
        let client = try daemon.connectReady()
        let safe: Int64 = (1 << 53) - 1
        let replies = [
            try Self.resolve(client, ["host": "192.0.2.1"], id: 1),
            try Self.resolve(client, ["host": "intranet.example"], id: 2),
            try Self.resolve(client, ["host": "a.example.com"], id: 3),
            try Self.resolve(client, ["host": "a.example.com"], id: 4),
            try Self.call(client, "reverse", ["address": "203.0.113.1"], id: 5),
            try Self.call(client, "reverse", ["address": "10.0.0.5"], id: 6),
        ]
        for reply in replies {
            let ttl = try #require(Self.ttl(reply), "\(reply.encodedString)")
            #expect(ttl > 0 && ttl <= safe, "\(reply.encodedString)")
        }
    }

    /// Why a resolve failed reaches `data.reason`: the upstream and its error, or the caller's
    /// own timeout.
    @Test func theFailureReasonNamesTheUpstreamOrTheTimeout() throws {
        let upstream = try FakeHTTPServer { request in
            request.target.contains("slow")
                ? .delay(ms: 1_000, then: .json(#"{"host":"slow.example.com","ips":["203.0.113.1"],"ttl":60}"#))
                : .respond(status: 500, headers: [], body: Array("oops".utf8))
        }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\n")
        let client = try daemon.connectReady()
        let broken = try Self.resolve(client, ["host": "broken.example.com"])
        #expect(broken["error"]?["code"] == .int(-32002))
        #expect(broken["error"]?["data"]?["reason"] == "alibaba: HTTP status 500", "\(broken.encodedString)")
        let slow = try Self.resolve(client, ["host": "slow.example.com", "timeoutMs": 100], id: 2)
        #expect(slow["error"]?["data"]?["reason"] == "timed out after 100 ms", "\(slow.encodedString)")
    }
}
