import Foundation
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// httpdnsctl (the built executable) against the real daemon: output, exit statuses, socket choice.
@Suite(.serialized)
struct CtlEndToEndTests {
    /// The environment without anything that could pick a socket for httpdnsctl behind the test's back.
    static func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HTTPDNSD_SOCKET"] = nil
        environment["XDG_RUNTIME_DIR"] = nil
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    /// Runs httpdnsctl with `arguments` as given (no `--socket` added).
    static func ctl(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil) throws
        -> CommandResult
    {
        try runCommand(
            BuiltProducts.path("httpdnsctl"), arguments, environment: cleanEnvironment(environment), stdin: stdin)
    }

    /// Runs httpdnsctl against `rpc`'s daemon.
    static func ctl(_ rpc: RPCSession, _ arguments: [String], stdin: String? = nil) throws -> CommandResult {
        try ctl(["--socket", rpc.daemon.socketPath] + arguments, stdin: stdin)
    }

    /// Runs and expects exit 0 with nothing on standard error.
    static func succeed(_ rpc: RPCSession, _ arguments: [String], stdin: String? = nil) throws -> String {
        let result = try ctl(rpc, arguments, stdin: stdin)
        #expect(result.status == 0, "httpdnsctl \(arguments): \(result.status) \(result.stderr)")
        #expect(result.stderr.isEmpty, "httpdnsctl \(arguments) wrote to stderr: \(result.stderr)")
        return result.stdout
    }

    /// `--json` output: exactly one line holding one JSON value.
    static func json(_ rpc: RPCSession, _ arguments: [String]) throws -> JSON {
        let output = try succeed(rpc, ["--json"] + arguments)
        #expect(output.hasSuffix("\n") && output.dropLast().firstIndex(of: "\n") == nil, "not one line: \(output)")
        return try JSONParser.parse(String(output.dropLast()))
    }

    /// An error message on exactly one line, nothing on standard output.
    static func expectOneLineError(_ result: CommandResult, status: Int32, _ what: String) {
        #expect(result.status == status, "\(what): exit \(result.status), stderr \(result.stderr)")
        #expect(result.stdout.isEmpty, "\(what): stdout \(result.stdout)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && !lines[0].isEmpty && lines[1].isEmpty, "\(what): stderr \(result.stderr)")
    }

    // MARK: resolve, status, flush, call

    /// `cookie export --format storage-state` writes Playwright's storageState JSON of the jar and
    /// `cookie import --format storage-state` reads it back; the daemon refuses data that is no
    /// such object (-32602), and cookies.txt stays the default.
    @Test func cookiesGoOutAndComeBackAsPlaywrightStorageState() throws {
        let rpc = try RPCSession()
        _ = try rpc.result(
            "handleSetCookie",
            [
                "url": "https://app.example.test/",
                "setCookie": ["sid=abc; Secure; HttpOnly; SameSite=Strict", "lang=en; Domain=example.test"],
            ])
        let file = rpc.daemon.directory.file("state.json")
        _ = try Self.succeed(rpc, ["cookie", "export", "--format", "storage-state", file])
        let state = try JSONParser.parse(try String(contentsOfFile: file, encoding: .utf8))
        let cookies = try #require(state["cookies"]?.arrayValue)
        #expect(state["origins"] == .array([]))
        #expect(Set(cookies.compactMap { $0["domain"]?.stringValue }) == ["app.example.test", ".example.test"])
        #expect(cookies.first { $0["name"] == "sid" }?["sameSite"] == "Strict")
        #expect(cookies.allSatisfy { $0["expires"] == .int(-1) }, "session cookies")
        _ = try rpc.result("deleteCookies", ["all": true])
        #expect(try Self.succeed(rpc, ["cookie", "import", "--format", "storage-state", file]) == "imported 2\n")
        #expect(try rpc.result("listCookies")["cookies"]?.arrayValue?.count == 2)
        let refused = try rpc.error(
            "importCookies", ["format": "storage-state", "data": "# Netscape HTTP Cookie File\n"])
        #expect(refused["code"] == -32602 && refused["data"]?["field"] == "data", "\(refused.encodedString)")
        let unknown = try Self.ctl(rpc, ["cookie", "export", "--format", "har"])
        #expect(unknown.status == 64 && unknown.stderr.contains("--format: unknown format har"), "\(unknown.stderr)")
        #expect(try Self.succeed(rpc, ["cookie", "export"]).hasPrefix("# Netscape HTTP Cookie File"))
    }

