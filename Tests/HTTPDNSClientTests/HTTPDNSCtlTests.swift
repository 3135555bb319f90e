import Foundation
import HTTPDNSClient
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

@testable import httpdnsctl

/// Runs the built httpdnsctl, which SwiftPM puts next to the test bundle.
struct CommandRun {
    var status: Int32
    var standardOutput: String
    var standardError: String

    init(_ arguments: [String], environment: [String: String] = [:]) throws {
        // A clean environment, so the developer's HTTPDNSD_SOCKET cannot leak in.
        let result = try runCommand(BuiltProducts.path("httpdnsctl"), arguments, environment: environment)
        status = result.status
        standardOutput = result.stdout
        standardError = result.stderr
    }
}

struct HTTPDNSCtlProcessTests {
    @Test(arguments: [
        [], ["frobnicate"], ["resolve"], ["resolve", "a.example", "--bogus"], ["resolve", "a", "--family", "ipv5"],
        ["resolve", "a", "--timeout", "0"], ["cookie"], ["cookie", "eat"], ["cookie", "set", "https://a.example/"],
        ["cookie", "delete", "--all", "--domain", "example.com"], ["call", "status", "{"], ["call", "status", "[1]"],
        ["--socket"],
    ])
    func usageErrorsExit64WithOneLineOnStderr(arguments: [String]) throws {
        let run = try CommandRun(arguments)
        #expect(run.status == 64)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError.hasPrefix("httpdnsctl: "))
        #expect(run.standardError.hasSuffix("Try 'httpdnsctl --help'.\n"))
    }

    /// A mistyped long option gets the name it most likely meant: a subcommand's own, a global
    /// one typed after the subcommand, `--json`'s styles, and in `curl` httpdnsctl's own options
    /// and curl's; nothing is sent to the daemon and curl is not run.
    @Test(arguments: [
        (["status", "--jsno"], "unknown option --jsno (did you mean --json?)"),
        (["resolve", "a.example", "--sokcet", "x"], "unknown option --sokcet (did you mean --socket?)"),
        (["resolve", "a.example", "--no-stael"], "unknown option --no-stael (did you mean --no-stale?)"),
        (["--json=prety", "status"], "--json takes short, pretty or off, not prety (did you mean pretty?)"),
        (["curl", "--fallbak", "http://a.example/"], "curl: unknown option --fallbak (did you mean --fallback?)"),
        (["curl", "--lcoation", "http://a.example/"], "curl: unknown option --lcoation (did you mean --location?)"),
        (["curl", "--no-bufer", "http://a.example/"], "curl: unknown option --no-bufer (did you mean --no-buffer?)"),
        (["curl", "--jsno", "{}", "http://a.example/"], "curl: unknown option --jsno (did you mean --json?)"),
    ])
    func mistypedOptionsGetADidYouMean(arguments: [String], message: String) throws {
        let server = try FakeRPCServer { _, _ in .error(.internalError("must not be called")) }
        defer { server.stop() }
        let run = try CommandRun(["--socket", server.socketPath] + arguments)
        #expect(run.status == 64, "\(run.standardError)")
        #expect(run.standardError == "httpdnsctl: \(message)\nTry 'httpdnsctl --help'.\n")
        #expect(server.receivedRequests.isEmpty)
    }

    /// An empty name is a usage error named after the parameter, before anything is sent (it
    /// was the daemon's `httpdnsctl: : Invalid params`, exit 1).
    @Test(arguments: [
        (["resolve", ""], "host"), (["resolve", "a.example", ""], "host"), (["reverse", ""], "address"),
        (["flush", ""], "host"), (["cookie", "get", ""], "url"),
        (["cookie", "get", "http://a/", "--host", ""], "host"),
        (["cookie", "get", "http://a/", "--site", ""], "siteForCookies"), (["cookie", "set", "", "a=1"], "url"),
        (["cookie", "delete", "--domain", ""], "domain"), (["cookie", "delete", "--url", ""], "url"),
        (["cookie", "delete", "--all", "--name", ""], "name"), (["cookie", "list", "--domain="], "domain"),
        (["cookie", "import", ""], "file"), (["cookie", "export", ""], "file"), (["curl", ""], "curl: url"),
        (["curl", "--host", "", "http://192.0.2.1/"], "curl: --host"),
    ])
    func anEmptyNameIsAUsageError(arguments: [String], field: String) throws {
        let server = try FakeRPCServer { _, _ in .error(.invalidParams(field: field, "empty")) }
        defer { server.stop() }
        let run = try CommandRun(["--socket", server.socketPath] + arguments)
        #expect(run.status == 64)
        #expect(run.standardError == "httpdnsctl: \(field): must not be empty\nTry 'httpdnsctl --help'.\n")
        #expect(server.receivedRequests.isEmpty)
    }

