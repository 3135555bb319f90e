import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Every code block of the README and of the man pages' EXAMPLES, read from the files and checked
/// as written. Each block carries a marker right before it (`<!-- example: KIND[; remark] -->` in
/// Markdown, `.\" example: KIND[; remark]` in roff) saying how; a block without one fails
/// `everyBlockIsClassified`, so a new example cannot go unchecked. The kinds:
///
/// - `shell`: run by `bash -e -o pipefail` as root in a private mount and PID namespace where the
///   system socket (`/run/httpdnsd/httpdnsd.sock`) and the per-user one are the test daemon's.
/// - `shell, own daemon` / `shell, foreground daemon`: the same, with no daemon at those paths:
///   the block starts one (on the embedded default, with `hosts: files` in the namespace).
/// - `shell with origins`: the same, inside the network namespace of HTTPS origin servers on
///   ports 80 and 443 (curl trusts their CA through CURL_CA_BUNDLE; /etc/hosts names them for
///   programs that look names up themselves).
/// - `c`: built with `gcc -std=c11 -Wall -Wextra -Werror` against the built libhttpdns, then run.
/// - `python`: run by python3 with `clients/python` on the path.
/// - `go fragment` / `js fragment`: parsed (gofmt, node --check) inside a function.
/// - `check-config`, `check-config transcript`: `httpdnsd --check-config`; a transcript's output is
///   compared line by line.
/// - `rpc transcript`: the `-->` request sent, the `<--` answer compared (`{...}` is any object).
/// - `nsswitch`, `drop-in`: parsed.
/// - `not run: REASON` (one of `notRunReasons`); `not run: real provider` blocks still go through
///   `--check-config` when they are configurations.
/// - `covered by NAME`: another test runs it; NAME is a file of the repository or a test suite or
///   function that exists.
///
/// The only substitutions: the host names `example.com` and `example.org` become `example.test`
/// and `example-org.test` (answered by the daemon's `Static=` with documentation addresses, so
/// nothing leaves the machine); the socket paths are the test daemon's through the mount namespace,
/// except a test instance's directory (`dir=$(mktemp -d)`, and its socket `"$dir/h.sock"`), replaced
/// by the test daemon's socket, or by the test's own directory where the block starts that instance; in the blocks run against
/// HTTPS origins, the address the README gives curl's IP-direct pattern (`203.0.113.10`) becomes
/// the loopback address of the app origin, the one such block talks to; in configuration
/// blocks, the directories of files the daemon reads (`/etc/httpdnsd/`,
/// `/run/credentials/httpdnsd.service/`) become a test directory holding such files.
@Suite(.serialized)
struct DocumentedExamplesTests {
    static let manPages = ["httpdnsctl.1", "httpdnsd.8", "httpdnsd.conf.5", "httpdnsd-rpc.7", "nss-httpdns.8"]
    static let notRunReasons = [
        "real provider", "installs packages", "changes the machine", "diagram", "takes minutes",
    ]
    static let kinds = [
        "shell", "shell, own daemon", "shell, foreground daemon", "shell with origins", "c", "python", "go fragment",
        "js fragment", "check-config", "check-config transcript", "rpc transcript", "nsswitch", "drop-in",
    ]

    /// Every block of the README and of the man pages' EXAMPLES sections.
    static func all() throws -> [DocumentedExample] {
        let root = BuiltProducts.packageRoot
        var examples = MarkdownBlocks.all(
            in: try String(contentsOfFile: root + "/README.md", encoding: .utf8), file: "README.md")
        for page in manPages {
            let file = "packaging/man/" + page
            examples += ManPageExamples.all(
                in: try String(contentsOfFile: root + "/" + file, encoding: .utf8), file: file)
        }
        return examples
    }

    static func examples(_ kind: String) throws -> [DocumentedExample] { try all().filter { $0.kind == kind } }

