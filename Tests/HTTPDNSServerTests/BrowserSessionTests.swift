import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// Two made-up host names that the fake HTTPDNS upstream points at 127.0.0.2 and 127.0.0.3, the
/// real daemon, HTTP origins listening only on those addresses, and `httpdnsctl browser open`
/// running headless Chromium. The origins, httpdnsctl and the browser live in a private network
/// namespace with nothing but loopback: no name there resolves except through the daemon (the
/// browser's proxy is httpdnsctl's), and nothing can leave the machine.
final class BrowserFixture {
    static let login = "login.example.test"
    static let app = "app.example.test"
    /// Another site: framed by the app, it is an out-of-process frame under site isolation.
    static let widget = "widget.other.test"
    static let addresses = [login: "127.0.0.2", app: "127.0.0.3", widget: "127.0.0.4"]
    static let originScript = BuiltProducts.packageRoot + "/Tests/python/browser_origin.py"
    static let chromium = "/usr/bin/chromium"

    let directory = TemporaryDirectory(prefix: "brw")
    let upstream: FakeHTTPServer
    let daemon: DaemonHarness
    let origins: ChildProcess
    /// Per host: its HTTP port and, with `https`, its HTTPS port.
    let ports: [String: (http: Int, https: Int?)]
    /// With `https`: the CA the origins' certificates come from, trusted by the browser through
    /// the NSS database in the fixture's HOME, and by curl through `--cacert`.
    let pki: TestPKI?