    @Test func helpGoesToStdoutAndListsTheExitCodes() throws {
        for flag in ["--help", "-h"] {
            let run = try CommandRun([flag])
            #expect(run.status == 0)
            for word in [
                "resolve NAME...", "cookie get URL", "cookie set URL", "cookie delete", "cookie list", "cookie import",
                "cookie export", "status", "flush", "call METHOD", "--socket PATH", "--json", "64", "68", "69", "70",
            ] {
                #expect(run.standardOutput.contains(word), "help lacks \(word)")
            }
        }
    }

    @Test func versionPrintsTheVersion() throws {
        let run = try CommandRun(["--version"])
        #expect(run.status == 0)
        #expect(run.standardOutput == "httpdnsctl 0.1.0\n")
    }

    @Test func absentDaemonExits69() throws {
        let path = FakeRPCServer.absentSocketPath()
        let run = try CommandRun(["--socket", path, "status"])
        #expect(run.status == 69)
        #expect(
            run.standardError == "httpdnsctl: cannot connect to \(path): No such file or directory (from --socket)\n"
                + "httpdnsctl: no daemon listens there; start one with 'httpdnsd --socket \(path)'\n")
    }

    @Test func socketComesFromTheEnvironmentWithoutAFlag() throws {
        let path = FakeRPCServer.absentSocketPath()
        let run = try CommandRun(["status"], environment: ["HTTPDNSD_SOCKET": path])
        #expect(run.standardError.contains(path))
    }

    @Test func daemonErrorExits1WithMessageAndName() throws {
        let server = try FakeRPCServer { request, _ in
            .error(.hostNotFound(request.params["host"]?.stringValue ?? "", reason: .noSuchName))
        }
        defer { server.stop() }
        let run = try CommandRun(["resolve", "nx.example", "--socket", server.socketPath])
        #expect(run.status == 1)
        #expect(run.standardOutput.isEmpty)
        #expect(run.standardError == "httpdnsctl: nx.example: Host not found: nx.example (HostNotFound)\n")
    }

    @Test func malformedReplyExits70() throws {
        let server = try FakeRPCServer { _, _ in .rawLine("<html>") }
        defer { server.stop() }
        let run = try CommandRun(["--socket", server.socketPath, "status"])
        #expect(run.status == 70)
        #expect(run.standardError.hasPrefix("httpdnsctl: malformed reply"))
    }

    @Test func resolveHumanAndJSONOutput() throws {
        let answer = ResolveResult(
            host: "api.example.com", ipv4: ["203.0.113.10", "203.0.113.11"], ipv6: ["2001:db8::1"], ttl: 57,
            stale: false, source: .upstream, upstream: "alibaba")
        let server = try FakeRPCServer { _, _ in .result(answer.json) }
        defer { server.stop() }
        let human = try CommandRun(["--socket", server.socketPath, "resolve", "api.example.com"])
        #expect(human.status == 0)
        #expect(
            human.standardOutput
                == "api.example.com: 203.0.113.10\n                 203.0.113.11\n                 2001:db8::1\n"
                + "-- ttl 57s, from upstream alibaba\n")
        let json = try CommandRun([
            "resolve", "api.example.com", "--family=ipv4", "--json", "--socket", server.socketPath,
        ])
        #expect(json.status == 0)
        #expect(json.standardOutput == JSON.array([answer.json]).encodedString + "\n")
        let sent = server.receivedRequests.map(\.params)
        #expect(sent[1]["family"] == "ipv4")
        #expect(sent[1]["allowStale"] == true)
    }

    @Test func cookieSetReportsStoredAndRejected() throws {
        let server = try FakeRPCServer { _, _ in
            .result(
                SetCookieResult(host: "a.example.com", stored: 1, rejected: [.init(index: 1, reason: "public-suffix")])
                    .json)
        }
        defer { server.stop() }
        let run = try CommandRun([
            "--socket", server.socketPath, "cookie", "set", "https://203.0.113.10/", "sid=abc; Secure",
            "x=1; Domain=com",
            "--host", "a.example.com",
        ])
        #expect(run.status == 0)
        #expect(run.standardOutput == "stored 1 under a.example.com\nrejected #1: public-suffix\n")
        let params = try #require(server.receivedRequests.first).params
        #expect(params["setCookie"] == ["sid=abc; Secure", "x=1; Domain=com"])
        #expect(params["host"] == "a.example.com")
    }

    @Test func cookieGetPrintsTheHeaderValue() throws {
        let server = try FakeRPCServer { _, _ in .result(["header": "sid=abc; lang=en", "count": 2]) }
        defer { server.stop() }
        let run = try CommandRun([
            "--socket", server.socketPath, "cookie", "get", "https://a.example.com/", "--for-script",
        ])
        #expect(run.standardOutput == "sid=abc; lang=en\n")
        #expect(server.receivedRequests.first?.params["forScript"] == true)
    }

    @Test func callPrintsTheRawResult() throws {
        let server = try FakeRPCServer { request, _ in .result(.object(request.params)) }
        defer { server.stop() }
        let run = try CommandRun(["--socket", server.socketPath, "call", "flushCache", #"{"host": "a.example"}"#])
        #expect(run.status == 0)
        #expect(run.standardOutput == #"{"host":"a.example"}"# + "\n")
        #expect(server.receivedRequests.first?.method == "flushCache")
    }
}

/// The CLI's parsing and formatting, in process.
struct HTTPDNSCtlUnitTests {
    @Test func globalsAreTakenFromAnywhereBeforeDoubleDash() throws {
        let (globals, rest) = try CLI.extractGlobals(["resolve", "--json", "a.example", "--socket=/s", "--", "--json"])
        #expect(globals == CLI.GlobalOptions(socketPath: "/s", json: .short))
        let (pretty, _) = try CLI.extractGlobals(["--json=pretty", "status"])
        #expect(pretty.json == .pretty)
        #expect(try CLI.extractGlobals(["--json", "--json=off", "status"]).0.json == nil)
        #expect(rest == ["resolve", "a.example", "--", "--json"])
    }

    @Test func deleteNeedsExactlyOneTarget() throws {
        #expect(throws: UsageError.self) { try CookieDeleteCommand([]) }
        #expect(throws: UsageError.self) { try CookieDeleteCommand(["--url", "https://a/", "--all"]) }
        #expect(throws: UsageError.self) { try CookieDeleteCommand(["--domain", "a", "--host", "b"]) }
        let byURL = try CookieDeleteCommand(["--url", "https://1.2.3.4/", "--host", "a.example", "--name", "sid"])
        #expect(byURL.request == DeleteCookiesParams(target: .url("https://1.2.3.4/", host: "a.example"), name: "sid"))
    }

    @Test func resolveOptionsBecomeParams() throws {
        let command = try ResolveCommand(["a.example", "--family", "ipv6", "--no-stale", "--timeout", "1500"])
        #expect(
            command.requests == [ResolveParams(host: "a.example", family: .ipv6, allowStale: false, timeoutMs: 1500)]
        )
        #expect(try ResolveCommand(["-4", "a.example", "b.example"]).requests.map(\.family) == [.ipv4, .ipv4])
        #expect(try ResolveCommand(["-6", "a.example"]).requests.map(\.host) == ["a.example"])
    }

    @Test func exportDashMeansStandardOutput() throws {
        #expect(try CookieExportCommand(["-"]).file == nil)
        #expect(try CookieExportCommand(["jar.txt"]).file == "jar.txt")
    }

    @Test func cookieTableShowsEveryCookieAndSessionExpiry() {
        let cookies = [
            Cookie(
                name: "sid", value: "abc", domain: "a.example.com", hostOnly: true, path: "/", expires: 1_767_225_600,
                secure: true, httpOnly: true, sameSite: .lax, partitioned: false, created: 1_764_400_000),
            Cookie(
                name: "lang", value: "en", domain: "example.com", hostOnly: false, path: "/docs", expires: nil,
                secure: false, httpOnly: false, sameSite: .default, partitioned: false, created: 1_764_400_100),
        ]
        let lines = HumanFormat.cookieTable(cookies).split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("DOMAIN"))
        #expect(lines[1].contains("2026-01-01 00:00:00 UTC"))
        #expect(lines[1].hasSuffix("host-only,secure,httponly,samesite=lax"))
        #expect(lines[2].contains("session"))
        #expect(lines[3] == "2 cookies")
        #expect(HumanFormat.cookieTable([]) == "no cookies\n")
    }

    @Test func theFleetLineSaysStateLagOutboxAndRejections() {
        #expect(
            HumanFormat.fleet(
                StatusResult.Fleet(
                    connected: true, state: "connected", lastError: "old", lastStateChange: 1, lag: 0.004, outbox: 0,
                    rejected: 2)) == "fleet: connected, lag 0.004 s, outbox 0, 2 rejected\n")
        #expect(
            HumanFormat.fleet(
                StatusResult.Fleet(
                    connected: false, state: "unreachable", lastError: "unix:/r.sock: Connection refused",
                    lastStateChange: 1, lag: nil, outbox: 3, rejected: 0))
                == "fleet: unreachable (unix:/r.sock: Connection refused), outbox 3, 0 rejected\n")
    }

    @Test func durationsReadLikeUptime() {
        #expect(HumanFormat.duration(0) == "0s")
        #expect(HumanFormat.duration(3_725) == "1h 2m 5s")
        #expect(HumanFormat.duration(90_061) == "1d 1h 1m 1s")
    }
}