    @Test func everyBlockIsClassified() throws {
        let examples = try Self.all()
        #expect(examples.count > 30, "the extraction found \(examples.count) blocks")
        for page in Self.manPages {
            #expect(examples.contains { $0.file.hasSuffix(page) }, "no EXAMPLES block found in \(page)")
        }
        for example in examples {
            guard let kind = example.kind else {
                Issue.record("\(example) has no example marker right before it")
                continue
            }
            if kind.hasPrefix("not run: ") {
                #expect(Self.notRunReasons.contains(String(kind.dropFirst(9))), "\(example): reason \(kind)")
            } else if kind.hasPrefix("covered by ") {
                #expect(try Self.exists(String(kind.dropFirst(11))), "\(example): \(kind) names nothing that exists")
            } else {
                #expect(Self.kinds.contains(kind), "\(example): unknown kind \(kind)")
            }
        }
    }

    /// A `covered by` target: a file of the repository, or a suite or test function in Tests/.
    static func exists(_ name: String) throws -> Bool {
        let root = BuiltProducts.packageRoot
        if FileManager.default.fileExists(atPath: root + "/" + name) { return true }
        let parts = name.split(separator: ".").map(String.init)
        let grep = try runCommand(
            "/usr/bin/grep",
            ["-rlE", "(struct|final class|class) \(parts[0])\\b", root + "/Tests", "--include=*.swift"])
        guard grep.status == 0 else { return false }
        guard parts.count == 2 else { return true }
        let files = grep.stdout.split(separator: "\n").map(String.init)
        return try files.contains { try String(contentsOfFile: $0, encoding: .utf8).contains("func \(parts[1])(") }
    }

    @Test func shellBlocksRunAgainstTheDaemon() throws {
        let world = try ExampleWorld()
        for example in try Self.examples("shell") {
            let result = try world.runShell(example)
            world.expectSuccess(result, example)
        }
    }

    /// The logins and fetches over HTTPS, against origin servers for the documentation's names
    /// (login, app, api and the bare domain): each block runs as written, and the origins saw
    /// the session it was about.
    @Test(.enabled(if: TestPKI.toolsPresent && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
    func shellBlocksWithOriginsRunAgainstHTTPSOrigins() throws {
        let fixture = try IPDirectFixture(
            addresses: [
                "login.example.test": "127.0.0.2", "app.example.test": "127.0.0.3", "api.example.test": "127.0.0.4",
                "example.test": "127.0.0.5",
            ], documentation: true)
        let world = ExampleWorld(origins: fixture)
        let client = try world.daemon.connect()
        for site in ["api.example.test", "example.test"] {
            let set = try client.call(
                "handleSetCookie",
                ["url": .string("https://\(site)/"), "setCookie": [.string("doc=\(site); Path=/; Secure")]])
            #expect(set?["error"] == nil, "\(String(describing: set))")
        }
        let examples = try Self.examples("shell with origins")
        #expect(examples.count >= 4)
        for example in examples {
            world.expectSuccess(try world.runShell(example), example)
        }
        let requests = fixture.requests
        // The form login's session reached the app host, from a later process.
        #expect(
            requests.contains {
                $0["host"] == "app.example.test" && $0["path"] == "/api/me"
                    && $0["cookie"]?.stringValue?.contains("sid=alice") == true
            }, "\(requests)")
        // The script's curl sent the jar's cookie for the host it resolved.
        #expect(
            requests.contains {
                $0["host"] == "api.example.test" && $0["path"] == "/app"
                    && $0["cookie"]?.stringValue?.contains("doc=api.example.test") == true
            }, "\(requests)")
    }

    @Test func ownDaemonBlocksStartTheDaemonAndReachIt() throws {
        let world = try ExampleWorld(daemon: false)
        for example in try Self.examples("shell, own daemon") {
            let result = try world.runShell(example)
            world.expectSuccess(result, example)
            #expect(result.stdout.hasPrefix("httpdnsd "), "\(example): no status printed: \(result.stdout)")
        }
    }

