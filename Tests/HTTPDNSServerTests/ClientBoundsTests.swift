import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// What one process reads about another from /proc.
enum ProcessProbe {
    /// Resident memory in bytes (VmRSS).
    static func residentBytes(_ pid: pid_t) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return kilobytes * 1024
    }

    /// The peak resident memory so far, in bytes (VmHWM).
    static func peakResidentBytes(_ pid: pid_t) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return 0 }
        return kilobytes * 1024
    }

    /// Whether a daemon's resident memory says what it buffers: not under a sanitizer, whose
    /// quarantine of freed memory (256 MiB under AddressSanitizer) and shadow memory grow it too.
    static var residentMemoryIsMeaningful: Bool { SanitizerOptions.active == nil }

    /// CPU time used so far (user + system), in seconds.
    static func cpuSeconds(_ pid: pid_t) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// Bounded work and memory per client, against the real daemon over real sockets: clients that
/// never read, flood with notifications, hang up mid-request, sit idle or hold half a line.
@Suite(.serialized)
struct ClientBoundsTests {
    /// A full jar: `count` cookies of about 130 bytes each, 150 per site.
    static func fillJar(_ client: LineClient, count: Int) throws {
        var text = "# Netscape HTTP Cookie File\n"
        for i in 0..<count {
            text += "d\(i / 150).example\tFALSE\t/\tFALSE\t0\tcookie\(i)\t\(String(repeating: "v", count: 100))\n"
        }
        let reply = try #require(try client.call("importCookies", ["data": .string(text)], id: 1))
        #expect(reply["result"]?["imported"] == .int(count), "\(reply.encodedString)")
    }

    /// Requests whose answers are large (rpc.discover, about 26 KB, and a full jar's listCookies,
    /// about 870 KB), pipelined and never read, cannot make the daemon buffer them: it stops
    /// running a connection's requests once its unsent output passes a cap, checked per request.
    /// Another user is served meanwhile.
    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func largeAnswersThatAreNeverReadStayBounded() throws {
        let daemon = try DaemonHarness()
        let setup = try daemon.connectReady()
        try OtherUser.admit(daemon)
        try Self.fillJar(setup, count: 3_000)
        let pid = daemon.process.pid
        let before = ProcessProbe.residentBytes(pid)
        // Today: 8 x 1200 x 26 KB of rpc.discover and 8 x 20 x 870 KB of listCookies, queued for
        // clients that never read.
        let discover = #"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"# + "\n"
        let list = #"{"jsonrpc":"2.0","id":1,"method":"listCookies"}"# + "\n"
        var hostile: [LineClient] = []
        for i in 0..<16 {
            let client = try daemon.connect()
            try client.send(i % 2 == 0 ? String(repeating: discover, count: 1_200) : String(repeating: list, count: 20))
            hostile.append(client)
        }
        // Another user is answered while that goes on, and so is a sibling that reads.
        let status = try? OtherUser.call(daemon, "status")
        #expect(status?["result"]?["version"] != nil, "\(status?.encodedString ?? "no answer")")
        #expect(try daemon.connect().call("status")?["result"] != nil)
        // The peak is sampled over a second of the flood: the window is the measurement.
        var peak = 0
        for _ in 0..<10 {
            peak = max(peak, ProcessProbe.residentBytes(pid))
            usleep(100_000)
        }
        let grown = peak - before
        if ProcessProbe.residentMemoryIsMeaningful {
            #expect(grown < 48 << 20, "the daemon grew by \(grown >> 20) MiB")
        }
        withExtendedLifetime(hostile) {}
    }

