import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Synchronization
import Testing

/// The cache rules seen at the socket: TTL clamps, the entry cap, negative caching,
/// serve-stale limits and prefetch, each counted at a fake upstream.
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

        // Past the upstream's 1 s the raised TTL still holds: a fresh cache hit, no new request.
        // (Letting the time pass is the test: no event marks an answer that did not expire.)
        usleep(1_200_000)
        let again = try result(client, ["host": "short.example.com", "family": "ipv4"], id: 3)
        #expect(again["source"] == "cache")
        #expect(again["stale"] == false)
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
            config: "[Resolver]\nUpstream=doh-json \(upstream.baseURL)/resolve\nNegativeTTL=1s\n")
        let client = try daemon.connectReady()
        let first = try response(client, ["host": "nx.example.com", "family": "ipv4"])
        #expect(first["error"]?["code"] == .int(-32001), "\(first.encodedString)")
        #expect(upstream.requestCount == 1)
        let second = try response(client, ["host": "nx.example.com", "family": "ipv4"], id: 2)
        #expect(second["error"]?["code"] == .int(-32001))
        #expect(upstream.requestCount == 1)
        // Once NegativeTTL has passed the upstream is asked again (waiting it out is the test).
        usleep(1_300_000)
        let third = try response(client, ["host": "nx.example.com", "family": "ipv4"], id: 3)
        #expect(third["error"]?["code"] == .int(-32001))
        #expect(upstream.requestCount == 2)
    }

    @Test func serveStaleNoNeverAnswersStale() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["s.example.com": (["203.0.113.21"], [], 1)])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nServeStale=no\nTimeout=1s\n")
        let client = try daemon.connectReady()
        _ = try result(client, ["host": "s.example.com", "family": "ipv4"])
        // The 1 s TTL runs out; expiry is what the test is about.
        usleep(1_200_000)
        // allowStale defaults to true, but the configuration forbids stale answers: a fresh one is fetched.
        let refreshed = try result(client, ["host": "s.example.com", "family": "ipv4", "allowStale": true], id: 2)
        #expect(refreshed["stale"] == false)
        #expect(refreshed["source"] == "upstream")
        #expect(upstream.requestCount == 2)

        upstream.stop()
        usleep(1_200_000)  // past the refreshed answer's 1 s TTL
        let down = try response(client, ["host": "s.example.com", "family": "ipv4", "allowStale": true], id: 3)
        #expect(down["error"]?["code"] == .int(-32002), "\(down.encodedString)")
    }

    @Test func maxStaleBoundsServingWhenUpstreamsFail() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["s.example.com": (["203.0.113.22"], [], 1)])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nMaxStale=1s\nTimeout=1s\n")
        let client = try daemon.connectReady()
        let started = Date()
        _ = try result(client, ["host": "s.example.com", "family": "ipv4"])
        upstream.stop()
        sleepUntil(started.addingTimeInterval(1.3))
        let stale = try result(client, ["host": "s.example.com", "family": "ipv4"], id: 2)
        #expect(stale["stale"] == true)
        #expect(stale["ipv4"] == ["203.0.113.22"])
        // Expired 1 s after the answer, stale for 1 s more: at 2.5 s nothing may be served.
        sleepUntil(started.addingTimeInterval(2.5))
        let gone = try response(client, ["host": "s.example.com", "family": "ipv4"], id: 3)
        #expect(gone["error"]?["code"] == .int(-32002), "\(gone.encodedString)")
    }

    @Test func prefetchResolvesAtStartAndRefreshesBeforeExpiry() throws {
        let log = RequestLog()
        let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
            "p1.example.com": (["203.0.113.31"], ["2001:db8::31"], 300),
            "p2.example.com": (["203.0.113.32"], [], 2),
        ]
        // Alibaba-shaped answers, with each request's arrival time recorded.
        let upstream = try FakeHTTPServer { request in
            log.record(request)
            let entries: [JSON] = (request.queryValue("host") ?? "").split(separator: ",").compactMap { host in
                guard let answer = answers[String(host)] else { return nil }
                return [
                    "host": .string(String(host)), "ips": .array(answer.v4.map { .string($0) }),
                    "ipsv6": .array(answer.v6.map { .string($0) }), "ttl": .int(answer.ttl),
                ]
            }
            let body: JSON = request.path.hasSuffix("/resolve") ? ["dns": .array(entries)] : entries.first ?? [:]
            return .json(body.encodedString)
        }
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/100000\nPrefetch=p1.example.com p2.example.com\n")
        // Connecting starts the daemon (socket activation) but sends no request.
        let client = try daemon.connectReady()
        #expect(
            log.waitFor(timeout: 5) { entries in
                entries.contains { $0.host == "p1.example.com" } && entries.contains { $0.host == "p2.example.com" }
            })
        let firstP2 = try #require(log.entries.first { $0.host == "p2.example.com" })

        // p2's answer lives 2 s: a second request for it must come before that.
        #expect(log.waitFor(timeout: 4) { $0.filter { $0.host == "p2.example.com" }.count >= 2 })
        let secondP2 = try #require(log.entries.filter { $0.host == "p2.example.com" }.dropFirst().first)
        let refreshDelay = secondP2.at.timeIntervalSince(firstP2.at)
        #expect(refreshDelay < 2.0, "the refresh came \(refreshDelay) s after the first answer")
        #expect(log.entries.filter { $0.host == "p1.example.com" }.count == 1)

        let cached = try result(client, ["host": "p1.example.com"])
        #expect(cached["source"] == "cache")
        #expect(cached["ipv6"] == ["2001:db8::31"])
        let refreshed = try result(client, ["host": "p2.example.com", "family": "ipv4"], id: 2)
        #expect(refreshed["stale"] == false)
        #expect(refreshed["source"] == "cache")
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

    /// Lets time pass until `date`, for tests whose subject is an expiry on the daemon's clock.
    func sleepUntil(_ date: Date) {
        let seconds = date.timeIntervalSinceNow
        if seconds > 0 { usleep(UInt32(seconds * 1_000_000)) }
    }
}

/// When each upstream request arrived, by the host it asked for.
final class RequestLog: Sendable {
    struct Entry: Sendable {
        var host: String
        var at: Date
    }

    private let storage = Mutex<[Entry]>([])

    func record(_ request: FakeHTTPRequest) {
        let now = Date()
        for host in (request.queryValue("host") ?? "").split(separator: ",") {
            storage.withLock { $0.append(Entry(host: String(host), at: now)) }
        }
    }

    var entries: [Entry] { storage.withLock { $0 } }

    /// Waits until `condition` holds for the entries; false on timeout.
    func waitFor(timeout: Double, _ condition: ([Entry]) -> Bool) -> Bool {
        eventually(timeout) { condition(entries) }
    }
}