    @Test func foregroundDaemonBlocksServeUntilStopped() throws {
        let world = try ExampleWorld(daemon: false)
        for example in try Self.examples("shell, foreground daemon") {
            let socket = world.directory.file("h.sock")
            let child = try world.startShell(example)
            defer {
                // unshare ignores SIGTERM while it waits; its death takes the namespace down (--kill-child).
                child.signal(SIGKILL)
                _ = child.wait(timeout: 15)
            }
            var status: JSON?
            _ = eventually(20, every: 20) {
                status = (try? LineClient(path: socket)).flatMap { try? $0.call("status", id: 1) }
                return status != nil || !child.isRunning
            }
            #expect(
                status?["result"]?["version"] != nil, "\(example): no status from \(socket): \(world.log(of: child))")
        }
    }

    @Test func cBlocksBuildAndRun() throws {
        let world = try ExampleWorld()
        let client = try world.daemon.connect()
        _ = try client.call(
            "handleSetCookie",
            ["url": "https://api.example.test/", "setCookie": ["sid=abc; Path=/; Secure; HttpOnly"]])
        for (index, example) in try Self.examples("c").enumerated() {
            let source = world.directory.file("example\(index).c")
            try world.substituted(example.text).write(toFile: source, atomically: true, encoding: .utf8)
            let program = try ExampleBuild.cProgram(source, in: world.directory)
            let result = try world.run([program])
            world.expectSuccess(result, example)
            #expect(result.stdout.contains("sid=abc"), "\(example): \(result.stdout)")
        }
    }

    @Test(.enabled(if: ExampleWorld.pythonAdaptersPresent)) func pythonBlocksRun() throws {
        let world = try ExampleWorld()
        for example in try Self.examples("python") {
            let script = world.directory.file("example.py")
            try world.substituted(example.text).write(toFile: script, atomically: true, encoding: .utf8)
            world.expectSuccess(try world.run(["/usr/bin/python3", script]), example)
        }
    }

    @Test func fragmentsParse() throws {
        let directory = TemporaryDirectory(prefix: "frag")
        for example in try Self.examples("go fragment") {
            let file = directory.file("example.go")
            try "package main\n\nfunc example() {\n\(example.text)}\n".write(
                toFile: file, atomically: true, encoding: .utf8)
            let result = try runCommand("/usr/bin/gofmt", ["-e", file])
            #expect(result.status == 0, "\(example): \(result.stderr)")
        }
        for example in try Self.examples("js fragment") {
            let file = directory.file("example.js")
            try "async function example(url, init) {\n\(example.text)}\n".write(
                toFile: file, atomically: true, encoding: .utf8)
            let result = try runCommand("/usr/bin/env", ["node", "--check", file])
            #expect(result.status == 0, "\(example): \(result.stderr)")
        }
    }

    @Test func configurationsPassTheCheck() throws {
        let directory = TemporaryDirectory(prefix: "conf")
        var configurations = try Self.examples("check-config").map { ($0, $0.text) }
        for example in try Self.all()
        where example.kind == "not run: real provider" && example.spec?.contains("check-config") == true {
            configurations.append((example, example.text))
        }
        for example in try Self.examples("not run: changes the machine") {
            for remark in example.remarks where remark.hasPrefix("heredoc ") && remark.hasSuffix(": check-config") {
                let name = String(remark.dropFirst(8).dropLast(14))
                configurations.append((example, try #require(Self.heredoc(name, in: example.text), "\(example)")))
            }
        }
        #expect(configurations.count >= 4)
        for (example, text) in configurations {
            let result = try ExampleWorld.checkConfig(text, in: directory)
            #expect(result.status == 0, "\(example): \(result.stdout)\(result.stderr)")
        }
    }

    /// The README's transcript: a file with its two mistakes on the lines it names gives exactly
    /// its output and exit status 78.
    @Test func checkConfigTranscriptsAreWhatTheDaemonPrints() throws {
        let directory = TemporaryDirectory(prefix: "tr")
        for example in try Self.examples("check-config transcript") {
            let lines = example.text.split(separator: "\n").map(String.init)
            let command = try #require(lines.first?.hasPrefix("$ ") == true ? lines[0] : nil, "\(example)")
            let path = try #require(command.split(separator: " ").last.map(String.init))
            // The file the transcript describes: each error line names a line of it and its mistake.
            var file = ["[Resolver]", "Timeout=2s", "", "ServeStale=yes", ""]
            for line in lines.dropFirst() where line.contains("unknown key ") {
                let key = String(line.split(separator: " ")[4])
                file[Self.lineNumber(line) - 1] = key + "system"
            }
            for line in lines.dropFirst() where line.contains("missing '='") {
                file[Self.lineNumber(line) - 1] = "Upstream system"
            }
            let ours = directory.file("httpdnsd.conf")
            try file.joined(separator: "\n").appending("\n").write(toFile: ours, atomically: true, encoding: .utf8)
            let result = try runCommand(BuiltProducts.path("httpdnsd"), ["--check-config", ours])
            #expect(result.status == 78)
            let printed = (result.stdout + result.stderr).replacing(ours, with: path)
            #expect(printed == lines.dropFirst().joined(separator: "\n") + "\n", "\(example)")
        }
    }

    static func lineNumber(_ line: String) -> Int { Int(line.split(separator: ":")[2]) ?? 0 }

    @Test func rpcTranscriptsAreWhatTheDaemonAnswers() throws {
        let world = try ExampleWorld()
        for example in try Self.examples("rpc transcript") {
            var request = ""
            var expected = ""
            var current = 0
            for line in example.text.split(separator: "\n") {
                if line.hasPrefix("--> ") {
                    current = 1
                    request += line.dropFirst(4).trimmingCharacters(in: .whitespaces)
                } else if line.hasPrefix("<-- ") {
                    current = 2
                    expected += line.dropFirst(4).trimmingCharacters(in: .whitespaces)
                } else if current == 1 {
                    request += line.trimmingCharacters(in: .whitespaces)
                } else {
                    expected += line.trimmingCharacters(in: .whitespaces)
                }
            }
            let client = try world.daemon.connect()
            try client.sendLine(world.substituted(request))
            let answer = try #require(client.readJSON(), "\(example): no answer")
            let pattern = try JSONParser.parse(expected.replacing("{...}", with: #""<any object>""#))
            #expect(Self.matches(answer, pattern), "\(example): \(answer)")
        }
    }

    static func matches(_ value: JSON, _ pattern: JSON) -> Bool {
        switch (value, pattern) {
        case (.object, .string("<any object>")): return true
        case (.array(let values), .array(let patterns)):
            return values.count == patterns.count && zip(values, patterns).allSatisfy { matches($0, $1) }
        case (.object(let values), .object(let patterns)):
            return Array(values).count == Array(patterns).count
                && patterns.allSatisfy { member in values[member.key].map { matches($0, member.value) } ?? false }
        default: return value == pattern
        }
    }

    @Test func nsswitchBlocksAreValidHostsLines() throws {
        let statuses = ["success", "notfound", "unavail", "tryagain"]
        let actions = ["return", "continue", "merge"]
        for example in try Self.examples("nsswitch") {
            for line in example.text.split(separator: "\n") {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                #expect(words.first == "hosts:", "\(example): \(line)")
                var services: [String] = []
                for word in words.dropFirst() {
                    if word.hasPrefix("[") && word.hasSuffix("]") {
                        let criterion = word.dropFirst().dropLast().lowercased().split(separator: "=")
                        let status = criterion.first.map { $0.hasPrefix("!") ? String($0.dropFirst()) : String($0) }
                        #expect(
                            criterion.count == 2 && statuses.contains(status ?? "")
                                && actions.contains(String(criterion[1])), "\(example): \(word)")
                        #expect(!services.isEmpty, "\(example): an action before any service")
                    } else {
                        #expect(word.allSatisfy { $0.isLowercase || $0 == "_" }, "\(example): service \(word)")
                        services.append(word)
                    }
                }
                // The module answers before DNS, and only its UNAVAIL goes on (README, nss-httpdns(8)).
                let httpdns = try #require(services.firstIndex(of: "httpdns"), "\(example)")
                #expect(services.firstIndex(of: "dns").map { $0 > httpdns } ?? true, "\(example)")
                #expect(line.contains("httpdns [!UNAVAIL=return]"), "\(example)")
            }
        }
    }

    @Test func dropInsAreUnitFiles() throws {
        var dropIns: [(DocumentedExample, String)] = try Self.examples("drop-in").map { ($0, $0.text) }
        for example in try Self.examples("not run: changes the machine") {
            for remark in example.remarks where remark.hasPrefix("heredoc ") && remark.hasSuffix(": drop-in") {
                let name = String(remark.dropFirst(8).dropLast(9))
                dropIns.append((example, try #require(Self.heredoc(name, in: example.text), "\(example)")))
            }
        }
        #expect(!dropIns.isEmpty)
        // systemd-analyze verify reads the drop-in beside a copy of the packaged service unit.
        for (example, text) in dropIns {
            let directory = TemporaryDirectory(prefix: "unit")
            let unitText = try String(
                contentsOfFile: BuiltProducts.packageRoot + "/packaging/httpdnsd.service", encoding: .utf8)
            let unit = directory.file("httpdnsd.service")
            // Modes set exactly: systemd warns of a world-writable unit, and the umask is the
            // process's, which an in-process server's bind widens for a moment (`writeFile`).
            writeFile(unitText, to: unit, mode: 0o644)
            try FileManager.default.createDirectory(
                atPath: directory.file("httpdnsd.service.d"), withIntermediateDirectories: true)
            chmod(directory.file("httpdnsd.service.d"), 0o755)
            writeFile(text, to: directory.file("httpdnsd.service.d/example.conf"), mode: 0o644)
            var section = ""
            for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
                if line.hasPrefix("[") {
                    section = String(line)
                    continue
                }
                #expect(section == "[Service]" && line.contains("="), "\(example): \(line)")
            }
            let result = try runCommand(
                "/usr/bin/systemd-analyze", ["verify", "--man=no", unit],
                environment: ["SYSTEMD_UNIT_PATH": directory.path + ":"])
            let complaints = (result.stdout + result.stderr).split(separator: "\n").filter {
                $0.contains("example.conf") || $0.contains("Unknown key") || $0.contains("Invalid")
            }
            #expect(complaints.isEmpty, "\(example): \(complaints)")
        }
    }

    /// The body of `<<'NAME'` ... `NAME` in a shell block.
    static func heredoc(_ name: String, in text: String) -> String? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.contains("<<'\(name)'") }),
            let end = lines[(start + 1)...].firstIndex(where: { $0 == name })
        else { return nil }
        return lines[(start + 1)..<end].joined(separator: "\n") + "\n"
    }
}

