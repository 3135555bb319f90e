import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Upstream work is bounded, end to end: a caller's own `timeoutMs` bounds only its own wait,
/// flights are capped per uid, and shutdown never outlasts the unit's stop timeout. The exact
/// instants and counts (deadlines, caps in total, workers per uid) are ResolverServiceTests', on
/// a manual clock.
@Suite(.serialized)
struct UpstreamBoundsTests {
    /// A fake Alibaba answering every host with `address` after `delayMs`; names with "slow" hang.
    static func upstream(address: String = "203.0.113.1", delayMs: Int = 0) throws -> FakeHTTPServer {
        try FakeHTTPServer { request in
            let host = request.queryValue("host") ?? "x"
            if host.contains("slow") { return .hang }
            let answer = FakeHTTPAction.json(#"{"host":"\#(host)","ips":["\#(address)"],"ttl":60}"#)
            return delayMs > 0 ? .delay(ms: delayMs, then: answer) : answer
        }
    }

    static func request(_ id: Int, _ params: JSON) -> String {
        JSON.object(["jsonrpc": "2.0", "id": .int(id), "method": "resolve", "params": params]).encodedString
    }

    /// Two callers share one query: the one in a hurry gets its timeout, the patient one the
    /// answer; the query lived as long as its longest waiter needed.
    @Test func aCoalescedQueryKeepsItsLongestWaitersDeadline() throws {
        let upstream = try Self.upstream(delayMs: 500)
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=3s\n")
        let hurried = try daemon.connectReady()
        let patient = try daemon.connect()
        try hurried.sendLine(Self.request(1, ["host": "a.example.com", "timeoutMs": 150]))
        try patient.sendLine(Self.request(2, ["host": "a.example.com", "timeoutMs": 3_000]))
        let early = try #require(hurried.readJSON())
        #expect(early["error"]?["data"]?["reason"] == "timed out after 150 ms", "\(early.encodedString)")
        let late = try #require(patient.readJSON())
        #expect(late["result"]?["ipv4"] == ["203.0.113.1"], "\(late.encodedString)")
        #expect(late["result"]?["source"] == "upstream")
        let upstreams = try #require(try patient.call("status", [:], id: 3)?["result"]?["upstreams"]?.arrayValue)
        #expect(upstreams[0]["healthy"] == true, "\(upstreams)")
    }

    /// Over `MaxUpstreamQueriesPerUser=`, a resolve that needs the upstream is answered -32003
    /// at once, naming the limit; the same name again joins the running query.
    @Test func upstreamQueriesAreCappedPerUser() throws {
        let upstream = try Self.upstream()
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=60s\nMaxUpstreamQueriesPerUser=1\n")
        let client = try daemon.connectReady()
        // The first flight hangs for 60 s: its place is held until the test ends.
        try client.sendLine(Self.request(1, ["host": "slow1.example.com", "timeoutMs": 60_000]))
        try client.sendLine(Self.request(2, ["host": "slow2.example.com", "timeoutMs": 60_000]))
        let refused = try #require(client.readJSON())
        #expect(refused["id"] == 2)
        #expect(refused["error"]?["code"] == .int(-32003), "\(refused.encodedString)")
        #expect(refused["error"]?["data"]?["name"] == "LimitExceeded")
        #expect(refused["error"]?["data"]?["limit"] == 1)
        try client.sendLine(Self.request(3, ["host": "slow1.example.com", "timeoutMs": 100]))
        let joined = try #require(client.readJSON())
        #expect(joined["id"] == 3)
        #expect(joined["error"]?["code"] == .int(-32002), "\(joined.encodedString)")
    }

    /// Whatever `Timeout=` is, SIGTERM ends the daemon within the unit's `TimeoutStopSec=`,
    /// cutting what still hangs, so systemd never has to kill it. Real time is what is tested
    /// here: the bound is the unit's own `TimeoutStopSec=`, not a guess at this machine's speed.
    @Test func shutdownEndsWithinTheUnitsStopTimeoutWhateverTimeoutIs() throws {
        let unit = try String(
            contentsOfFile: BuiltProducts.packageRoot + "/packaging/httpdnsd.service", encoding: .utf8)
        let line = try #require(unit.split(separator: "\n").first { $0.hasPrefix("TimeoutStopSec=") })
        let stopSeconds = try #require(Double(line.dropFirst("TimeoutStopSec=".count).dropLast()), "\(line)")
        #expect(line.hasSuffix("s"))

        let upstream = try Self.upstream()
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=1h\n")
        let client = try daemon.connectReady()
        try client.sendLine(Self.request(1, ["host": "slow.example.com", "timeoutMs": 60_000]))
        #expect(eventually(10) { upstream.requestCount > 0 })
        #expect(upstream.requestCount == 1)
        let stopping = Date()
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(timeout: stopSeconds) == 0, "still running \(stopSeconds) s after SIGTERM")
        #expect(Date().timeIntervalSince(stopping) < stopSeconds)
        upstream.stop()
    }
}
