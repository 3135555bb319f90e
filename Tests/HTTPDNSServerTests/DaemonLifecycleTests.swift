import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// Flags, configuration errors, binding its own socket, signals, watchdog and idle exit.
@Suite(.serialized)
struct DaemonLifecycleTests {
    let httpdnsd = BuiltProducts.path("httpdnsd")

    @Test func versionAndHelp() throws {
        let version = try runCommand(httpdnsd, ["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("httpdnsd "))
        let help = try runCommand(httpdnsd, ["--help"])
        #expect(help.status == 0)
        for flag in ["--config", "--socket", "--state-dir", "--version"] { #expect(help.stdout.contains(flag)) }
        let bad = try runCommand(httpdnsd, ["--frobnicate"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--frobnicate"))
        #expect(!bad.stderr.contains("Fatal error"))
    }

    /// `top -H` and perf tell the daemon's threads apart: the store thread and the upstream workers
    /// carry names (systemd-socket-activate execs the daemon in its own process).
    /// The upstream workers start with the first upstream query, not before the first answer.
    @Test func theDaemonsThreadsAreNamed() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["a.example": (["203.0.113.1"], [], 60)])
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let client = try daemon.connectReady()
        #expect(try client.call("status")?["result"] != nil)
        func threadNames() throws -> [String] {
            let tasks = "/proc/\(daemon.process.pid)/task"
            return try FileManager.default.contentsOfDirectory(atPath: tasks).map { task in
                String(decoding: try Files.read("\(tasks)/\(task)/comm"), as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
        }
        let beforeAnyQuery = try threadNames()
        #expect(beforeAnyQuery.filter { $0 == "store" }.count == 1, "\(beforeAnyQuery)")
        #expect(!beforeAnyQuery.contains("upstream"), "\(beforeAnyQuery)")
        #expect(beforeAnyQuery.contains("httpdnsd"), "the loop keeps the program's name: \(beforeAnyQuery)")

        let answer = try client.call("resolve", ["host": "a.example", "family": "ipv4"])
        #expect(answer?["result"]?["ipv4"] == ["203.0.113.1"], "\(String(describing: answer))")
        var names: [String] = []
        // Each worker names itself as it starts.
        _ = try eventually(5) {
            names = try threadNames()
            return names.filter { $0 == "upstream" }.count == 16
        }
        #expect(names.filter { $0 == "upstream" }.count == 16, "\(names)")
        #expect(names.filter { $0 == "store" }.count == 1, "\(names)")
    }

    /// One daemon per state directory: a second one on the same directory (with a socket of
    /// its own) refuses to start with exit status 75, saying why, and the first goes on
    /// serving; the units tell systemd not to restart on that status.
    @Test func aSecondDaemonOnTheSameStateDirectoryRefusesToStart() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        let second = try runCommand(
            httpdnsd, ["--socket", daemon.directory.file("second.sock"), "--state-dir", daemon.stateDirectory],
            timeout: 20)
        #expect(second.status == 75, "\(second.stderr)")
        #expect(second.stderr.contains("another httpdnsd is running on the state directory \(daemon.stateDirectory)"))
        #expect(!Files.exists(daemon.directory.file("second.sock")), "it refused before binding")
        #expect(try client.call("status")?["result"] != nil, "the first one serves on")
        for unit in ["packaging/httpdnsd.service", "packaging/user/httpdnsd.service"] {
            let text = try String(contentsOfFile: BuiltProducts.packageRoot + "/" + unit, encoding: .utf8)
            #expect(text.contains("\nRestartPreventExitStatus=75\n"), "\(unit)")
        }
    }

    @Test func badConfigurationIsAClearStartupError() throws {
        let dir = TemporaryDirectory()
        let config = dir.file("bad.conf")
        try "[Resolver]\nUpstream=system\n\nTimeout=2 parsecs\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let result = try runCommand(
            httpdnsd, ["--config", config, "--socket", dir.file("s.sock"), "--state-dir", dir.file("state")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(config):4"), "\(result.stderr)")
        #expect(result.stderr.contains("Timeout"))
        #expect(result.stderr.split(separator: "\n").count == 1)

        let missing = try runCommand(httpdnsd, ["--config", dir.file("absent.conf"), "--socket", dir.file("s.sock")])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("absent.conf"))
    }

    @Test func unknownKeysOnlyWarn() throws {
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=system\nFrobnicate=yes\n[Mystery]\nA=b\n")
        let client = try daemon.connectReady()
        #expect(try client.call("status")?["result"] != nil)
        daemon.stop()
        #expect(daemon.log.contains("Frobnicate"), "\(daemon.log)")
        #expect(daemon.log.contains(":3"))
    }

    /// Without systemd the daemon binds --socket itself, replaces a stale socket file, and refuses
    /// to steal one somebody is listening on.
    @Test func bindsItsOwnSocketWithoutStealingALiveOne() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("own.sock")
        // A stale socket file: bound, then its listener closed.
        let stale = try UnixSocket.listen(path: path)
        stale.close()
        #expect(Files.isSocket(path))
        let daemon = try ChildProcess(
            httpdnsd, ["--config", "/dev/null", "--socket", path, "--state-dir", dir.file("state")],
            environment: ["SWIFT_BACKTRACE": "enable=no"], stdout: dir.file("log"), stderr: dir.file("log"))
        var client: LineClient?
        _ = eventually(10) {
            client = try? LineClient(path: path)
            return client != nil
        }
        let connected = try #require(client)
        #expect(try connected.call("status")?["result"] != nil)

        let second = try runCommand(
            httpdnsd, ["--config", "/dev/null", "--socket", path, "--state-dir", dir.file("s2")])
        #expect(second.status == 1)
        #expect(second.stderr.contains("in use"), "\(second.stderr)")
        #expect(try connected.call("status", id: 2)?["result"] != nil)

        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 10) == 0)
        #expect(!Files.exists(path))
    }

    @Test func aClientVanishingMidReplyDoesNotKillTheDaemon() throws {
        let daemon = try DaemonHarness()
        _ = try daemon.connectReady()
        for _ in 0..<20 {
            let client = try daemon.connect()
            let requests = String(repeating: #"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"# + "\n", count: 200)
            try? client.send(requests)
            // Closed without reading a byte: the daemon's sends hit EPIPE/ECONNRESET.
        }
        let client = try daemon.connect()
        #expect(try client.call("status")?["result"] != nil)
        #expect(daemon.process.isRunning)
    }

    @Test func inFlightRequestsAreAnsweredAfterSIGTERM() throws {
        let upstream = try FakeHTTPServer { _ in
            .delay(ms: 500, then: .json(#"{"host":"a.example.com","ips":["203.0.113.10"],"ttl":60}"#))
        }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\n")
        let client = try daemon.connectReady()
        try client.sendLine(#"{"jsonrpc":"2.0","id":7,"method":"resolve","params":{"host":"a.example.com"}}"#)
        // In flight: the upstream has the query (and answers after 500 ms).
        #expect(eventually(10) { upstream.requestCount > 0 })
        daemon.signal(SIGTERM)
        let response = try #require(client.readJSON(timeout: 5))
        #expect(response["id"] == .int(7))
        #expect(response["result"]?["ipv4"] == ["203.0.113.10"])
        #expect(daemon.waitForExit() == 0)
        #expect(daemon.notify.waitFor("STOPPING=1", timeout: 1))
    }

    @Test func watchdogIsPettedAtHalfTheInterval() throws {
        let daemon = try DaemonHarness(environment: ["WATCHDOG_USEC": "400000"])
        _ = try daemon.connectReady()
        // The pets' pace is the behaviour under test, so the test counts them over a window.
        usleep(1_100_000)
        let pets = daemon.notify.received.filter { $0.split(separator: "\n").contains("WATCHDOG=1") }.count
        // 200 ms apart over ~1.1 s: about 5 (at least 3, allowing a slow machine).
        #expect(pets >= 3 && pets <= 8, "\(pets) pets")
    }

    @Test func idleExitStopsCleanlyWhenSocketActivated() throws {
        let daemon = try DaemonHarness(config: "[Server]\nIdleExit=1s\n")
        let client = try daemon.connectReady()
        #expect(try client.call("status")?["result"] != nil)
        // Busy while a connection is open: that nothing happens for longer than IdleExit= is the
        // behaviour under test, so the test lets that time pass.
        usleep(1_500_000)
        #expect(daemon.process.isRunning)
        client.shutdownWrite()
        _ = client.readLine(timeout: 2)
        #expect(daemon.waitForExit(timeout: 5) == 0)
        #expect(daemon.notify.waitFor("STOPPING=1", timeout: 1))
    }
}