/// The daemon the examples talk to and the namespace they run in.
final class ExampleWorld {
    let directory = TemporaryDirectory(prefix: "ex")
    let upstream: FakeHTTPServer?
    let harness: DaemonHarness?
    /// A process in the network namespace the blocks run in (the origins'); nil: the host's.
    let network: pid_t?
    /// The namespace's /etc/hosts, for programs that look names up themselves (plain curl).
    let hosts: [String: String]
    let extraEnvironment: [String: String]
    /// Documentation addresses a block names, replaced by where the origins listen (origins only).
    var addresses: [String: String] = [:]

    var daemon: DaemonHarness { harness! }

    /// The documentation's host names answered with documentation addresses, and a fake upstream
    /// on loopback that knows no other name.
    init(daemon: Bool = true) throws {
        network = nil
        hosts = [:]
        extraEnvironment = [:]
        let upstream = try FakeHTTPServer.alibaba(answers: [:])
        self.upstream = upstream
        guard daemon else {
            harness = nil
            return
        }
        harness = try DaemonHarness(
            config: """
                [Resolver]
                Upstream=alibaba \(upstream.alibabaURL())
                Static=example.test 203.0.113.10
                Static=api.example.test 203.0.113.10 203.0.113.11
                Static=example-org.test 203.0.113.30

                """)
        _ = try harness!.connectReady()
    }

