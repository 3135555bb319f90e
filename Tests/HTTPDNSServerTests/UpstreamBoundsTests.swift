import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Upstream work is bounded: a caller's own `timeoutMs` bounds only its own wait, flights are
/// capped per uid and in total, one uid's hanging names leave workers to the others, and
/// shutdown never outlasts the unit's stop timeout.
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

    static func slowRequests(_ upstream: FakeHTTPServer) -> Int {
        upstream.requests.filter { $0.target.contains("slow") }.count
    }

    /// One user's `timeoutMs: 10` abandons the query, which says nothing about the upstream:
    /// it stays healthy and everyone keeps using it rather than failing over.
    @Test func aCallersShortTimeoutNeverCountsAgainstTheUpstream() throws {
        let first = try Self.upstream(address: "203.0.113.1", delayMs: 300)
        let second = try Self.upstream(address: "198.51.100.1")
        let daemon = try DaemonHarness(
            config:
                "[Resolver]\nUpstream=alibaba \(first.baseURL)/1\nUpstream=alibaba \(second.baseURL)/1\nTimeout=2s\n")
        let client = try daemon.connectReady()
        let hurried = try #require(try client.call("resolve", ["host": "a.example.com", "timeoutMs": 10]))
        #expect(hurried["error"]?["code"] == .int(-32002), "\(hurried.encodedString)")
        #expect(hurried["error"]?["data"]?["reason"] == "timed out after 10 ms")
        // Whenever the abandoned query ends, it leaves the first upstream healthy. Nothing reports
        // that end, so the status is watched over a window that covers it: the query is cut at the
        // caller's 10 ms, and even uncut the fake answers after 300 ms. The pause paces the watch.
        let watchUntil = Date().addingTimeInterval(0.6)
        var id = 2
        while Date() < watchUntil {
            let upstreams = try #require(try client.call("status", [:], id: id)?["result"]?["upstreams"]?.arrayValue)
            #expect(upstreams[0]["healthy"] == true, "\(upstreams)")
            #expect(upstreams[0]["lastError"] == .null)
            id += 1
            usleep(50_000)
        }
        let next = try #require(try client.call("resolve", ["host": "b.example.com"], id: 1_000))
        #expect(next["result"]?["ipv4"] == ["203.0.113.1"], "\(next.encodedString)")
        #expect(second.requestCount == 0)
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

    /// Over `MaxUpstreamQueriesPerUser=` or `MaxUpstreamQueries=`, a resolve that needs the
    /// upstream is answered -32003 at once; cache hits and other users are not affected.
    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func upstreamQueriesAreCappedPerUserAndInTotal() throws {
        let upstream = try Self.upstream()
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=60s\n"
                + "MaxUpstreamQueriesPerUser=2\nMaxUpstreamQueries=3\n")
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        // The flights hang for 60 s, far longer than the test takes on a loaded machine: the
        // places they hold are never given back before the last refusal below.
        for index in 1...3 {
            try client.sendLine(
                Self.request(index, ["host": .string("slow\(index).example.com"), "timeoutMs": 60_000]))
        }
        let refused = try #require(client.readJSON())
        #expect(refused["id"] == 3)
        #expect(refused["error"]?["code"] == .int(-32003), "\(refused.encodedString)")
        #expect(refused["error"]?["data"]?["name"] == "LimitExceeded")
        #expect(refused["error"]?["data"]?["limit"] == 2)
        // Coalescing costs nothing: the same name again joins the running query.
        try client.sendLine(Self.request(4, ["host": "slow1.example.com", "timeoutMs": 200]))
        #expect(try #require(client.readJSON())["error"]?["code"] == .int(-32002))

        // The other user's first name takes the last place in total, and holds it (its caller
        // waits 60 s) until its second name has been refused, however slow the machine is.
        let holder = try OtherUser.start(
            daemon, [("resolve", ["host": "slow4.example.com", "timeoutMs": 60_000])], in: daemon.directory)
        defer { holder.signal(SIGKILL) }
        #expect(eventually(30) { Self.slowRequests(upstream) == 3 })
        let refusedToo = try OtherUser.call(daemon, "resolve", ["host": "slow5.example.com", "timeoutMs": 500])
        #expect(refusedToo["error"]?["code"] == .int(-32003), "\(refusedToo.encodedString)")
        #expect(refusedToo["error"]?["data"]?["limit"] == 3)
        #expect(Self.slowRequests(upstream) == 3)
    }

    /// uid 65534 floods the daemon with names whose upstream never answers; root's cache miss,
    /// queued after all of them, is answered at once from a worker the flood could not take.
    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func oneUsersHangingNamesDoNotStallAnotherUsersMisses() throws {
        let upstream = try Self.upstream()
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=6s\n")
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        let flood = try OtherUser.start(
            daemon, (0..<40).map { ("resolve", ["host": .string("slow\($0).example.com"), "timeoutMs": 6_000]) },
            in: daemon.directory)
        #expect(eventually(10) { Self.slowRequests(upstream) >= 4 })
        try client.sendLine(Self.request(1, ["host": "fast.example.com"]))
        let answer = try #require(client.readJSON(timeout: 4), "root's resolve waited behind another user's flood")
        #expect(answer["result"]?["ipv4"] == ["203.0.113.1"], "\(answer.encodedString)")
        // The flood holds its share of the workers, no more.
        #expect(Self.slowRequests(upstream) == 4)
        flood.signal(SIGKILL)
    }

    /// Whatever `Timeout=` is, SIGTERM ends the daemon within the unit's `TimeoutStopSec=`,
    /// cutting what still hangs, so systemd never has to kill it.
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