    /// A peer that closed entirely while its resolve waits for a slow upstream costs no CPU
    /// (epoll reports EPOLLHUP whatever the interest; a watched descriptor would wake every turn).
    @Test func aClosedClientWithASlowResolveDoesNotSpinTheLoop() throws {
        let upstream = try FakeHTTPServer { _ in .hang }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=5s\n")
        var client: LineClient? = try daemon.connectReady()
        try client?.sendLine(#"{"jsonrpc":"2.0","id":1,"method":"resolve","params":{"host":"slow.example.com"}}"#)
        #expect(eventually(10) { upstream.requestCount > 0 })
        #expect(upstream.requestCount == 1)
        client = nil  // closes the socket: the peer is gone
        let pid = daemon.process.pid
        let start = ProcessProbe.cpuSeconds(pid)
        let started = Date()
        // The measurement window: CPU time over wall time while the resolve still waits.
        usleep(1_500_000)
        let used = ProcessProbe.cpuSeconds(pid) - start
        let wall = Date().timeIntervalSince(started)
        #expect(used < wall * 0.2, "\(used) s of CPU in \(wall) s")
        // The daemon still serves.
        #expect(try daemon.connect().call("status")?["result"] != nil)
        upstream.stop()
    }

    /// Notifications count against the in-flight cap until their method finishes: a flood of
    /// slow notifications leaves no room, so a request beyond the cap is refused at once.
    @Test func notificationsCountAgainstTheInFlightCaps() throws {
        let upstream = try FakeHTTPServer { _ in .hang }
        let daemon = try DaemonHarness(
            config:
                "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=5s\n[Server]\nMaxRequestsInFlight=3\nMaxRequestsInFlightPerUser=5\n"
        )
        let client = try daemon.connectReady()
        for i in 0..<3 {
            try client.sendLine(#"{"jsonrpc":"2.0","method":"resolve","params":{"host":"slow\#(i).example.com"}}"#)
        }
        try client.sendLine(#"{"jsonrpc":"2.0","id":9,"method":"status"}"#)
        let refused = try #require(client.readJSON())
        #expect(refused["id"] == .int(9))
        #expect(refused["error"]?["code"] == .int(-32003), "\(refused.encodedString)")
        #expect(refused["error"]?["data"]?["what"] == "requests in flight on one connection")

        // Across connections of one user: 3 here and 2 there fill the user's 5.
        let second = try daemon.connect()
        for i in 3..<5 {
            try second.sendLine(#"{"jsonrpc":"2.0","method":"resolve","params":{"host":"slow\#(i).example.com"}}"#)
        }
        try second.sendLine(#"{"jsonrpc":"2.0","id":10,"method":"status"}"#)
        let refusedAgain = try #require(second.readJSON())
        #expect(
            refusedAgain["error"]?["data"]?["what"] == "requests in flight of one user", "\(refusedAgain.encodedString)"
        )
        upstream.stop()
    }

    @Test func anIdleConnectionIsClosed() throws {
        let daemon = try DaemonHarness(config: "[Server]\nIdleTimeout=1s\n")
        let client = try daemon.connectReady()
        #expect(try client.call("status")?["result"] != nil)
        #expect(client.readLine(timeout: 10) == nil)
        #expect(client.reachedEOF, "the idle connection was closed")
    }

    @Test func anUnfinishedLineIsAnsweredAndClosed() throws {
        let daemon = try DaemonHarness(config: "[Server]\nLineTimeout=1s\n")
        let client = try daemon.connectReady()
        try client.send(#"{"jsonrpc":"2.0","id":1,"method":"st"#)
        let response = try #require(client.readJSON(timeout: 10))
        #expect(response["error"]?["code"] == .int(-32600), "\(response.encodedString)")
        #expect(response["id"] == .null)
        #expect(client.readLine(timeout: 10) == nil && client.reachedEOF)
    }

    /// Many connections holding ~1 MiB half-lines pin no more than the user's memory bound
    /// (64 MiB): past it the daemon reads none of that user's bytes (they wait in the kernel).
    /// Other users still connect, and once LineTimeout= has closed the holders (those that waited
    /// read theirs in turn), the socket-activated daemon exits idle.
    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func halfLinesAreBoundedAndDoNotPreventIdleExit() throws {
        let daemon = try DaemonHarness(config: "[Server]\nMaxLineLength=2M\nLineTimeout=3s\nIdleExit=1s\n")
        _ = try daemon.connectReady()
        try OtherUser.admit(daemon)
        let pid = daemon.process.pid
        let before = ProcessProbe.peakResidentBytes(pid)
        let half = Array(
            (#"{"jsonrpc":"2.0","id":1,"method":"status","params":{"pad":""# + String(repeating: "x", count: 1 << 20))
                .utf8)
        var clients: [(LineClient, Int)] = []
        for _ in 0..<100 { clients.append((try daemon.connect(), 0)) }
        // Non-blocking: the bytes the daemon does not read stay with the sender. A second is
        // enough to fill the user's share; the rest waits for LineTimeout= to free it.
        _ = eventually(1) {
            for index in clients.indices where clients[index].1 < half.count {
                let sent = half.withUnsafeBytes { raw in
                    Glibc.send(
                        clients[index].0.fd.rawValue, raw.baseAddress! + clients[index].1, raw.count - clients[index].1,
                        Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                }
                if sent > 0 { clients[index].1 += sent }
            }
            return clients.allSatisfy { $0.1 == half.count }
        }
        let status = try OtherUser.call(daemon, "status")
        #expect(status["result"] != nil, "\(status.encodedString)")
        let grown = ProcessProbe.peakResidentBytes(pid) - before
        if ProcessProbe.residentMemoryIsMeaningful {
            #expect(grown < 100 << 20, "the daemon's peak grew by \(grown >> 20) MiB for 100 MiB of half lines")
        }
        // LineTimeout= closes the holders, then nothing holds the daemon up.
        #expect(daemon.waitForExit(timeout: 60) == 0, "log: \(daemon.log)")
        let timedOut = clients.compactMap { $0.0.readJSON(timeout: 0.2) }.filter { $0["error"]?["code"] == -32600 }
        #expect(timedOut.count >= 50, "\(timedOut.count) of 100 answered 'line not completed'")
        withExtendedLifetime(clients) {}
    }
}