    /// The blocks run in the network namespace of `fixture`'s HTTPS origins (ports 80 and 443),
    /// whose CA curl trusts through CURL_CA_BUNDLE, against its daemon.
    init(origins fixture: IPDirectFixture) {
        upstream = nil
        harness = fixture.daemon
        network = fixture.origins.pid
        hosts = fixture.addresses
        extraEnvironment = ["CURL_CA_BUNDLE": fixture.caFile]
        addresses = fixture.addresses["app.example.test"].map { ["203.0.113.10": $0] } ?? [:]
    }

    static var pythonAdaptersPresent: Bool {
        (try? runCommand("/usr/bin/python3", ["-c", "import requests, httpx"]).status == 0) ?? false
    }

    /// The block's text with the documented substitutions.
    func substituted(_ text: String) -> String {
        let named = text.replacing("example.com", with: "example.test")
            .replacing("example.org", with: "example-org.test")
            .replacing("\"$dir/h.sock\"", with: harness?.socketPath ?? directory.file("h.sock"))
            .replacing("dir=$(mktemp -d)", with: "dir=\(directory.path)")
        return addresses.reduce(named) { text, address in text.replacing(address.key, with: address.value) }
    }

    /// Runs `command` as root in a private mount and PID namespace: a fresh /run (with the test
    /// daemon's socket at the system and per-user paths, when there is a daemon), an empty
    /// /var/lib and /etc/httpdnsd, `hosts: files` in nsswitch.conf, the built httpdnsd and
    /// httpdnsctl in /usr/local/bin (on sudo's secure_path too), the working directory a scratch one. `--kill-child` ends whatever the command left running with it.
    func namespaceCommand(_ command: [String]) throws -> (String, [String], [String: String]) {
        let nsswitch = directory.file("nsswitch.conf")
        try "hosts: files\n".write(toFile: nsswitch, atomically: true, encoding: .utf8)
        let work = directory.file("work")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        var setup = """
            set -e
            mount -t tmpfs tmpfs /run
            mount -t tmpfs tmpfs /var/lib
            [ ! -d /etc/httpdnsd ] || mount -t tmpfs tmpfs /etc/httpdnsd
            mount --bind "$0" /etc/nsswitch.conf
            mkdir -p /run/httpdnsd /run/user/0/httpdnsd
            mount -t tmpfs tmpfs /usr/local/bin
            ln -s "\(BuiltProducts.path("httpdnsd"))" "\(BuiltProducts.path("httpdnsctl"))" /usr/local/bin/

            """
        if let harness {
            setup += """
                for path in /run/httpdnsd/httpdnsd.sock /run/user/0/httpdnsd/httpdnsd.sock; do
                    touch "$path" && mount --bind "\(harness.socketPath)" "$path"
                done

                """
        }
        if !hosts.isEmpty {
            let hostsFile = directory.file("hosts")
            let lines = ["127.0.0.1 localhost"] + hosts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            try (lines.joined(separator: "\n") + "\n").write(toFile: hostsFile, atomically: true, encoding: .utf8)
            setup += "mount --bind \"\(hostsFile)\" /etc/hosts\n"
        }
        setup += "cd \"\(work)\"\nshift\nexec \"$@\"\n"
        var environment = ProcessInfo.processInfo.environment
        for name in ["HTTPDNSD_SOCKET", "CURL_HOME", "http_proxy", "https_proxy", "all_proxy"] {
            environment[name] = nil
        }
        environment["XDG_RUNTIME_DIR"] = "/run/user/0"
        environment["HOME"] = directory.path
        environment["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        environment["PYTHONPATH"] = BuiltProducts.packageRoot + "/clients/python"
        for (key, value) in extraEnvironment { environment[key] = value }
        let unshare =
            ["-m", "-p", "-f", "--mount-proc", "--kill-child", "/bin/sh", "-c", setup, nsswitch, "-"] + command
        guard let network else { return ("/usr/bin/unshare", unshare, environment) }
        return ("/usr/bin/nsenter", ["--net=/proc/\(network)/ns/net", "--", "/usr/bin/unshare"] + unshare, environment)
    }

    func run(_ command: [String]) throws -> CommandResult {
        let (executable, arguments, environment) = try namespaceCommand(command)
        return try runCommand(executable, arguments, environment: environment, timeout: 120)
    }

    /// Writes the substituted block to a file and runs it with bash.
    func script(_ example: DocumentedExample) throws -> String {
        let script = directory.file("example.sh")
        try substituted(example.text).write(toFile: script, atomically: true, encoding: .utf8)
        return script
    }

    func runShell(_ example: DocumentedExample) throws -> CommandResult {
        try run(["/bin/bash", "-e", "-o", "pipefail", try script(example)])
    }

    /// Starts the block in the background (for one that does not end by itself).
    func startShell(_ example: DocumentedExample) throws -> ChildProcess {
        let (executable, arguments, environment) = try namespaceCommand([
            "/bin/bash", "-e", "-o", "pipefail", try script(example),
        ])
        let log = directory.file("shell.log")
        return try ChildProcess(executable, arguments, environment: environment, stdout: log, stderr: log)
    }

    func log(of child: ChildProcess) -> String {
        (try? String(contentsOfFile: directory.file("shell.log"), encoding: .utf8)) ?? ""
    }

    /// Exit 0, and no JSON-RPC error among the lines it printed.
    func expectSuccess(_ result: CommandResult, _ example: DocumentedExample) {
        #expect(result.status == 0, "\(example): exit \(result.status)\n\(result.stdout)\n\(result.stderr)")
        for line in result.stdout.split(separator: "\n") where line.hasPrefix("{") || line.hasPrefix("[") {
            #expect(!line.contains(#""error":"#), "\(example): \(line)")
        }
    }

    /// `httpdnsd --check-config` on `text`, with the files it names under `directory`.
    static func checkConfig(_ text: String, in directory: TemporaryDirectory) throws -> CommandResult {
        var configuration = text
        for prefix in ["/etc/httpdnsd/", "/run/credentials/httpdnsd.service/"] {
            configuration = configuration.replacing(prefix, with: directory.path + "/")
        }
        // The files such a configuration names: a signing key, a Redis password, a fleet key.
        try "a-signing-key\n".write(toFile: directory.file("secretkey"), atomically: true, encoding: .utf8)
        try "a-password\n".write(toFile: directory.file("redis-password"), atomically: true, encoding: .utf8)
        let key = String(repeating: "0123456789abcdef", count: 4) + "\n"
        for name in ["fleet.key", "fleet-key"] {
            try key.write(toFile: directory.file(name), atomically: true, encoding: .utf8)
        }
        let file = directory.file("example.conf")
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)
        return try runCommand(BuiltProducts.path("httpdnsd"), ["--check-config", file])
    }
}

