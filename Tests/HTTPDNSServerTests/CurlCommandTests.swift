import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Two host names, a fake HTTPDNS upstream that maps them to 127.0.0.2 and 127.0.0.3, the real
/// daemon, and HTTP/HTTPS origin servers on those addresses (a throwaway CA, one certificate per
/// name). The origins and every curl run live in a private network namespace that has nothing
/// but loopback: a name that escaped `--resolve` could not be looked up outside the machine.
final class IPDirectFixture {
    static let login = "login.example.test"
    static let app = "app.example.test"
    static let addresses = [login: "127.0.0.2", app: "127.0.0.3"]
    static let originScript = BuiltProducts.packageRoot + "/Tests/python/origin_server.py"

    let directory = TemporaryDirectory(prefix: "ipd")
    let pki: TestPKI
    let upstream: FakeHTTPServer
    let daemon: DaemonHarness
    let origins: ChildProcess
    /// Per host: the HTTP and HTTPS ports.
    let ports: [String: (http: Int, https: Int)]

    var caFile: String { pki.caCertificate }
    var socketPath: String { daemon.socketPath }

    /// Each host name's origin address, as the fake upstream answers it.
    let addresses: [String: String]

    /// `documentation`: the origins serve the documentation's examples on ports 80 and 443
    /// (origin_server.py's --documentation).
    init(addresses: [String: String] = IPDirectFixture.addresses, documentation: Bool = false) throws {
        self.addresses = addresses
        pki = try TestPKI(leaves: addresses.keys.map { ($0, "DNS:\($0)") })
        upstream = try FakeHTTPServer.alibaba(
            answers: addresses.mapValues { (v4: [$0], v6: [String](), ttl: 300) })
        daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        _ = try daemon.connectReady()
        var arguments = ["-n", TestPKI.python, Self.originScript, "--dir", directory.path, "--loopback-up"]
        if documentation { arguments += ["--documentation", "--ports", "80,443"] }
        for (host, address) in addresses {
            let certificate = pki.directory.file("\(host).pem")
            arguments += ["--host", "\(host)=\(address),\(certificate),\(pki.directory.file("\(host).key"))"]
        }
        let started = try ChildProcess(
            "/usr/bin/unshare", arguments, stdout: directory.file("origins.log"), stderr: directory.file("origins.log"))
        origins = started
        // The servers write ports.json once all of them listen.
        var ports: [String: (http: Int, https: Int)] = [:]
        let portsFile = directory.file("ports.json")
        _ = eventually(15, every: 20) {
            if let data = FileManager.default.contents(atPath: portsFile),
                let json = try? JSONParser.parse(Array(data)), let object = json.objectValue
            {
                for (host, entry) in object {
                    guard let http = entry["http"]?.numberValue?.int64Value,
                        let https = entry["https"]?.numberValue?.int64Value
                    else { continue }
                    ports[host] = (Int(http), Int(https))
                }
            }
            return !ports.isEmpty || !started.isRunning
        }
        guard ports.count == addresses.count else {
            let log = (try? String(contentsOfFile: directory.file("origins.log"), encoding: .utf8)) ?? ""
            throw HarnessError("the origin servers did not start (root is needed for unshare -n): \(log)")
        }
        self.ports = ports
    }

    deinit {
        origins.signal(SIGKILL)
        _ = origins.wait(timeout: 5)
    }

    /// A URL on `host` (`login` or `app`).
    func url(_ host: String, _ scheme: String = "https", _ path: String) -> String {
        let port = scheme == "https" ? ports[host]!.https : ports[host]!.http
        return "\(scheme)://\(host):\(port)\(path)"
    }

    /// `to` percent-encoded for a query value.
    static func query(_ to: String) -> String {
        to.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? to
    }