    init(https: Bool = false) throws {
        guard Files.exists(Self.chromium) else {
            throw HarnessError("\(Self.chromium) is missing: install chromium (.ci/install-deps installs it)")
        }
        upstream = try FakeHTTPServer.alibaba(answers: Self.addresses.mapValues { (v4: [$0], v6: [], ttl: 300) })
        daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        _ = try daemon.connectReady()
        pki = https ? try TestPKI(leaves: Self.addresses.keys.map { ($0, "DNS:\($0)") }) : nil
        if let pki { try Self.trustInNSSDatabase(pki.caCertificate, home: directory.path) }
        var arguments = ["-n", "/usr/bin/python3", Self.originScript, "--dir", directory.path, "--loopback-up"]
        for (host, address) in Self.addresses {
            let certificate = pki.map { ",\($0.directory.file("\(host).pem")),\($0.directory.file("\(host).key"))" }
            arguments += ["--host", "\(host)=\(address)\(certificate ?? "")"]
        }
        let log = directory.file("origins.log")
        origins = try ChildProcess("/usr/bin/unshare", arguments, stdout: log, stderr: log)
        var ports: [String: (http: Int, https: Int?)] = [:]
        let started = origins
        let portsFile = directory.file("ports.json")
        _ = eventually(15, every: 20) {
            if let data = FileManager.default.contents(atPath: portsFile),
                let object = (try? JSONParser.parse(Array(data)))?.objectValue
            {
                for (host, entry) in object {
                    guard let http = entry["http"]?.numberValue?.int64Value else { continue }
                    ports[host] = (Int(http), entry["https"]?.numberValue?.int64Value.map { Int($0) })
                }
            }
            return !ports.isEmpty || !started.isRunning
        }
        guard ports.count == Self.addresses.count else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw HarnessError("the origin servers did not start (root is needed for unshare -n): \(text)")
        }
        self.ports = ports
    }

    deinit {
        origins.signal(SIGKILL)
        _ = origins.wait(timeout: 5)
    }

    func url(_ host: String, _ pathAndQuery: String, https: Bool = false) -> String {
        https
            ? "https://\(host):\(ports[host]!.https!)\(pathAndQuery)"
            : "http://\(host):\(ports[host]!.http)\(pathAndQuery)"
    }

    /// Chromium on Linux trusts the CAs of the NSS database in $HOME/.pki/nssdb.
    static func trustInNSSDatabase(_ caFile: String, home: String) throws {
        let database = "sql:\(home)/.pki/nssdb"
        try Files.createDirectory(home + "/.pki")
        try Files.createDirectory(home + "/.pki/nssdb", mode: 0o700)
        for arguments in [["-N", "--empty-password"], ["-A", "-t", "C,,", "-n", "httpdnsd test CA", "-i", caFile]] {
            let result = try runCommand("/usr/bin/certutil", ["-d", database] + arguments)
            guard result.status == 0 else {
                throw HarnessError("certutil \(arguments): \(result.stderr) (libnss3-tools installs certutil)")
            }
        }
    }

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["HTTPDNSD_SOCKET", "XDG_RUNTIME_DIR", "CURL_HOME", "http_proxy", "https_proxy", "all_proxy"] {
            environment[name] = nil
        }
        environment["HOME"] = directory.path
        return environment
    }

    private var namespace: [String] { ["/usr/bin/nsenter", "--net=/proc/\(origins.pid)/ns/net", "--"] }

    /// httpdnsctl against `daemon` (this fixture's when nil), inside the namespace.
    func ctl(_ arguments: [String], daemon: DaemonHarness? = nil) throws -> CommandResult {
        let command = namespace + [BuiltProducts.path("httpdnsctl"), "--socket", (daemon ?? self.daemon).socketPath]
        return try runCommand(command[0], Array(command.dropFirst()) + arguments, environment: environment)
    }

    /// Runs a program inside the namespace.
    func inNamespace(_ command: [String]) throws -> CommandResult {
        let full = namespace + command
        return try runCommand(full[0], Array(full.dropFirst()), environment: environment)
    }

    /// A native login as `user` with `httpdnsctl curl -L`: a POST to the login host whose 302
    /// goes to the app host; each sets a host-only cookie.
    func nativeLogin(_ user: String, https: Bool = false) throws {
        let next = url(Self.app, "/welcome?user=\(user)", https: https)
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let trust = pki.map { ["--cacert", $0.caCertificate] } ?? []
        let result = try ctl(
            ["curl", "-sSfL", "-o", "/dev/null"] + trust
                + ["-d", "user=\(user)", url(Self.login, "/login?next=\(next)", https: https)])
        #expect(result.status == 0, "native login: \(result.stderr)")
    }

    /// The jar as `listCookies` shows it.
    func jar(daemon: DaemonHarness? = nil) throws -> [JSON] {
        let result = try ctl(["--json", "cookie", "list"], daemon: daemon)
        return try JSONParser.parse(result.stdout)["cookies"]?.arrayValue ?? []
    }

    func cookie(_ name: String, daemon: DaemonHarness? = nil) throws -> JSON? {
        try jar(daemon: daemon).first { $0["name"]?.stringValue == name }
    }

    /// Every request the origins received, oldest first.
    var requests: [JSON] {
        let text = (try? String(contentsOfFile: directory.file("requests.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
    }

    func requests(_ path: String) -> [JSON] { requests.filter { $0["path"]?.stringValue == path } }

    /// `httpdnsctl browser open --verbose URL` running headless in the namespace.
    func openBrowser(_ url: String, daemon: DaemonHarness? = nil, name: String = "browser") throws -> BrowserRun {
        let log = directory.file("\(name).log")
        let command =
            namespace + [
                BuiltProducts.path("httpdnsctl"), "--socket", (daemon ?? self.daemon).socketPath, "browser", "open",
                "--verbose", url, "--", "--headless=new", "--no-sandbox",
            ]
        let process = try ChildProcess(
            command[0], Array(command.dropFirst()), environment: environment, stdout: log, stderr: log)
        return BrowserRun(process: process, logPath: log)
    }
}

/// One `httpdnsctl browser open` and what it said.
final class BrowserRun {
    let process: ChildProcess
    let logPath: String

    init(process: ChildProcess, logPath: String) {
        self.process = process
        self.logPath = logPath
    }

    deinit { stop() }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The number after `prefix` in the log's first line that has it.
    private func number(after prefix: String) -> Int32? {
        guard let range = log.range(of: prefix) else { return nil }
        return Int32(log[range.upperBound...].prefix { $0.isNumber })
    }

    var browserPID: Int32? { number(after: "as pid ") }
    var proxyPort: Int32? { number(after: "proxy http://127.0.0.1:") }

    /// The latest running counts: (handleSetCookie, Storage.setCookies).
    var writes: (Int, Int) {
        guard let line = log.split(separator: "\n").last(where: { $0.contains("writes: handleSetCookie=") }) else {
            return (0, 0)
        }
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        return (numbers.count >= 2 ? numbers[numbers.count - 2] : 0, numbers.last ?? 0)
    }

    /// Waits until the page is open, or fails saying why (the browser's own messages included).
    func waitUntilOpen() throws {
        guard eventually(60, every: 50, { log.contains("httpdnsctl browser: opened ") || !process.isRunning }),
            process.isRunning
        else {
            throw HarnessError("the browser did not open the page: \(log)")
        }
    }

    func stop() {
        guard process.isRunning else { return }
        process.signal(SIGTERM)
        if process.wait(timeout: 20) == nil {
            process.signal(SIGKILL)
            _ = process.wait(timeout: 5)
        }
    }
}

@Suite(.serialized)
struct BrowserSessionTests {
    /// Seconds since the epoch, as the origins stamp their requests.
    static func now() -> Double { Double(WallClock.nowMilliseconds()) / 1000 }

    /// A native login shows in the browser's very first request, at the daemon's address; the
    /// page's script cookie reaches the daemon and HttpOnly cookies never reach the script; a
    /// native logout shows in the browser's next requests; the two sides stop writing to each
    /// other once a change has been carried; only the caller's programs may use the proxy; and
    /// the browser goes when httpdnsctl does.
    @Test func aNativeSessionIsSharedLiveWithTheBrowser() throws {
        let fixture = try BrowserFixture()
        try fixture.nativeLogin("alice")
        let browser = try fixture.openBrowser(fixture.url(BrowserFixture.app, "/app?js=fromscript"))
        try browser.waitUntilOpen()

        #expect(
            eventually(30, every: 50) { !fixture.requests("/report").isEmpty }, "the page never ran: \(browser.log)")
        let first = try #require(fixture.requests("/app").first)
        #expect(first["address"] == "127.0.0.3", "the browser reached the app at \(first.encodedString)")
        let firstCookies = first["cookie"]?.stringValue ?? ""
        #expect(firstCookies.contains("sid=alice"), "the first request's Cookie: \(firstCookies)")
        let seen = fixture.requests("/report").first?["query"]?["dc"]?.stringValue ?? ""
        #expect(seen.contains("theme=dark") && seen.contains("js=fromscript"), "document.cookie: \(seen)")
        #expect(!seen.contains("sid="), "an HttpOnly cookie reached document.cookie: \(seen)")

        // The script's cookie, natively.
        #expect(try eventually(15, every: 100) { try fixture.cookie("js")?["value"] == "fromscript" })
        let native = try fixture.ctl(["curl", "-sS", fixture.url(BrowserFixture.app, "/whoami")])
        #expect(native.stdout.contains("js=fromscript"), "\(native.stdout) \(native.stderr)")

        // Another user's program may not use this user's proxy; the caller's may.
        let port = try #require(browser.proxyPort, "\(browser.log)")
        let proxied = [
            "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", "http://127.0.0.1:\(port)",
            fixture.url(BrowserFixture.app, "/whoami"),
        ]
        #expect(try fixture.inNamespace(proxied).stdout == "200")
        let stranger = try fixture.inNamespace(
            ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + proxied)
        #expect(stranger.stdout != "200", "uid 65534 used the proxy: \(stranger.stdout) \(stranger.stderr)")

        // A native logout reaches the browser's next requests.
        #expect(
            eventually(15, every: 50) {
                fixture.requests("/tick").contains { $0["cookie"]?.stringValue?.contains("sid=alice") == true }
            })
        let logout = try fixture.ctl(["curl", "-sSf", fixture.url(BrowserFixture.app, "/logout")])
        #expect(logout.status == 0, "\(logout.stderr)")
        #expect(try fixture.cookie("sid") == nil)
        let acknowledged = Self.now()
        #expect(
            eventually(15, every: 50) {
                fixture.requests("/tick").contains { $0["time"]!.numberValue!.doubleValue >= acknowledged + 1 }
            })
        let after = fixture.requests("/tick").first { $0["time"]!.numberValue!.doubleValue >= acknowledged + 1 }
        #expect(
            after?["cookie"]?.stringValue?.contains("sid=") == false, "after the logout: \(after?.encodedString ?? "")")
        #expect(after?["cookie"]?.stringValue?.contains("theme=dark") == true, "\(after?.encodedString ?? "")")

        // No echo: the counts of writes to each side stop growing.
        var previous: (Int, Int)?
        #expect(
            eventually(30, every: 3_000) {
                let now = browser.writes
                defer { previous = now }
                return previous.map { $0 == now } ?? false
            }, "the writes kept growing: \(browser.log)")
        let counts = browser.writes
        #expect(counts.0 >= 1 && counts.1 >= 2, "handleSetCookie and Storage.setCookies counts \(counts)")

        // httpdnsctl ending ends the browser, and removes its profile.
        let pid = try #require(browser.browserPID, "\(browser.log)")
        browser.stop()
        #expect(browser.process.wait(timeout: 1) == 0, "\(browser.log)")
        #expect(eventually(15, every: 50) { kill(pid, 0) != 0 }, "the browser \(pid) outlived httpdnsctl")
        let profile = browser.log.range(of: "profile ").map {
            String(browser.log[$0.upperBound...].prefix { !$0.isWhitespace })
        }
        #expect(profile.map { !Files.exists($0) } == true, "the profile \(profile ?? "?") stayed")
        #expect(!browser.log.contains("alice"), "a cookie value was logged: \(browser.log)")
    }

    /// A login inside the page (a form POST whose 302 goes to the other host, a host-only
    /// cookie set on each) continues natively with the same session; the browser exiting ends
    /// httpdnsctl.
    @Test func aLoginInsideThePageContinuesNatively() throws {
        let fixture = try BrowserFixture()
        let next = fixture.url(BrowserFixture.app, "/welcome?user=bob").addingPercentEncoding(
            withAllowedCharacters: .alphanumerics)!
        let action = fixture.url(BrowserFixture.login, "/login?next=\(next)")
        let browser = try fixture.openBrowser(
            fixture.url(
                BrowserFixture.login,
                "/form?action=\(action.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"))
        try browser.waitUntilOpen()
        #expect(eventually(30, every: 50) { !fixture.requests("/welcome").isEmpty }, "no login: \(browser.log)")

        #expect(
            try eventually(15, every: 100) { try fixture.cookie("sid") != nil && fixture.cookie("lsid") != nil },
            "\(browser.log)")
        // They came from the responses as they arrived (the 302 of the login host included),
        // not from a later look at the browser's store.
        for (origin, count) in [(BrowserFixture.login, 1), (BrowserFixture.app, 2)] {
            let line = "stored \(count) of \(count) Set-Cookie from \(fixture.url(origin, ""))"
            #expect(browser.log.contains(line), "no \(line): \(browser.log)")
        }
        let sid = try #require(try fixture.cookie("sid"))
        let lsid = try #require(try fixture.cookie("lsid"))
        #expect(
            sid["domain"] == "app.example.test" && sid["hostOnly"] == true && sid["httpOnly"] == true,
            "\(sid.encodedString)")
        #expect(lsid["domain"] == "login.example.test" && lsid["hostOnly"] == true, "\(lsid.encodedString)")
        let app = try fixture.ctl(["curl", "-sS", fixture.url(BrowserFixture.app, "/whoami")])
        #expect(app.stdout.contains("sid=bob") && !app.stdout.contains("lsid="), "\(app.stdout) \(app.stderr)")
        let login = try fixture.ctl(["curl", "-sS", fixture.url(BrowserFixture.login, "/whoami")])
        #expect(login.stdout.contains("lsid=browser-login") && !login.stdout.contains(" sid="), "\(login.stdout)")

        let pid = try #require(browser.browserPID, "\(browser.log)")
        kill(pid, SIGKILL)
        #expect(browser.process.wait(timeout: 30) == 0, "httpdnsctl did not end with the browser: \(browser.log)")
    }

    /// A Playwright storageState export, imported into another daemon, starts a second fresh
    /// browser logged in.
    @Test func aStorageStateExportStartsAFreshBrowserLoggedIn() throws {
        let fixture = try BrowserFixture()
        try fixture.nativeLogin("carol")
        let state = fixture.directory.file("state.json")
        #expect(try fixture.ctl(["cookie", "export", "--format", "storage-state", state]).status == 0)
        let second = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(fixture.upstream.alibabaURL())\n")
        _ = try second.connectReady()
        #expect(
            try fixture.ctl(["cookie", "import", "--format", "storage-state", state], daemon: second).stdout
                == "imported 3\n")
        #expect(try !fixture.ctl(["show-cache"], daemon: second).stdout.contains("app.example.test"))
        let browser = try fixture.openBrowser(fixture.url(BrowserFixture.app, "/app"), daemon: second)
        try browser.waitUntilOpen()
        #expect(eventually(30, every: 50) { !fixture.requests("/app").isEmpty }, "\(browser.log)")
        let first = fixture.requests("/app").first?["cookie"]?.stringValue ?? ""
        #expect(first.contains("sid=carol"), "the first request's Cookie: \(first)")
    }

    /// Over HTTPS the browser reaches the origin through the proxy's CONNECT tunnel, at the
    /// daemon's address, checking the origin's certificate itself, and its first request carries
    /// the Secure session cookie logged in natively.
    @Test func anHTTPSOriginGetsTheSessionThroughTheTunnel() throws {
        let fixture = try BrowserFixture(https: true)
        try fixture.nativeLogin("dave", https: true)
        #expect(try fixture.cookie("sid")?["secure"] == true)
        let browser = try fixture.openBrowser(fixture.url(BrowserFixture.app, "/app", https: true))
        try browser.waitUntilOpen()
        #expect(
            eventually(30, every: 50) { !fixture.requests("/report").isEmpty }, "the page never ran: \(browser.log)")
        let first = try #require(fixture.requests("/app").first)
        #expect(first["scheme"] == "https" && first["address"] == "127.0.0.3", "\(first.encodedString)")
        #expect(first["cookie"]?.stringValue?.contains("sid=dave") == true, "\(first.encodedString)")
    }

    /// What every kind of target receives reaches the daemon, not only the page's: the
    /// responses of a cross-site frame (its own document and a fetch of its script; an
    /// out-of-process frame) and the fetches of a dedicated and a service worker each set a
    /// cookie, and each is stored through the daemon for its host.
    @Test func cookiesSetInFramesAndWorkersReachTheDaemon() throws {
        let fixture = try BrowserFixture(https: true)
        let frame = fixture.url(BrowserFixture.widget, "/frame", https: true)
        let page = fixture.url(
            BrowserFixture.app, "/targets?frame=" + frame.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!,
            https: true)
        let browser = try fixture.openBrowser(page)
        try browser.waitUntilOpen()
        // Each cookie, the host it is stored for and the path whose response sets it.
        let expected = [
            ("frame", BrowserFixture.widget, "/frame"), ("framefetch", BrowserFixture.widget, "/frame-fetch"),
            ("sw", BrowserFixture.app, "/from-sw"), ("worker", BrowserFixture.app, "/from-worker"),
        ]
        for (name, host, path) in expected {
            #expect(
                eventually(30, every: 50) { !fixture.requests(path).isEmpty },
                "the browser never asked for \(path): \(browser.log)")
            var stored: JSON?
            #expect(
                try eventually(15, every: 100) {
                    stored = try fixture.cookie(name)
                    return stored != nil
                }, "\(name) never reached the daemon: \(browser.log)")
            #expect(stored?["domain"]?.stringValue == host, "\(name): \(stored?.encodedString ?? "")")
        }
        // Each kind of target was attached before it ran (httpdnsctl --verbose names them).
        for type in ["iframe", "worker", "service_worker"] {
            #expect(browser.log.contains("attached to a \(type)\n"), "no \(type) target: \(browser.log)")
        }
        #expect(!browser.log.contains("=1;"), "a cookie was logged: \(browser.log)")
    }

    /// `browser attach` joins a running browser of the caller's (its --remote-debugging-port)
    /// in a context of its own, logged in from the first request and IP-direct, and leaves the
    /// browser running when it ends; an endpoint whose socket is another user's is refused.
    @Test func attachJoinsARunningBrowserOfYoursAndRefusesAnotherUsers() throws {
        let fixture = try BrowserFixture()
        try fixture.nativeLogin("erin")
        let profile = fixture.directory.file("running-profile")
        try Files.createDirectory(profile, mode: 0o700)
        let log = fixture.directory.file("running.log")
        let command = [
            "/usr/bin/nsenter", "--net=/proc/\(fixture.origins.pid)/ns/net", "--", BrowserFixture.chromium,
            "--headless=new", "--no-sandbox", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--remote-debugging-port=0", "--user-data-dir=\(profile)", "about:blank",
        ]
        let running = try ChildProcess(command[0], Array(command.dropFirst()), stdout: log, stderr: log)
        defer {
            running.signal(SIGTERM)
            if running.wait(timeout: 15) == nil { running.signal(SIGKILL) }
        }
        // Chromium writes the port, then the path: read it once both lines are there.
        let portFile = profile + "/DevToolsActivePort"
        var lines: [Substring] = []
        #expect(
            eventually(30, every: 50) {
                lines = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: "\n")
                return lines.count >= 2 || !running.isRunning
            }, "no DevToolsActivePort")
        try #require(lines.count >= 2, "DevToolsActivePort holds \(lines)")
        let endpoint = "ws://127.0.0.1:\(lines[0])\(lines[1])"

        let attachLog = fixture.directory.file("attach.log")
        let attach = [
            "/usr/bin/nsenter", "--net=/proc/\(fixture.origins.pid)/ns/net", "--", BuiltProducts.path("httpdnsctl"),
            "--socket", fixture.daemon.socketPath, "browser", "attach", "--verbose", endpoint,
            fixture.url(BrowserFixture.app, "/app?js=attached"),
        ]
        let attached = BrowserRun(
            process: try ChildProcess(
                attach[0], Array(attach.dropFirst()), environment: fixture.environment, stdout: attachLog,
                stderr: attachLog), logPath: attachLog)
        try attached.waitUntilOpen()
        #expect(eventually(30, every: 50) { !fixture.requests("/report").isEmpty }, "\(attached.log)")
        let first = try #require(fixture.requests("/app").first)
        #expect(first["address"] == "127.0.0.3", "\(first.encodedString)")
        #expect(first["cookie"]?.stringValue?.contains("sid=erin") == true, "\(first.encodedString)")
        #expect(try eventually(15, every: 100) { try fixture.cookie("js")?["value"] == "attached" }, "\(attached.log)")
        attached.stop()
        #expect(attached.process.wait(timeout: 1) == 0, "\(attached.log)")
        #expect(running.isRunning, "attach ended the browser it attached to")

        // Another user's endpoint: refused before a byte of the session is sent.
        let stranger = try ChildProcess(
            "/usr/bin/nsenter",
            [
                "--net=/proc/\(fixture.origins.pid)/ns/net", "--", "/usr/bin/setpriv", "--reuid=65534",
                "--regid=65534", "--clear-groups", "/usr/bin/python3", "-m", "http.server", "--bind", "127.0.0.1",
                "47123",
            ], stdout: "/dev/null", stderr: "/dev/null")
        defer {
            stranger.signal(SIGKILL)
            _ = stranger.wait(timeout: 5)
        }
        var refused: CommandResult?
        #expect(
            try eventually(15, every: 100) {
                refused = try fixture.ctl(["browser", "attach", "ws://127.0.0.1:47123/devtools/browser/x"])
                return refused?.stderr.contains("cannot connect") == false
            })
        #expect(refused?.status == 71, "\(refused?.stderr ?? "")")
        #expect(refused?.stderr.contains("belongs to uid 65534") == true, "\(refused?.stderr ?? "")")
    }

    /// A browser that cannot start fails the command with the reason, never silently.
    @Test func aBrowserThatCannotStartSaysWhy() throws {
        let fixture = try BrowserFixture()
        let missing = try fixture.ctl([
            "browser", "open", "--browser", "/nonexistent/chromium", fixture.url(BrowserFixture.app, "/app"),
        ])
        #expect(
            missing.status == 71 && missing.stderr.contains("cannot start /nonexistent/chromium"), "\(missing.stderr)")
        let quits = try fixture.ctl([
            "browser", "open", "--browser", "/bin/true", fixture.url(BrowserFixture.app, "/app"),
        ])
        #expect(quits.status == 71 && quits.stderr.contains("/bin/true exited"), "\(quits.stderr)")
        let usage = try fixture.ctl(["browser", "open", "ftp://x/"])
        #expect(usage.status == 64, "\(usage.stderr)")
    }
}