    @Test func resolveLocalhostAsTextAndJSON() throws {
        let rpc = try RPCSession()
        let text = try Self.succeed(rpc, ["resolve", "localhost", "--family", "ipv4"])
        let first = text.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("localhost: "), "\(text)")
        #expect(first.split(separator: " ").contains("127.0.0.1"), "\(text)")

        let json = try #require(try Self.json(rpc, ["resolve", "localhost", "--family", "ipv4"]).arrayValue?.first)
        #expect(json["host"] == "localhost")
        #expect(json["ipv4"]?.arrayValue?.contains("127.0.0.1") == true, "\(json.encodedString)")
        #expect(json["ipv6"]?.arrayValue?.isEmpty == true)
        #expect(json["ttl"]?.numberValue != nil)
        #expect(json["stale"]?.boolValue != nil)
        let sources: Set<String> = ["cache", "upstream", "system", "literal", "static"]
        #expect(sources.contains(json["source"]?.stringValue ?? ""), "\(json.encodedString)")

        let literal = try #require(try Self.json(rpc, ["resolve", "192.0.2.1"]).arrayValue?.first)
        #expect(literal["ipv4"] == ["192.0.2.1"])
        #expect(literal["source"] == "literal")
    }

    /// resolvectl query's habits: several names, -4/-6, one line per address aligned under the
    /// first, a failed name reported on stderr while the others print, exit 1 only then.
    @Test func resolveSeveralNamesLikeResolvectl() throws {
        let rpc = try RPCSession()
        let both = try Self.succeed(rpc, ["resolve", "192.0.2.1", "2001:db8::1", "198.51.100.7"])
        #expect(
            both == "192.0.2.1: 192.0.2.1\n-- ttl 86400s, an IP literal\n2001:db8::1: 2001:db8::1\n"
                + "-- ttl 86400s, an IP literal\n198.51.100.7: 198.51.100.7\n-- ttl 86400s, an IP literal\n",
            "\(both)")
        let literal6 = try #require(try Self.json(rpc, ["resolve", "-6", "2001:db8::1"]).arrayValue)
        #expect(literal6.count == 1 && literal6[0]["ipv6"] == ["2001:db8::1"])

        let mixed = try Self.ctl(rpc, ["resolve", "192.0.2.1", "bad..host", "198.51.100.7"])
        #expect(mixed.status == 1)
        #expect(mixed.stdout.contains("192.0.2.1: 192.0.2.1") && mixed.stdout.contains("198.51.100.7: 198.51.100.7"))
        #expect(mixed.stderr.hasPrefix("httpdnsctl: bad..host: "), "\(mixed.stderr)")
        #expect(mixed.stderr.split(separator: "\n").count == 1)

        let mixedJSON = try Self.ctl(rpc, ["--json", "resolve", "192.0.2.1", "bad..host"])
        #expect(mixedJSON.status == 1 && mixedJSON.stderr.isEmpty, "\(mixedJSON.stderr)")
        let elements = try #require(try JSONParser.parse(mixedJSON.stdout).arrayValue)
        #expect(elements.count == 2)
        #expect(elements[0]["ipv4"] == ["192.0.2.1"])
        #expect(elements[1]["host"] == "bad..host")
        #expect(elements[1]["error"]?["code"] == .int(-32602))
        #expect(elements[1]["error"]?["data"]?["field"] == "host")

        for conflict in [["-4", "-6"], ["-4", "--family", "both"]] {
            #expect(try Self.ctl(rpc, ["resolve", "localhost"] + conflict).status == 64, "\(conflict)")
        }
    }

    /// `--json=pretty` indents; `--json` (short) keeps one line; a daemon's error is its JSON-RPC
    /// error object on stdout with `data` whole (the candidates of an ambiguous address), exit 1.
    @Test func jsonStylesAndJSONErrors() throws {
        let rpc = try RPCSession()
        let pretty = try Self.succeed(rpc, ["--json=pretty", "status"])
        #expect(pretty.hasPrefix("{\n  \"version\": "), "\(pretty)")
        #expect(try JSONParser.parse(pretty)["version"]?.stringValue?.isEmpty == false)
        #expect(try Self.succeed(rpc, ["--json=short", "status"]).split(separator: "\n").count == 1)
        #expect(try Self.succeed(rpc, ["--json=off", "status"]).hasPrefix("httpdnsd "))
        #expect(try Self.ctl(rpc, ["--json=loud", "status"]).status == 64)

        let refused = try Self.ctl(rpc, ["--json", "cookie", "get", "not-a-url"])
        #expect(refused.status == 1 && refused.stderr.isEmpty, "\(refused.stderr)")
        let error = try JSONParser.parse(refused.stdout)
        #expect(error["code"] == .int(-32602))
        #expect(error["data"]?["name"] == "InvalidParams")
        #expect(error["data"]?["field"] == "url")
    }

    /// `help CMD` and `CMD --help` print that command's usage (exit 0, nothing reaches the
    /// daemon); typos get a did-you-mean; every example in a command's help runs as written.
    @Test func helpPerCommandAndDidYouMean() throws {
        let resolveHelp = try Self.ctl(["help", "resolve"])
        #expect(resolveHelp.status == 0)
        #expect(resolveHelp.stdout.hasPrefix("Usage: httpdnsctl "), "\(resolveHelp.stdout)")
        #expect(resolveHelp.stdout.contains("resolve NAME... [-4] [-6] [--family F]"))
        #expect(try Self.ctl(["resolve", "--help"]).stdout == resolveHelp.stdout)
        #expect(try Self.ctl(["resolve", "example.com", "--help"]).stdout == resolveHelp.stdout)
        let cookieGet = try Self.ctl(["cookie", "get", "--help"])
        #expect(cookieGet.status == 0 && cookieGet.stdout.contains("--for-script"), "\(cookieGet.stdout)")
        #expect(try Self.ctl(["help", "cookie"]).stdout.contains("cookie export [FILE]"))
        #expect(try Self.ctl(["help"]).stdout.contains("Commands:"))
        let curlHelp = try Self.ctl(["help", "curl"])
        #expect(curlHelp.status == 0 && curlHelp.stdout.contains("--host NAME"), "\(curlHelp.stdout)")

        for (arguments, hint) in [
            (["resolv", "x"], "did you mean resolve?"),
            (["resolve", "x", "--familly", "ipv4"], "did you mean --family?"),
            (["cookie", "gt"], "did you mean get?"), (["--jsn", "status"], "did you mean --json?"),
            (["help", "stauts"], "did you mean status?"),
        ] {
            let result = try Self.ctl(arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.stderr.contains(hint), "\(arguments): \(result.stderr)")
        }
    }
    @Test func statusFlushAndCall() throws {
        let rpc = try RPCSession()
        #expect(try Self.succeed(rpc, ["status"]).contains("httpdnsd"))
        let status = try Self.json(rpc, ["status"])
        #expect(status["version"]?.stringValue?.isEmpty == false)
        #expect(status["uptime"]?.numberValue != nil)
        for key in ["entries", "hits", "misses", "staleServed"] {
            #expect(status["cache"]?[key]?.numberValue != nil, "cache.\(key) in \(status.encodedString)")
        }
        #expect(status["cookies"]?["count"]?.numberValue != nil)
        #expect(status["upstreams"]?.arrayValue != nil)

        _ = try Self.succeed(rpc, ["resolve", "localhost", "--family", "ipv4"])
        let flushedHost = try Self.json(rpc, ["flush", "localhost"])
        #expect(flushedHost["flushed"]?.numberValue?.int64Value ?? 0 >= 1, "\(flushedHost.encodedString)")
        _ = try Self.succeed(rpc, ["resolve", "localhost", "--family", "ipv4"])
        #expect(try Self.succeed(rpc, ["flush"]).contains("flushed"))
        #expect(try Self.json(rpc, ["flush"])["flushed"] == .int(0))

        let called = try JSONParser.parse(
            try Self.succeed(rpc, ["call", "resolve", #"{"host":"localhost","family":"ipv4"}"#])
                .trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(called["ipv4"]?.arrayValue?.contains("127.0.0.1") == true, "\(called.encodedString)")
        let noParams = try Self.json(rpc, ["call", "status"])
        #expect(noParams["version"] == status["version"])
        let header = try Self.json(rpc, ["call", "getCookieHeader", #"{"url":"https://x.test/"}"#])
        #expect(header["header"] == "")
        #expect(header["count"] == .int(0))
    }

    // MARK: cookies

    @Test func cookieSetGetListDeleteExportImport() throws {
        let rpc = try RPCSession()
        let scratch = TemporaryDirectory(prefix: "ctl")
        let set = try Self.succeed(
            rpc,
            [
                "cookie", "set", "https://203.0.113.10/login", "--host", "api.example.com",
                "sid=abc; Path=/; Secure; HttpOnly",
            ])
        #expect(set.contains("api.example.com"), "\(set)")
        #expect(
            try Self.succeed(rpc, ["cookie", "get", "https://203.0.113.11/app", "--host", "api.example.com"])
                == "sid=abc\n")
        #expect(try Self.succeed(rpc, ["cookie", "get", "https://api.example.com/app"]) == "sid=abc\n")
        #expect(try Self.succeed(rpc, ["cookie", "get", "https://api.example.com/app", "--for-script"]) == "\n")
        #expect(try Self.succeed(rpc, ["cookie", "get", "http://api.example.com/app"]) == "\n")

        let setJSON = try Self.json(
            rpc, ["cookie", "set", "https://api.example.com/", "lang=en; Path=/", "bad=1; Domain=other.test"])
        #expect(setJSON["host"] == "api.example.com")
        #expect(setJSON["stored"] == .int(1))
        #expect(CookieResults.rejections(setJSON) == [1: "domain-mismatch"], "\(setJSON.encodedString)")

        let table = try Self.succeed(rpc, ["cookie", "list"])
        #expect(table.contains("api.example.com") && table.contains("sid") && table.contains("lang"), "\(table)")
        let listed = try #require(try Self.json(rpc, ["cookie", "list"])["cookies"]?.arrayValue)
        #expect(CookieResults.names(listed) == ["lang", "sid"])
        #expect(try Self.json(rpc, ["cookie", "list", "--domain", "other.test"])["cookies"] == [])

        let file = scratch.file("cookies.txt")
        #expect(try Self.succeed(rpc, ["cookie", "export", file]).isEmpty)
        let exported = try String(contentsOfFile: file, encoding: .utf8)
        #expect(try Self.succeed(rpc, ["cookie", "export"]) == exported)
        let sidLine = exported.split(separator: "\n").first { $0.hasSuffix("\tsid\tabc") }
        let fields = (sidLine ?? "").split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        #expect(fields.count == 7, "\(exported)")
        #expect(fields.first == "#HttpOnly_api.example.com", "\(exported)")
        #expect(fields.count > 3 && fields[3] == "TRUE", "the Secure column of \(exported)")

        #expect(try Self.json(rpc, ["cookie", "delete", "--all"])["deleted"] == .int(2))
        #expect(try Self.succeed(rpc, ["cookie", "get", "https://api.example.com/"]) == "\n")
        #expect(try Self.succeed(rpc, ["cookie", "import", file]).contains("2"))
        // Both are back; their order after an import is not the contract's to say.
        let back = try Self.succeed(rpc, ["cookie", "get", "https://api.example.com/"])
        #expect(
            Set(back.dropLast().split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }) == [
                "sid=abc", "lang=en",
            ])
        let restored = try #require(try Self.json(rpc, ["cookie", "list"])["cookies"]?.arrayValue)
        #expect(CookieResults.named("sid", in: restored)?["httpOnly"] == true)
        #expect(CookieResults.named("sid", in: restored)?["secure"] == true)

        #expect(try Self.succeed(rpc, ["cookie", "delete", "--domain", "example.com", "--name", "sid"]).contains("1"))
        #expect(try Self.json(rpc, ["cookie", "delete", "--url", "https://api.example.com/x"])["deleted"] == .int(1))
    }

    @Test func importFromStandardInput() throws {
        let rpc = try RPCSession()
        let line = "www.example.com\tFALSE\t/\tFALSE\t0\tpiped\tyes\n"
        let result = try Self.ctl(rpc, ["--json", "cookie", "import", "-"], stdin: line)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            (try? JSONParser.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))?["imported"]
                == .int(1))
        #expect(try Self.succeed(rpc, ["cookie", "get", "https://www.example.com/"]) == "piped=yes\n")
    }

    @Test func importOfAFileWithoutCookieLinesExits65AndSendsNothing() throws {
        let rpc = try RPCSession()
        let scratch = TemporaryDirectory(prefix: "ctl")
        let page = scratch.file("index.html")
        try "<!doctype html>\n<title>login</title>\n# not\tquite\ta\tcookie\n".write(
            toFile: page, atomically: true, encoding: .utf8)
        let result = try Self.ctl(rpc, ["cookie", "import", page])
        Self.expectOneLineError(result, status: 65, "an HTML page")
        #expect(result.stderr.contains("\(page): not a cookies.txt file"), "\(result.stderr)")
        Self.expectOneLineError(
            try Self.ctl(rpc, ["--json", "cookie", "import", "-"], stdin: ""), status: 65, "empty standard input")

        // An exported empty jar is a cookies.txt file with no cookie in it.
        let empty = try Self.succeed(rpc, ["cookie", "export"])
        #expect(try Self.succeed(rpc, ["cookie", "import", "-"], stdin: empty) == "imported 0\n")
        // Cookie lines, one of them refused (a public suffix as a domain): what was imported is said.
        let mixed = ".com\tTRUE\t/\tFALSE\t0\tsuper\tcookie\nwww.example.com\tFALSE\t/\tFALSE\t0\tkept\tyes\n"
        #expect(try Self.succeed(rpc, ["cookie", "import", "-"], stdin: mixed) == "imported 1\n")
        #expect(try rpc.list().count == 1)
    }

    /// Every example line in every command's help runs as written in bash, in order, against a
    /// daemon whose socket `HTTPDNSD_SOCKET` names (the one substitution) and where
    /// `app.example.test` is a `Static=` name.
    @Test func everyHelpExampleRunsAsWritten() throws {
        let rpc = try RPCSession(config: "[Resolver]\nStatic=app.example.test 127.0.0.1\n")
        let scratch = TemporaryDirectory(prefix: "examples")
        let binDirectory = (BuiltProducts.path("httpdnsctl") as NSString).deletingLastPathComponent
        let environment = Self.cleanEnvironment([
            "HTTPDNSD_SOCKET": rpc.daemon.socketPath,
            "PATH": binDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        ])
        var ran = 0
        for words in [
            ["resolve"], ["reverse"], ["cookie", "get"], ["cookie", "set"], ["cookie", "delete"],
            ["cookie", "list"], ["cookie", "import"], ["cookie", "export"], ["status"], ["flush"], ["call"],
            ["help"], ["completion"], ["show-cache"], ["statistics"], ["reset-statistics"], ["metrics"],
        ] {
            let help = try Self.ctl(["help"] + words).stdout
            let examples = help.split(separator: "\n").drop { !$0.hasPrefix("Example") }.dropFirst()
                .filter { $0.hasPrefix("  ") }.map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(!examples.isEmpty, "no example in 'help \(words.joined(separator: " "))'")
            for example in examples {
                let result = try runCommand(
                    "/bin/bash", ["-c", "cd \(scratch.path) && \(example)"], environment: environment)
                #expect(result.status == 0, "\(example): exit \(result.status)\n\(result.stdout)\(result.stderr)")
                ran += 1
            }
        }
        #expect(ran >= 17)
    }

    /// show-cache, statistics, reset-statistics and metrics print what resolvectl's show-cache
    /// and statistics would, and the exposition as is.
    @Test func showCacheStatisticsAndMetrics() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: ["a.example.com": (["203.0.113.10"], [], 120)])
        let rpc = try RPCSession(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        _ = try Self.succeed(rpc, ["resolve", "a.example.com"])
        let cache = try Self.succeed(rpc, ["show-cache"]).split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true)
        }
        #expect(cache.first == ["NAME", "FAMILY", "ADDRESS", "TTL", "UPSTREAM"])
        #expect(
            cache.dropFirst().map { [$0[0], $0[1], $0[2], $0[4]] } == [
                ["a.example.com", "ipv4", "203.0.113.10", "alibaba"], ["a.example.com", "ipv6", "-", "alibaba"],
            ])
        let statistics = try Self.succeed(rpc, ["statistics"])
        #expect(statistics.contains("\nUpstreams\n  alibaba: 1 queries, 0 failed\n"), "\(statistics)")
        #expect(statistics.contains("\n  Misses: 1\n"), "\(statistics)")
        #expect(try Self.succeed(rpc, ["reset-statistics"]).hasPrefix("statistics reset at "))
        #expect(try Self.succeed(rpc, ["statistics"]).contains("  alibaba: 0 queries, 0 failed\n"))
        let metrics = try Self.succeed(rpc, ["metrics"])
        #expect(metrics.hasPrefix("# HELP httpdnsd_"))
        #expect(metrics.contains("\nhttpdnsd_upstream_queries_total{upstream=\"alibaba\"} 1\n"), "\(metrics)")
        let json = try Self.json(rpc, ["metrics"])
        #expect(json["contentType"] == "text/plain; version=0.0.4; charset=utf-8")
        #expect(json["text"]?.stringValue?.hasPrefix("# HELP httpdnsd_") == true)
    }

    /// The command of the packaged metrics timer's service, run as its unit says (with the
    /// binary, socket and directory of this test), writes an exposition the parser reads and
    /// leaves no temporary file.
    @Test func theMetricsTimerWritesTheTextfile() throws {
        let rpc = try RPCSession(config: "")
        let scratch = TemporaryDirectory(prefix: "textfile")
        let unit = try String(
            contentsOfFile: BuiltProducts.packageRoot + "/packaging/httpdnsd-metrics.service", encoding: .utf8)
        let execStart = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let command = execStart.dropFirst("ExecStart=".count)
            .replacingOccurrences(of: "/usr/bin/httpdnsctl", with: BuiltProducts.path("httpdnsctl"))
            .replacingOccurrences(of: "/run/httpdnsd/httpdnsd.sock", with: rpc.daemon.socketPath)
            .replacingOccurrences(of: "/var/lib/prometheus/node-exporter", with: scratch.path)
        let run = try runCommand("/bin/sh", ["-c", command], environment: Self.cleanEnvironment())
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["httpdnsd.prom"])
        let text = try String(contentsOfFile: scratch.file("httpdnsd.prom"), encoding: .utf8)
        let samples = try ObservationSocketTests.parsePrometheus(text, in: scratch)
        #expect(samples["httpdnsd_uptime_seconds"] != nil, "\(text)")
    }

    /// monitor prints each event as it comes, one line each, until it is stopped.
    @Test func monitorPrintsEventsAsTheyCome() throws {
        let rpc = try RPCSession(config: "[Resolver]\nStatic=app.example.test 127.0.0.1\n")
        let scratch = TemporaryDirectory(prefix: "monitor")
        let output = scratch.file("out")
        let monitor = try ChildProcess(
            BuiltProducts.path("httpdnsctl"), ["--socket", rpc.daemon.socketPath, "monitor"],
            environment: Self.cleanEnvironment(), stdout: output, stderr: scratch.file("err"))
        defer { monitor.signal(SIGTERM) }
        // Until the subscription is there, resolves come and go unseen.
        let seen = try eventually(30) {
            _ = try Self.succeed(rpc, ["resolve", "app.example.test"])
            return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("\n")
        }
        #expect(seen, "\((try? String(contentsOfFile: scratch.file("err"), encoding: .utf8)) ?? "")")
        let first = try #require(try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").first)
        #expect(
            first.wholeMatch(
                of: /\d\d:\d\d:\d\d\.\d{3} uid 0 resolve app\.example\.test: 127\.0\.0\.1 \(static, ttl \d+s\)/)
                != nil, "\(first)")
        #expect(monitor.isRunning, "it goes on until stopped")
    }

    /// The completion scripts come from the command table: bash's completes commands, cookie
    /// subcommands, options and option values; zsh's and fish's name every command and option.
    @Test func shellCompletion() throws {
        let scratch = TemporaryDirectory(prefix: "completion")
        let bash = try Self.ctl(["completion", "bash"])
        #expect(bash.status == 0)
        try bash.stdout.write(toFile: scratch.file("httpdnsctl.bash"), atomically: true, encoding: .utf8)
        func complete(_ words: [String]) throws -> [String] {
            let array = words.map { "'\($0)'" }.joined(separator: " ")
            let script = """
                source \(scratch.file("httpdnsctl.bash"))
                complete -p httpdnsctl >&2
                COMP_WORDS=(\(array)); COMP_CWORD=\(words.count - 1)
                _httpdnsctl
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let result = try runCommand("/bin/bash", ["-c", script])
            #expect(result.status == 0 && result.stderr.contains("-F _httpdnsctl httpdnsctl"), "\(result.stderr)")
            return result.stdout.split(separator: "\n").map(String.init).sorted()
        }
        #expect(try complete(["httpdnsctl", "res"]) == ["reset-statistics", "resolve"])
        #expect(try complete(["httpdnsctl", "cookie", "ex"]) == ["export"])
        #expect(try complete(["httpdnsctl", "--socket", "/x", "cookie", ""]).contains("import"))
        #expect(try complete(["httpdnsctl", "resolve", "--fam"]) == ["--family"])
        #expect(try complete(["httpdnsctl", "resolve", "--family", "ipv"]) == ["ipv4", "ipv6"])
        #expect(try complete(["httpdnsctl", "cookie", "get", "https://x/", "--fo"]) == ["--for-script"])
        #expect(try complete(["httpdnsctl", "--json=p"]) == ["--json=pretty"])
        #expect(try complete(["httpdnsctl", "completion", ""]) == ["bash", "fish", "zsh"])
        #expect(try complete(["httpdnsctl", "call", "getC"]) == ["getCookieHeader"])
        #expect(try complete(["httpdnsctl", "curl", "--ho"]) == ["--host"])

        let zsh = try Self.ctl(["completion", "zsh"]).stdout
        let fish = try Self.ctl(["completion", "fish"]).stdout
        #expect(zsh.hasPrefix("#compdef httpdnsctl"))
        for word in ["resolve", "reverse", "cookie", "status", "flush", "call", "--family", "--for-script", "--domain"]
        {
            #expect(zsh.contains(word), "zsh lacks \(word)")
            #expect(
                fish.contains(word.hasPrefix("--") ? "-l \(word.dropFirst(2))" : "-a \(word)"), "fish lacks \(word)")
        }
        // Syntax, where the shells are installed (they are not part of CI's packages).
        for (shell, script) in [("/usr/bin/zsh", zsh), ("/usr/bin/fish", fish)] where Files.exists(shell) {
            try script.write(toFile: scratch.file("script"), atomically: true, encoding: .utf8)
            #expect(try runCommand(shell, ["-n", scratch.file("script")]).status == 0, "\(shell) -n")
        }
    }

    // MARK: exit statuses

    @Test func errorRepliesExitOneWithOneLine() throws {
        let rpc = try RPCSession()
        Self.expectOneLineError(try Self.ctl(rpc, ["resolve", "bad..host"]), status: 1, "invalid host")
        Self.expectOneLineError(try Self.ctl(rpc, ["cookie", "get", "not-a-url"]), status: 1, "invalid url")
        Self.expectOneLineError(try Self.ctl(rpc, ["call", "noSuchMethod"]), status: 1, "unknown method")
    }

    /// Exit 69, nothing on standard output, and standard error's lines.
    static func unreachable(_ arguments: [String], environment: [String: String] = [:]) throws -> [String] {
        let result = try ctl(arguments, environment: environment)
        #expect(result.status == 69, "\(arguments): exit \(result.status), stderr \(result.stderr)")
        #expect(result.stdout.isEmpty, "\(arguments): stdout \(result.stdout)")
        #expect(result.stderr.hasSuffix("\n"), "\(result.stderr)")
        return result.stderr.split(separator: "\n").map(String.init)
    }

    @Test func nothingListeningExits69NamingTheSocketAndHowToStartADaemonThere() throws {
        let scratch = TemporaryDirectory(prefix: "ctl")
        let nowhere = scratch.file("none.sock")
        #expect(
            try Self.unreachable(["--socket", nowhere, "status"]) == [
                "httpdnsctl: cannot connect to \(nowhere): No such file or directory (from --socket)",
                "httpdnsctl: no daemon listens there; start one with 'httpdnsd --socket \(nowhere)'",
            ])
        #expect(
            try Self.unreachable(["status"], environment: ["HTTPDNSD_SOCKET": nowhere]).first
                == "httpdnsctl: cannot connect to \(nowhere): No such file or directory (from $HTTPDNSD_SOCKET)")

        // The per-user socket left behind by a daemon that is gone: chosen because it exists, refused.
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime + "/httpdnsd", withIntermediateDirectories: true)
        let stale = runtime + "/httpdnsd/httpdnsd.sock"
        try UnixSocket.listen(path: stale).close()
        let perUser = [
            "httpdnsctl: cannot connect to \(stale): Connection refused (the per-user socket)",
            "httpdnsctl: no daemon listens there; start yours with 'systemctl --user start httpdnsd.socket'",
        ]
        #expect(try Self.unreachable(["status"], environment: ["XDG_RUNTIME_DIR": runtime]) == perUser)
        // Named explicitly, it is still recognized as the per-user socket.
        #expect(
            try Self.unreachable(["--socket", stale, "status"], environment: ["XDG_RUNTIME_DIR": runtime]).last
                == perUser.last)
        // httpdnsctl curl says the same before it gives up.
        let curl = try Self.unreachable(["curl", "http://127.0.0.1:9/"], environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(curl.first?.hasPrefix(perUser[0] + "; curl not run") == true, "\(curl)")
        #expect(curl.last == perUser.last)
    }

    @Test func aPathThatIsNotASocketIsReportedAsSuch() throws {
        let scratch = TemporaryDirectory(prefix: "ctl")
        let plain = scratch.file("plain")
        try "".write(toFile: plain, atomically: true, encoding: .utf8)
        #expect(
            try Self.unreachable(["--socket", plain, "status"])
                == ["httpdnsctl: cannot connect to \(plain): it is not a socket (from --socket)"])
        #expect(
            try Self.unreachable(["status"], environment: ["HTTPDNSD_SOCKET": scratch.path])
                == ["httpdnsctl: cannot connect to \(scratch.path): it is not a socket (from $HTTPDNSD_SOCKET)"])
    }

    @Test func usageErrorsExit64() throws {
        let rpc = try RPCSession()
        let cases: [[String]] = [
            [], ["bogus"], ["cookie"], ["cookie", "bake"], ["resolve"], ["help", "bogus"], ["completion", "tcsh"],
            ["resolve", "a", "--family", "ipv5"], ["resolve", "a", "--timeout", "soon"], ["status", "--nope"],
            ["call"], ["call", "status", "{bad"], ["call", "status", "[1]"], ["cookie", "delete"],
            ["cookie", "delete", "--all", "--domain", "example.com"], ["cookie", "set", "https://x.test/"],
            ["cookie", "get"], ["--socket"],
        ]
        for arguments in cases {
            let result = try Self.ctl(rpc, arguments)
            #expect(result.status == 64, "\(arguments): exit \(result.status) \(result.stderr)")
            #expect(!result.stderr.isEmpty, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments): \(result.stdout)")
        }
        // Nothing reached the daemon's jar.
        #expect(try rpc.list().isEmpty)
    }

    // MARK: choosing the socket

    @Test func socketFromEnvironmentAndFlag() throws {
        let rpc = try RPCSession()
        let socket = rpc.daemon.socketPath
        let scratch = TemporaryDirectory(prefix: "ctl")
        let nowhere = scratch.file("none.sock")

        let fromEnvironment = try Self.ctl(["status"], environment: ["HTTPDNSD_SOCKET": socket])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        let deadEnvironment = try Self.ctl(["status"], environment: ["HTTPDNSD_SOCKET": nowhere])
        #expect(deadEnvironment.status == 69, "HTTPDNSD_SOCKET ignored? \(deadEnvironment.stdout)")
        let flagWins = try Self.ctl(["--socket", socket, "status"], environment: ["HTTPDNSD_SOCKET": nowhere])
        #expect(flagWins.status == 0, "\(flagWins.stderr)")

        // The per-user socket is used when it exists and HTTPDNSD_SOCKET is not set.
        let runtime = scratch.file("run")
        try FileManager.default.createDirectory(atPath: runtime + "/httpdnsd", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: runtime + "/httpdnsd/httpdnsd.sock", withDestinationPath: socket)
        let perUser = try Self.ctl(["status"], environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(perUser.status == 0, "\(perUser.stderr)")
        let environmentWins = try Self.ctl(
            ["status"], environment: ["XDG_RUNTIME_DIR": runtime, "HTTPDNSD_SOCKET": nowhere])
        #expect(environmentWins.status == 69)
    }
}