/// What httpdnsctl says when no daemon answers, for the sockets a test cannot take over (the system one).
struct UnreachableDaemonTests {
    func unreachable(
        _ path: String, _ origin: DaemonSocketPath.Origin, _ errno: Errno = .noSuchFileOrDirectory,
        runtime: String? = "/run/user/1000"
    ) -> UnreachableDaemon {
        UnreachableDaemon(path: path, errno: errno, origin: origin, runtimeDirectory: runtime)
    }

    @Test func theSystemSocketSaysHowToStartTheSystemDaemon() {
        let system = unreachable(DaemonSocketPath.system, .system)
        #expect(
            system.message()
                == "httpdnsctl: cannot connect to /run/httpdnsd/httpdnsd.sock: No such file or directory (the system socket)\n"
                + "httpdnsctl: no daemon listens there; start it with 'systemctl start httpdnsd.socket'"
                + " (your own: 'systemctl --user start httpdnsd.socket'; without systemd: 'httpdnsd &' as root)\n")
        // Named by the environment or --socket, the system socket is still the system daemon's.
        #expect(unreachable(DaemonSocketPath.system, .environment, .connectionRefused).instance == .system)
        #expect(unreachable(DaemonSocketPath.system, .explicit).hint == system.hint)
    }

    @Test func thePerUserSocketIsRecognizedWhereverItsPathCameFrom() {
        let path = "/run/user/1000/httpdnsd/httpdnsd.sock"
        for origin: DaemonSocketPath.Origin in [.perUser, .explicit, .environment] {
            #expect(unreachable(path, origin).instance == .perUser, "\(origin)")
        }
        #expect(unreachable(path, .explicit, runtime: nil).instance == .other)
        #expect(unreachable(path, .explicit, runtime: "/run/user/1001").instance == .other)
    }

    @Test func onlyAnAbsentDaemonGetsAHint() {
        #expect(unreachable("/tmp/h.sock", .explicit, .permissionDenied).hint == nil)
        #expect(unreachable("/tmp/h.sock", .explicit, .notSocket).hint == nil)
        #expect(
            unreachable("/tmp/h.sock", .environment, .notSocket).message()
                == "httpdnsctl: cannot connect to /tmp/h.sock: it is not a socket (from $HTTPDNSD_SOCKET)\n")
    }

    @Test func aFileWithoutCookieLinesIsNotCookiesTxt() {
        #expect(!CookieImportCommand.isCookiesTxt(""))
        #expect(!CookieImportCommand.isCookiesTxt("<html>\n<body>login</body>\n"))
        #expect(!CookieImportCommand.isCookiesTxt("# a\tcomment\twith\tsix\ttabs\there\n"))
        #expect(!CookieImportCommand.isCookiesTxt("{\"cookies\": []}\n"))
        #expect(CookieImportCommand.isCookiesTxt("# Netscape HTTP Cookie File\n"))
        #expect(CookieImportCommand.isCookiesTxt("# HTTP cookie file.\n# Generated by Wget\n"))
        #expect(CookieImportCommand.isCookiesTxt("x.example\tFALSE\t/\tFALSE\t0\tn\tv\r\n"))
        #expect(CookieImportCommand.isCookiesTxt("\n#HttpOnly_x.example\tFALSE\t/\tFALSE\t0\tn\tv\n"))
        // Malformed, but shaped like a cookie: the daemon decides, and says how many it took.
        #expect(CookieImportCommand.isCookiesTxt("a\tb\tc\td\te\tf\tg\n"))
    }
}
