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
            return names.filter { $0 == "upstream" }.count == 24
        }
        // 16 for everyone, 8 in reserve for users with no query running.
        #expect(names.filter { $0 == "upstream" }.count == 24, "\(names)")
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
            #expect(text.contains("\nRestartPreventExitStatus=75 78\n"), "\(unit)")
        }
    }

    /// A configuration the daemon cannot use stops it with EX_CONFIG (78) and one line per
    /// problem, each naming file and line, before anything is bound or opened.
    @Test func badConfigurationIsAClearStartupError() throws {
        let dir = TemporaryDirectory()
        let config = dir.file("bad.conf")
        try "[Resolver]\nUpstream=system\n\nTimeout=2 parsecs\nUpstrem=system\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let result = try runCommand(
            httpdnsd, ["--config", config, "--socket", dir.file("s.sock"), "--state-dir", dir.file("state")])
        #expect(result.status == 78)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2, "\(result.stderr)")
        #expect(lines.first?.contains("\(config):4: Timeout=") == true, "\(result.stderr)")
        #expect(
            lines.last?.contains("\(config):5: unknown key Upstrem= in [Resolver] (did you mean Upstream=?)") == true)
        #expect(!Files.exists(dir.file("s.sock")) && !Files.exists(dir.file("state")))

        let missing = try runCommand(httpdnsd, ["--config", dir.file("absent.conf"), "--socket", dir.file("s.sock")])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("absent.conf"))
    }

    /// `Upstrem=` or `Upstream system` would have started the daemon on the system resolver:
    /// they are refused like any other problem, so systemd's restart loop never starts it either.
    @Test func unknownKeysSectionsAndLinesWithoutEqualsAreRefused() throws {
        let dir = TemporaryDirectory()
        for (text, line) in [
            ("[Resolver]\nUpstream system\n", "2: missing '='"), ("[Resolver]\nFrobnicate=yes\n", "2: unknown key"),
            ("[Mystery]\nA=b\n", "1: unknown section [Mystery]"),
        ] {
            try text.write(toFile: dir.file("c.conf"), atomically: true, encoding: .utf8)
            let result = try runCommand(
                httpdnsd,
                ["--config", dir.file("c.conf"), "--socket", dir.file("s.sock"), "--state-dir", dir.file("st")])
            #expect(result.status == 78, "\(text)")
            #expect(result.stderr.contains("c.conf:\(line)"), "\(result.stderr)")
        }
    }

    /// `--check-config` reads and validates as a start would, starting nothing: 0 and "OK", or 78
    /// and every problem; without a file it checks `--config`'s, else the default path (absent
    /// here: the embedded default is fine).
    @Test func checkConfigValidatesWithoutStarting() throws {
        let dir = TemporaryDirectory()
        let good = dir.file("good.conf")
        try "[Resolver]\nUpstream=system\nTimeout=3s\n[Server]\nLogLevel=debug\n".write(
            toFile: good, atomically: true, encoding: .utf8)
        let ok = try runCommand(httpdnsd, ["--check-config", good])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stderr.contains("\(good): configuration OK"))
        let viaConfig = try runCommand(httpdnsd, ["--config", good, "--check-config"])
        #expect(viaConfig.status == 0 && viaConfig.stderr.contains(good), "\(viaConfig.stderr)")

        let bad = dir.file("bad.conf")
        try "[Resolver]\nUpstrem=system\nTimeout=soon\nSecretKeyFile=\(dir.file("no-key"))\n".write(
            toFile: bad, atomically: true, encoding: .utf8)
        let refused = try runCommand(httpdnsd, ["--check-config=\(bad)"])
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("\(bad):2: unknown key Upstrem="), "\(refused.stderr)")
        #expect(refused.stderr.contains("\(bad):3: Timeout="), "\(refused.stderr)")
        #expect(refused.stderr.contains("configuration refused"))
        // A file that parses but names an unreadable key file is refused as a start would be.
        try "[Resolver]\nSecretKeyFile=\(dir.file("no-key"))\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let keyless = try runCommand(httpdnsd, ["--check-config", bad])
        #expect(keyless.status == 78 && keyless.stderr.contains("SecretKeyFile="), "\(keyless.stderr)")
    }

    /// Plain stderr (a terminal, a file) gets a timestamp and a level word; the journal's stream
    /// gets `<N>` prefixes instead. `--log-level` wins over `LogLevel=`.
    @Test func logLinesFitWhereTheyGo() throws {
        let daemon = try DaemonHarness(config: "[Server]\nLogLevel=debug\n")
        let client = try daemon.connectReady()
        #expect(try client.call("status")?["result"] != nil)
        daemon.stop()
        let lines = daemon.log.split(separator: "\n")
        let serving = try #require(lines.first { $0.contains("serving on") }, "\(daemon.log)")
        // 2026-12-01T22:52:13.123Z notice: httpdnsd 0.1.0 serving on ...
        #expect(
            serving.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z notice: httpdnsd .* serving on .*/) != nil,
            "\(serving)")
        #expect(lines.contains { $0.contains(" debug: ") }, "LogLevel=debug logs debug lines: \(daemon.log)")
        #expect(!daemon.log.contains("<5>"))

        let quiet = try DaemonHarness(config: "[Server]\nLogLevel=debug\n", extraArguments: ["--log-level", "warning"])
        #expect(try quiet.connectReady().call("status")?["result"] != nil)
        quiet.stop()
        #expect(!quiet.log.contains(" debug: ") && !quiet.log.contains(" notice: "), "\(quiet.log)")

        // JOURNAL_STREAM naming stderr (device:inode of the log file the harness gives it).
        let probe = TemporaryDirectory()
        let logFile = probe.file("journal.log")
        try "".write(toFile: logFile, atomically: false, encoding: .utf8)
        var status = stat()
        #expect(stat(logFile, &status) == 0)
        let (device, inode) = (status.st_dev, status.st_ino)
        let journal = try ChildProcess(
            httpdnsd, ["--config", "/dev/null", "--socket", probe.file("j.sock"), "--state-dir", probe.file("state")],
            environment: ["SWIFT_BACKTRACE": "enable=no", "JOURNAL_STREAM": "\(device):\(inode)"],
            stdout: logFile, stderr: logFile)
        #expect(eventually(10) { Files.exists(probe.file("j.sock")) })
        journal.signal(SIGTERM)
        #expect(journal.wait(timeout: 10) == 0)
        let journalLog = try String(contentsOfFile: logFile, encoding: .utf8)
        #expect(journalLog.contains("<5>httpdnsd"), "\(journalLog)")
        #expect(!journalLog.contains("Z notice:"))
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

    /// WATCHDOG_USEC reaches the watchdog: the daemon pets it, again and again (the pace is
    /// `DaemonTimersTests`', on the manual clock).
    @Test func watchdogIsPettedWhenSystemdAsks() throws {
        let daemon = try DaemonHarness(environment: ["WATCHDOG_USEC": "400000"])
        _ = try daemon.connectReady()
        let pets = { daemon.notify.received.filter { $0.split(separator: "\n").contains("WATCHDOG=1") }.count }
        #expect(eventually(30) { pets() >= 3 }, "\(pets()) pets")
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