/// C programs of the documentation, built as they say against the libhttpdns just built.
enum ExampleBuild {
    /// `cc SOURCE $(pkg-config --cflags --libs httpdns libcurl)` with the uninstalled library:
    /// `-I` the package's include directory and `-L` a directory with the `.so` links.
    static func cProgram(_ source: String, in directory: TemporaryDirectory) throws -> String {
        let library = directory.file("lib")
        if !FileManager.default.fileExists(atPath: library) {
            try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
            for name in ["libhttpdns.so", "libhttpdns.so.0"] {
                try FileManager.default.createSymbolicLink(
                    atPath: library + "/" + name, withDestinationPath: BuiltProducts.path("libhttpdns.so"))
            }
        }
        let curlFlags = try runCommand("/usr/bin/pkg-config", ["--cflags", "--libs", "libcurl"])
        try #require(curlFlags.status == 0, "pkg-config libcurl: \(curlFlags.stderr)")
        let program = String(source.dropLast(2))
        var compiler = "/usr/bin/gcc"
        var sanitize: [String] = []
        if let sanitizer = SanitizerOptions.active {
            // A sanitized library calls its sanitizer's runtime, which only a program built with the
            // same sanitizer carries: then the toolchain's clang builds it.
            compiler = try #require(CurlCommandTests.toolchainClang, "no clang for a -fsanitize=\(sanitizer) build")
            sanitize = ["-fsanitize=\(sanitizer)"]
            if sanitizer == "thread" {
                let swiftLibraries = (compiler as NSString).deletingLastPathComponent + "/../lib/swift/linux"
                sanitize += ["-L", swiftLibraries, "-ldispatch", "-lBlocksRuntime", "-Wl,-rpath,\(swiftLibraries)"]
            }
        }
        let build = try runCommand(
            compiler,
            [
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-I",
                BuiltProducts.packageRoot + "/Sources/HTTPDNSClientC/include",
                source, "-L", library, "-lhttpdns", "-Wl,-rpath,\(library)", "-o", program,
            ] + sanitize + curlFlags.stdout.split(whereSeparator: \.isWhitespace).map(String.init))
        try #require(build.status == 0, "\(compiler): \(build.stderr)")
        try makeExecutable(program)
        return program
    }
}