    /// An environment without the developer's socket or curl configuration.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["HTTPDNSD_SOCKET", "XDG_RUNTIME_DIR", "CURL_HOME", "http_proxy", "https_proxy", "all_proxy"] {
            environment[name] = nil
        }
        environment["HOME"] = directory.path
        return environment
    }

    /// Runs `program` in the origins' network namespace.
    func inNamespace(
        _ program: String, _ arguments: [String], environment extra: [String: String] = [:], stdin: String? = nil
    )
        throws -> CommandResult
    {
        var environment = self.environment
        for (key, value) in extra { environment[key] = value }
        // The kernel refuses to run a file that some process still holds open for writing
        // (ETXTBSY): a program linked a moment ago can meet a descriptor on its way to being
        // closed, which nsenter reports as exit 126, "Text file busy". That start is tried again;
        // any other outcome is the program's own.
        var attempts = 0
        while true {
            attempts += 1
            let result = try runCommand(
                "/usr/bin/nsenter", ["--net=/proc/\(origins.pid)/ns/net", "--", program] + arguments,
                environment: environment, stdin: stdin)
            let textBusy = result.status == 126 && result.stderr.contains("Text file busy")
            guard textBusy && attempts < 50 else { return result }
            usleep(20_000)  // paces the retries
        }
    }

    /// `httpdnsctl --socket DAEMON curl ARGUMENTS`.
    func ctl(
        _ arguments: [String], socket: String? = nil, stdin: String? = nil, environment: [String: String] = [:]
    ) throws -> CommandResult {
        try inNamespace(
            BuiltProducts.path("httpdnsctl"), ["--socket", socket ?? socketPath, "curl"] + arguments,
            environment: environment, stdin: stdin)
    }

    /// Plain curl, with `--resolve` for both names given by the test itself: what curl prints.
    func plainCurl(_ arguments: [String]) throws -> CommandResult {
        var resolves: [String] = []
        for (host, address) in addresses {
            for port in [ports[host]!.http, ports[host]!.https] {
                resolves += ["--resolve", "\(host):\(port):\(address)"]
            }
        }
        return try inNamespace("/usr/bin/curl", resolves + arguments)
    }

    /// Every request the origins received, in order.
    var requests: [JSON] {
        let text = (try? String(contentsOfFile: directory.file("requests.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
    }

    /// What the jar holds for `url`, asked with socat as a shell script would.
    func cookieHeaderThroughSocat(_ url: String) throws -> String? {
        let request = #"{"jsonrpc":"2.0","id":1,"method":"getCookieHeader","params":{"url":"\#(url)"}}"# + "\n"
        let result = try runCommand("/usr/bin/socat", ["-t", "5", "-", "UNIX-CONNECT:\(socketPath)"], stdin: request)
        return try JSONParser.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["result"]?["header"]?
            .stringValue
    }
}

@Suite(.serialized, .enabled(if: TestPKI.toolsPresent && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
struct CurlCommandTests {
    /// Runs and expects exit 0; returns standard output.
    static func succeed(_ fixture: IPDirectFixture, _ arguments: [String]) throws -> String {
        let result = try fixture.ctl(arguments)
        #expect(result.status == 0, "httpdnsctl curl \(arguments): \(result.status) \(result.stderr)")
        return result.stdout
    }

    /// The origin's echo of the request, from standard output.
    static func echo(_ output: String) throws -> JSON {
        try JSONParser.parse(output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func loginByPostSetsADomainCookieAndFollowsToTheOtherHost() throws {
        let fixture = try IPDirectFixture()
        let home = fixture.url(IPDirectFixture.app, "https", "/home/echo")
        let login = fixture.url(
            IPDirectFixture.login, "https", "/login?domain=example.test&next=\(IPDirectFixture.query(home))")
        let result = try fixture.ctl(["-sS", "-L", "--cacert", fixture.caFile, "-d", "user=alice", login])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let landed = try Self.echo(result.stdout)

        let requests = fixture.requests
        try #require(requests.count == 2, "\(requests)")
        // The login: POST with its body, to the login host by name (Host, SNI, certificate).
        #expect(requests[0]["server"] == .string(IPDirectFixture.login))
        #expect(requests[0]["sni"] == .string(IPDirectFixture.login))
        #expect(
            requests[0]["host"] == .string("\(IPDirectFixture.login):\(fixture.ports[IPDirectFixture.login]!.https)"))
        #expect(requests[0]["method"] == "POST" && requests[0]["body"] == "user=alice")
        #expect(requests[0]["contentType"] == "application/x-www-form-urlencoded")
        // The 302 made it a GET without the body, to the other host, with the Domain cookie.
        #expect(requests[1] == landed)
        #expect(landed["server"] == .string(IPDirectFixture.app) && landed["sni"] == .string(IPDirectFixture.app))
        #expect(landed["host"] == .string("\(IPDirectFixture.app):\(fixture.ports[IPDirectFixture.app]!.https)"))
        #expect(landed["method"] == "GET" && landed["body"] == "" && landed["contentType"] == .null)
        #expect(landed["cookie"] == "sid=alice")

        // Other processes see the session: socat, and a second httpdnsctl curl that is told nothing.
        #expect(try fixture.cookieHeaderThroughSocat(fixture.url(IPDirectFixture.app, "https", "/")) == "sid=alice")
        // That one runs curl through a wrapper that records its arguments: the session cookie must
        // not be among them (other local users can read a process's arguments).
        let wrapper = fixture.directory.file("curl-wrapper")
        let recorded = fixture.directory.file("argv")
        // Written through a close-on-exec descriptor: a child that another test thread forks
        // meanwhile must not inherit it open for writing, or running the script fails (ETXTBSY).
        writeFile(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> \(recorded)\nexec /usr/bin/curl \"$@\"\n", to: wrapper, mode: 0o755)
        let second = try fixture.ctl(
            ["-s", "--cacert", fixture.caFile, fixture.url(IPDirectFixture.app, "https", "/x/echo")],
            environment: ["HTTPDNSCTL_CURL": wrapper])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try Self.echo(second.stdout)["cookie"] == "sid=alice")
        let arguments = try String(contentsOfFile: recorded, encoding: .utf8)
        #expect(arguments.contains("--resolve") && !arguments.contains("alice"), "\(arguments)")
        // Secure: never over plain HTTP.
        let plain = try Self.echo(try Self.succeed(fixture, ["-s", fixture.url(IPDirectFixture.app, "http", "/echo")]))
        #expect(plain["cookie"] == .null)
    }

    @Test(arguments: [
        (303, ["-d", "a=1"], "GET", ""), (302, ["-d", "a=1"], "GET", ""), (301, ["-d", "a=1"], "GET", ""),
        (307, ["-d", "a=1"], "POST", "a=1"), (308, ["-d", "a=1"], "POST", "a=1"),
        (301, ["-X", "PUT", "-d", "a=1"], "PUT", ""), (303, ["-X", "PUT", "-d", "a=1"], "PUT", ""),
        (308, ["-X", "PUT", "-d", "a=1"], "PUT", "a=1"), (302, ["-X", "POST", "-d", "a=1"], "POST", ""),
        (307, ["-X", "PATCH", "-d", "a=1", "-H", "Content-Type: text/x-test"], "PATCH", "a=1"),
        (303, ["-d", "{}", "-H", "Content-Type: application/json"], "GET", ""),
    ])
    func methodAndBodyFollowCurl(status: Int, options: [String], method: String, body: String) throws {
        let fixture = try IPDirectFixture()
        let target = fixture.url(IPDirectFixture.app, "http", "/echo")
        let start = fixture.url(
            IPDirectFixture.login, "http", "/redirect?status=\(status)&to=\(IPDirectFixture.query(target))")
        let landed = try Self.echo(try Self.succeed(fixture, ["-sSL"] + options + [start]))
        #expect(landed["method"] == .string(method), "\(status) after \(options): \(landed.encodedString)")
        #expect(landed["body"] == .string(body))
        if body.isEmpty {
            #expect(landed["contentType"] == .null, "body headers must go with the body: \(landed.encodedString)")
        } else {
            #expect(landed["contentType"] != .null)
        }
        #expect(fixture.requests.first?["method"] == .string(options.contains("-X") ? options[1] : "POST"))
    }

    /// Side by side with the real curl -L on the same origin: the method and the body that each
    /// hop brought, for every redirect code and every way of asking for a method. curl 7.88
    /// decides by its own kind of request (data or a form is a POST, -T a PUT), never by -X, and
    /// sends -X on every hop, without the body where it would have switched to GET.
    @Test func redirectsChangeTheMethodAndBodyAsTheRealCurlDoes() throws {
        let fixture = try IPDirectFixture()
        let upload = fixture.directory.file("upload.txt")
        writeFile("uploaded\n", to: upload, mode: 0o600)
        let target = fixture.url(IPDirectFixture.app, "http", "/echo")
        let optionSets: [[String]] = [
            ["-X", "PUT", "-d", "x=1"], ["-X", "POST", "-d", "x=1"], ["-d", "x=1"], ["-X", "GET", "-d", "x=1"],
            ["-d", "x=1", "--post301"], ["-d", "x=1", "--post302"], ["-d", "x=1", "--post303"],
            ["-X", "PUT", "-d", "x=1", "--post301", "--post302", "--post303"], ["-T", upload],
            ["-X", "POST", "-T", upload],
            ["-X", "DELETE"], ["-I"], ["--json", "{}"],
        ]
        func seen(_ run: () throws -> CommandResult) throws -> [String] {
            let before = fixture.requests.count
            let result = try run()
            #expect(result.status == 0, "\(result.stderr)")
            return fixture.requests.dropFirst(before).map { request in
                "\(request["method"]?.stringValue ?? "?") \(request["body"]?.stringValue ?? "?")"
            }
        }
        // Each code alone, and chains where a later hop meets a request an earlier one changed.
        let chains = [[301], [302], [303], [307], [308], [303, 307], [301, 308], [307, 302]]
        for options in optionSets {
            for chain in chains {
                var start = target
                for status in chain.reversed() {
                    start = fixture.url(
                        IPDirectFixture.login, "http", "/redirect?status=\(status)&to=\(IPDirectFixture.query(start))")
                }
                let arguments = ["-sSL", "-o", "/dev/null"] + options + [start]
                let curl = try seen { try fixture.plainCurl(arguments) }
                let ctl = try seen { try fixture.ctl(arguments) }
                #expect(curl.count == chain.count + 1, "\(chain) \(options): curl \(curl)")
                #expect(ctl == curl, "\(chain) \(options): curl \(curl), httpdnsctl \(ctl)")
            }
        }
        // A form's body has a random boundary: the method on each hop and whether a body came.
        for chain in [[301], [303], [307], [308]] {
            let start = fixture.url(
                IPDirectFixture.login, "http", "/redirect?status=\(chain[0])&to=\(IPDirectFixture.query(target))")
            for options in [["-F", "a=b"], ["-X", "PUT", "-F", "a=b"]] {
                let arguments = ["-sSL", "-o", "/dev/null"] + options + [start]
                func shape(_ hops: [String]) -> [String] {
                    hops.map { hop in String(hop.prefix { $0 != " " }) + (hop.hasSuffix(" ") ? " -" : " body") }
                }
                let curl = shape(try seen { try fixture.plainCurl(arguments) })
                let ctl = shape(try seen { try fixture.ctl(arguments) })
                #expect(curl.count == 2 && ctl == curl, "\(chain) \(options): curl \(curl), httpdnsctl \(ctl)")
            }
        }
    }

    @Test func relativeLocationsResolveAgainstTheCurrentURL() throws {
        let fixture = try IPDirectFixture()
        let relative = fixture.url(IPDirectFixture.login, "https", "/dir/sub/redirect?status=302&to=..%2Fecho%3Fx%3D1")
        let landed = try Self.echo(try Self.succeed(fixture, ["-sL", "--cacert", fixture.caFile, relative]))
        #expect(landed["path"] == "/dir/echo?x=1" && landed["server"] == .string(IPDirectFixture.login))

        // Scheme-relative: another host, the same scheme, resolved through the daemon too.
        let port = fixture.ports[IPDirectFixture.app]!.https
        let other = fixture.url(
            IPDirectFixture.login, "https", "/redirect?status=301&to=%2F%2F\(IPDirectFixture.app)%3A\(port)%2Fecho")
        let crossed = try Self.echo(try Self.succeed(fixture, ["-sL", "--cacert", fixture.caFile, other]))
        #expect(crossed["server"] == .string(IPDirectFixture.app) && crossed["sni"] == .string(IPDirectFixture.app))
    }

    @Test func aRedirectLoopStopsAtTheHopLimitWithCurlsExitCode() throws {
        let fixture = try IPDirectFixture()
        let loop = fixture.url(IPDirectFixture.login, "http", "/a/loop")
        let limited = try fixture.ctl(["-sS", "-L", "--max-redirs", "3", loop])
        #expect(limited.status == 47)
        #expect(limited.stdout.isEmpty)
        #expect(limited.stderr.contains("Maximum (3) redirects followed"), "\(limited.stderr)")
        #expect(!limited.stderr.contains("Maximum (0)"), "httpdnsctl's own stop must not show: \(limited.stderr)")
        #expect(fixture.requests.count == 4)

        // curl's default limit is 50 redirects: 51 requests.
        let unlimited = try fixture.ctl(["-s", "-L", "-w", "%{http_code} %{num_redirects}", loop])
        #expect(unlimited.status == 47 && unlimited.stderr.isEmpty)
        #expect(unlimited.stdout == "302 50")
        #expect(fixture.requests.count == 4 + 51)

        // Without -L nothing is followed: the 302 itself is the answer, as with curl.
        let once = try fixture.ctl(["-s", "-w", "%{http_code}", loop])
        #expect(once.status == 0 && once.stdout == "again\n302")
    }

    @Test func aCookieSetOnTheRedirectItselfIsSentOnTheNextHop() throws {
        let fixture = try IPDirectFixture()
        let next = fixture.url(IPDirectFixture.login, "http", "/next/echo")
        let start = fixture.url(
            IPDirectFixture.login, "http", "/redirect?status=302&cookie=hop%3D1&to=\(IPDirectFixture.query(next))")
        let landed = try Self.echo(try Self.succeed(fixture, ["-sL", start]))
        #expect(landed["cookie"] == "hop=1")

        // A host-only cookie stays with its host: not sent to the other one.
        let away = fixture.url(IPDirectFixture.app, "http", "/echo")
        let crossing = fixture.url(
            IPDirectFixture.login, "http", "/redirect?status=302&cookie=only%3D1&to=\(IPDirectFixture.query(away))")
        let elsewhere = try Self.echo(try Self.succeed(fixture, ["-sL", crossing]))
        #expect(elsewhere["server"] == .string(IPDirectFixture.app) && elsewhere["cookie"] == .null)
    }

    @Test func failOnA404GivesCurlsExitCode22() throws {
        let fixture = try IPDirectFixture()
        let missing = fixture.url(IPDirectFixture.app, "https", "/notfound")
        let failed = try fixture.ctl(["-sSf", "--cacert", fixture.caFile, missing])
        #expect(failed.status == 22)
        #expect(failed.stdout.isEmpty)
        #expect(failed.stderr.contains("404"), "\(failed.stderr)")
        let body = try fixture.ctl(["-s", "--cacert", fixture.caFile, missing])
        #expect(body.status == 0 && body.stdout == "missing\n")
    }

    @Test func theUsersCookieHeaderIsMergedWithTheJars() throws {
        let fixture = try IPDirectFixture()
        let setter = fixture.url(IPDirectFixture.app, "http", "/redirect?status=302&cookie=sid%3Djar&to=echo")
        _ = try Self.succeed(fixture, ["-sL", setter])
        let echo = fixture.url(IPDirectFixture.app, "http", "/echo")
        let merged = try Self.echo(
            try Self.succeed(fixture, ["-s", "-H", "Cookie: theme=dark", "-b", "lang=en", echo]))
        #expect(merged["cookie"] == "lang=en; theme=dark; sid=jar")
        let overridden = try Self.echo(try Self.succeed(fixture, ["-s", "-H", "Cookie: sid=mine", echo]))
        #expect(overridden["cookie"] == "sid=mine")
        let removed = try Self.echo(try Self.succeed(fixture, ["-s", "-H", "Cookie:", echo]))
        #expect(removed["cookie"] == .null)
    }

    /// curl sends one Cookie header: its engine's cookies (from `-b FILE`) and its cookie string
    /// together. So do the jar's cookies with a `-b FILE`, both pairs kept when a name is in both.
    @Test func aCookieFileAndTheJarGoInOneCookieHeader() throws {
        let fixture = try IPDirectFixture()
        let setter = fixture.url(IPDirectFixture.app, "http", "/redirect?status=302&cookie=sid%3Djar&to=echo")
        _ = try Self.succeed(fixture, ["-sL", setter])
        let file = fixture.directory.file("cookies.txt")
        writeFile("\(IPDirectFixture.app)\tFALSE\t/\tFALSE\t0\tsid\tfile\n", to: file, mode: 0o600)
        let echo = fixture.url(IPDirectFixture.app, "http", "/echo")
        let merged = try Self.echo(try Self.succeed(fixture, ["-s", "-b", file, "-b", "lang=en", echo]))
        #expect(merged["cookieFields"] == 1, "\(merged)")
        #expect(merged["cookie"] == "sid=file; lang=en; sid=jar")
        // On every hop of a chain, each hop's curl reading the file again.
        let chained = try Self.echo(try Self.succeed(fixture, ["-sL", "-b", file, setter]))
        #expect(chained["cookieFields"] == 1, "\(chained)")
        #expect(chained["cookie"] == "sid=file; sid=jar")
    }

    /// An IP-address URL that the caller's resolves gave two names, with no Host header: the jar
    /// cannot say whose login the response sets, so nothing is sent (the issue: the login's
    /// cookies were dropped, nothing said, exit 0), with a message naming both hosts.
    @Test func anAmbiguousAddressStopsBeforeTheRequestAndSaysWhichHostsItCouldBe() throws {
        let (login, app) = (IPDirectFixture.login, IPDirectFixture.app)
        let fixture = try IPDirectFixture(addresses: [login: "127.0.0.2", app: "127.0.0.2"])
        let resolved = try runCommand(
            BuiltProducts.path("httpdnsctl"), ["--socket", fixture.socketPath, "resolve", login, app],
            environment: fixture.environment)
        #expect(resolved.status == 0, "\(resolved.stderr)")
        let url = "http://127.0.0.2:\(fixture.ports[login]!.http)/redirect?status=302&cookie=sid%3Dalice&to=echo"
        for options in [["-v"], ["-sS"], ["-s"], ["-sS", "-H", "Cookie:"], ["-sSL", "-b", "lang=en"]] {
            let result = try fixture.ctl(options + ["-d", "user=alice", url])
            #expect(result.status == 68, "\(options): \(result.status) \(result.stderr)")
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 2 && lines[1].isEmpty, "\(options): \(result.stderr)")
            let line = String(lines[0])
            #expect(line.hasPrefix("httpdnsctl: 127.0.0.2 is the address of several hosts"), "\(line)")
            #expect(line.contains(login) && line.contains(app) && line.contains("-H 'Host: NAME'"), "\(line)")
        }
        #expect(fixture.requests.isEmpty, "nothing may be sent: \(fixture.requests)")

        // Named, it runs and the cookie goes to that host's jar.
        let named = try fixture.ctl(["-sS", "-H", "Host: \(login)", "-d", "user=alice", url])
        #expect(named.status == 0 && named.stderr.isEmpty, "\(named.status) \(named.stderr)")
        #expect(fixture.requests.count == 1)
        #expect(try fixture.cookieHeaderThroughSocat("http://\(login)/") == "sid=alice")
    }

    /// Without -v, every Set-Cookie the jar refused gets a warning line (name, host, reason, never
    /// the value), where curl prints nothing; with -v the verbose lines say it instead.
    @Test func refusedCookiesAreWarnedAboutWithoutVerbose() throws {
        let fixture = try IPDirectFixture()
        let cookies = ["sid=topsecret1; Domain=example.org", "ok=1", "__Host-x=topsecret2; Path=/"]
        let query = cookies.map { "cookie=\(IPDirectFixture.query($0))" }.joined(separator: "&")
        let setter = fixture.url(IPDirectFixture.app, "http", "/redirect?status=302&\(query)&to=echo")
        let curl = try fixture.plainCurl(["-sS", "-L", setter])
        #expect(curl.status == 0 && curl.stderr.isEmpty)
        let result = try fixture.ctl(["-sS", "-L", setter])
        #expect(result.status == 0)
        #expect(
            result.stderr == """
                httpdnsctl: warning: cookie sid from app.example.test rejected (domain-mismatch)
                httpdnsctl: warning: cookie __Host-x from app.example.test rejected (prefix)

                """, "\(result.stderr)")
        #expect(try Self.echo(result.stdout)["cookie"] == "ok=1")
        // -s alone silences httpdnsctl's warnings as it does curl's errors.
        #expect(try fixture.ctl(["-s", "-L", setter]).stderr.isEmpty)
        let verbose = try fixture.ctl(["-v", "-L", setter])
        #expect(!verbose.stderr.contains("warning"), "\(verbose.stderr)")
        #expect(verbose.stderr.contains("* httpdnsctl: rejected sid (domain-mismatch)"), "\(verbose.stderr)")
        let own = verbose.stderr.split(separator: "\n").filter { $0.hasPrefix("* httpdnsctl") }
        #expect(!own.isEmpty && !own.contains { $0.contains("topsecret") }, "\(own)")
    }

    /// A daemon that fails to store the cookies: one warning per cookie, the value never shown.
    @Test func cookiesTheDaemonCouldNotStoreAreWarnedAbout() throws {
        let fixture = try IPDirectFixture()
        let daemon = try FakeRPCServer { request, _ in
            switch request.method {
            case "getCookieHeader": return .result(.object(["header": .string(""), "count": .int(0)]))
            default: return .error(.internalError("the state directory is full"))
            }
        }
        defer { daemon.stop() }
        let address = IPDirectFixture.addresses[IPDirectFixture.app]!
        let url =
            "http://\(address):\(fixture.ports[IPDirectFixture.app]!.http)/redirect?status=302&cookie=sid%3Dtopsecret&cookie=b%3D2&to=echo"
        let result = try fixture.ctl(["-sS", url], socket: daemon.socketPath)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr == """
                httpdnsctl: warning: cookie sid from \(address) not stored: Internal error: the state directory is full (InternalError)
                httpdnsctl: warning: cookie b from \(address) not stored: Internal error: the state directory is full (InternalError)

                """, "\(result.stderr)")
    }

    /// A jar value curl cannot take as its cookie string (8200 bytes or more, or without `=`)
    /// still goes in the one Cookie header of a `-b FILE` request: httpdnsctl sends the file's
    /// cookies itself, first, as curl's engine would, and `-c` still gets them.
    @Test func aCookieFileAndALongOrNamelessJarValueGoInOneCookieHeader() throws {
        let fixture = try IPDirectFixture()
        let ctl = BuiltProducts.path("httpdnsctl")
        let site = "http://\(IPDirectFixture.app)/"
        let big = (1...3).map { "big\($0)=" + String(repeating: Character(String($0)), count: 3000) }
        let stored = try runCommand(
            ctl, ["--socket", fixture.socketPath, "cookie", "set", site] + big, environment: fixture.environment)
        #expect(stored.status == 0, "\(stored.stdout) \(stored.stderr)")
        let file = fixture.directory.file("cookies.txt")
        writeFile(
            "# Netscape HTTP Cookie File\n\(IPDirectFixture.app)\tFALSE\t/\tFALSE\t0\tsid\tfile\n"
                + ".example.test\tTRUE\t/echo\tFALSE\t0\tlong\t1\n"
                + "other.example\tFALSE\t/\tFALSE\t0\telsewhere\t1\n", to: file, mode: 0o600)
        let echo = fixture.url(IPDirectFixture.app, "http", "/echo")
        let jar = fixture.directory.file("out.txt")
        let long = try Self.echo(try Self.succeed(fixture, ["-s", "-b", file, "-c", jar, echo]))
        #expect(long["cookieFields"] == 1, "\(long["cookieFields"] ?? .null)")
        let expected = (["long=1", "sid=file"] + big).joined(separator: "; ")
        #expect(expected.utf8.count >= 8200)
        #expect(long["cookie"] == .string(expected), "\(long["cookie"]?.stringValue?.prefix(80) ?? "")")
        let written = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(written.contains("\tsid\tfile") && written.contains("\tlong\t1"), "\(written)")
        #expect(written.contains("\telsewhere\t1"), "\(written)")

        // A jar that holds only a nameless cookie: no `=`, which curl would read as a file name.
        _ = try runCommand(
            ctl, ["--socket", fixture.socketPath, "cookie", "delete", "--all"], environment: fixture.environment)
        let nameless = try runCommand(
            ctl, ["--socket", fixture.socketPath, "cookie", "set", site, "token"], environment: fixture.environment)
        #expect(nameless.status == 0, "\(nameless.stdout) \(nameless.stderr)")
        let plain = try Self.echo(try Self.succeed(fixture, ["-s", "-b", file, echo]))
        #expect(plain["cookieFields"] == 1, "\(plain)")
        #expect(plain["cookie"] == "long=1; sid=file; token", "\(plain)")
    }

    /// httpdnsctl's standard output and files, against plain curl's for the same options.
    @Test(arguments: [
        ["-i"], ["-w", "%{http_code} %{num_redirects} %{url_effective}\\n"], ["-D", "-"], ["-D", "-", "-o", "FILE"],
        ["-o", "FILE", "-w", "%{size_download}\\n"], ["-i", "-o", "FILE"], ["-D", "FILE"],
        ["-w", "%{stderr}err %{stdout}out\\n", "-i"], ["-I"],
    ])
    func outputsAreWhatCurlWouldPrint(options: [String]) throws {
        let fixture = try IPDirectFixture()
        let start = fixture.url(IPDirectFixture.login, "https", "/x/static-redirect")
        func run(_ file: String, _ body: ([String]) throws -> CommandResult) throws -> (CommandResult, String) {
            let path = fixture.directory.file(file)
            let result = try body(
                ["-s", "-L", "--cacert", fixture.caFile] + options.map { $0 == "FILE" ? path : $0 } + [start])
            return (result, (try? String(contentsOfFile: path, encoding: .utf8)) ?? "(none)")
        }
        let (ours, ourFile) = try run("ours") { try fixture.ctl($0) }
        let (theirs, theirFile) = try run("theirs") { try fixture.plainCurl($0) }
        #expect(ours.status == theirs.status)
        #expect(
            ours.stdout == theirs.stdout, "\(options)\n--- httpdnsctl:\n\(ours.stdout)\n--- curl:\n\(theirs.stdout)")
        #expect(ours.stderr == theirs.stderr, "\(options)")
        #expect(ourFile == theirFile, "\(options)\n--- httpdnsctl:\n\(ourFile)\n--- curl:\n\(theirFile)")
        #expect(!theirs.stdout.isEmpty || theirFile != "(none)", "the comparison compared nothing")
    }

    @Test func anUnreachableDaemonExits69WithoutRunningCurlUnlessFallback() throws {
        let fixture = try IPDirectFixture()
        let absent = fixture.directory.file("absent.sock")
        let url = fixture.url(IPDirectFixture.app, "http", "/echo")
        let refused = try fixture.ctl(["-s", url], socket: absent)
        #expect(refused.status == 69)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr.contains("curl not run"), "\(refused.stderr)")
        #expect(fixture.requests.isEmpty)

        // --fallback runs curl plainly: with its own --resolve here, as nothing else resolves in the namespace.
        let address = IPDirectFixture.addresses[IPDirectFixture.app]!
        let port = fixture.ports[IPDirectFixture.app]!.http
        let plain = try fixture.ctl(
            ["--fallback", "-s", "--resolve", "\(IPDirectFixture.app):\(port):\(address)", url], socket: absent)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try Self.echo(plain.stdout)["server"] == .string(IPDirectFixture.app))
        #expect(fixture.requests.count == 1)
    }

    @Test func standardInputIsSentAgainAfterA307() throws {
        let fixture = try IPDirectFixture()
        let target = fixture.url(IPDirectFixture.app, "http", "/echo")
        let start = fixture.url(
            IPDirectFixture.login, "http", "/redirect?status=307&to=\(IPDirectFixture.query(target))")
        let result = try fixture.ctl(["-sL", "--data-binary", "@-", start], stdin: "from stdin")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Self.echo(result.stdout)["body"] == "from stdin")
        #expect(fixture.requests.first?["body"] == "from stdin")
    }

    /// The clang of the Swift toolchain on PATH (it carries the sanitizer runtimes swiftc links).
    static var toolchainClang: String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let clang = "\(directory)/clang"
            if FileManager.default.isExecutableFile(atPath: "\(directory)/swiftc")
                && FileManager.default.isExecutableFile(atPath: clang)
            {
                return clang
            }
        }
        return nil
    }

    /// The README's libcurl program, built as the README says (with -Wall -Werror) against the
    /// built libhttpdns.so: it logs in across hosts, and httpdnsctl then rides its session.
    @Test func theReadmeLibcurlExampleFollowsACrossHostLogin() throws {
        let fixture = try IPDirectFixture()
        let program = try fixture.buildReadmeExample()

        let home = fixture.url(IPDirectFixture.app, "https", "/home/echo")
        let login = fixture.url(
            IPDirectFixture.login, "https", "/login?domain=example.test&next=\(IPDirectFixture.query(home))")
        let run = try fixture.inNamespace(
            program, [login, "user=carol"],
            environment: ["HTTPDNSD_SOCKET": fixture.socketPath, "CURL_CA_BUNDLE": fixture.caFile])
        #expect(run.status == 0, "\(run.stderr)")
        let landed = try Self.echo(run.stdout)
        #expect(landed["server"] == .string(IPDirectFixture.app) && landed["sni"] == .string(IPDirectFixture.app))
        #expect(landed["method"] == "GET" && landed["cookie"] == "sid=carol")
        let requests = fixture.requests
        #expect(requests.count == 2 && requests.first?["method"] == "POST" && requests.first?["body"] == "user=carol")

        // The C client's session is everyone's.
        let again = try Self.echo(
            try Self.succeed(
                fixture, ["-s", "--cacert", fixture.caFile, fixture.url(IPDirectFixture.app, "https", "/echo")]))
        #expect(again["cookie"] == "sid=carol")
    }
}

extension IPDirectFixture {
    /// The README's libcurl program (`ipdirect.c`), cut from the README and built as it says
    /// (`-Wall -Werror`) against the library just built; its path.
    func buildReadmeExample() throws -> String {
        let readme = try String(contentsOfFile: BuiltProducts.packageRoot + "/README.md", encoding: .utf8)
        let marker = "<!-- example: covered by CurlCommandTests.theReadmeLibcurlExampleFollowsACrossHostLogin"
        let example = try #require(MarkdownBlocks.block(after: marker, in: readme), "the README lost its example")
        let source = directory.file("ipdirect.c")
        try example.write(toFile: source, atomically: true, encoding: .utf8)
        return try ExampleBuild.cProgram(source, in: directory)
    }
}
