import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// `httpdnsctl curl` with the real curl, the real daemon and loopback origins (`IPDirectFixture`):
/// curl's IP-direct pattern (an IP URL with a Host header or `--host`), the user's Host header
/// with a URL that names a host, `-c` over a chain against plain `curl -L -c`, and `-v`'s
/// cookie lines.
@Suite(.serialized, .enabled(if: TestPKI.toolsPresent && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
struct CurlPatternTests {
    static let login = IPDirectFixture.login
    static let app = IPDirectFixture.app

    /// The domains of every cookie in the daemon's jar.
    static func jarDomains(_ fixture: IPDirectFixture) throws -> [String] {
        let client = try fixture.daemon.connectReady()
        let listed = try client.call("listCookies", [:], id: 1)?["result"]?["cookies"]?.arrayValue ?? []
        return listed.compactMap { $0["domain"]?.stringValue }.sorted()
    }

    /// `/redirect` on `host` over http: `status`, Location `to`, a Set-Cookie per `cookies` element.
    static func redirect(
        _ fixture: IPDirectFixture, _ host: String, _ path: String = "/redirect", status: Int = 302, to: String,
        cookies: [String] = []
    ) -> String {
        let cookieQuery = cookies.map { "&cookie=" + IPDirectFixture.query($0) }.joined()
        return fixture.url(host, "http", "\(path)?status=\(status)\(cookieQuery)&to=\(IPDirectFixture.query(to))")
    }

    @Test func anIPURLWithAHostHeaderRunsOnTheNameWithItsCertificateAndJar() throws {
        let fixture = try IPDirectFixture()
        let address = IPDirectFixture.addresses[Self.login]!
        let port = fixture.ports[Self.login]!.https
        // The login answers with a relative redirect: it stays on the name, and on the address.
        let login = "https://\(address):\(port)/login?next=%2Fhome%2Fecho"
        let result = try fixture.ctl([
            "-sS", "-L", "--cacert", fixture.caFile, "-H", "Host: \(Self.login)", "-d", "user=alice", login,
        ])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let requests = fixture.requests
        try #require(requests.count == 2, "\(requests)")
        for request in requests {
            // SNI and the certificate check used the name (the certificate names only it), and the
            // origin got the user's Host header as written.
            #expect(request["server"] == .string(Self.login) && request["scheme"] == "https", "\(request)")
            #expect(request["sni"] == .string(Self.login), "\(request)")
            #expect(request["host"] == .string(Self.login), "\(request)")
        }
        #expect(requests[0]["method"] == "POST" && requests[0]["body"] == "user=alice")
        #expect(requests[1]["path"] == "/home/echo" && requests[1]["cookie"] == "sid=alice", "\(requests[1])")
        // The session is filed under the name, never the address.
        #expect(try Self.jarDomains(fixture) == [Self.login])
        #expect(try fixture.cookieHeaderThroughSocat("https://\(Self.login):\(port)/") == "sid=alice")

        // --host says the same; curl then writes the Host header itself, with the URL's port.
        let again = try fixture.ctl([
            "-sS", "--cacert", fixture.caFile, "--host", Self.login, "https://\(address):\(port)/echo",
        ])
        #expect(again.status == 0, "\(again.stderr)")
        let echoed = try JSONParser.parse(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(echoed["sni"] == .string(Self.login))
        #expect(echoed["host"] == .string("\(Self.login):\(port)"))
        #expect(echoed["cookie"] == "sid=alice")
    }

    /// Without a daemon, `--fallback` runs the pattern with curl alone: same name, same address.
    @Test func fallbackRunsThePatternWithoutTheDaemon() throws {
        let fixture = try IPDirectFixture()
        let address = IPDirectFixture.addresses[Self.login]!
        let port = fixture.ports[Self.login]!.https
        let result = try fixture.ctl(
            ["--fallback", "-sS", "--cacert", fixture.caFile, "--host", Self.login, "https://\(address):\(port)/echo"],
            socket: fixture.directory.file("absent.sock"))
        #expect(result.status == 0, "\(result.stderr)")
        let echoed = try JSONParser.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(echoed["sni"] == .string(Self.login) && echoed["host"] == .string("\(Self.login):\(port)"))
    }

    /// After the first hop of the pattern, a redirect to the same name (any port) still goes to
    /// the address given, and one to another name is resolved through the daemon. The name here
    /// is one the daemon maps elsewhere (app.example.test is 127.0.0.3 to it), so only the pin
    /// reaches the login server at 127.0.0.2.
    @Test func redirectsAfterThePatternKeepTheAddressForTheNameOnly() throws {
        let fixture = try IPDirectFixture()
        let address = IPDirectFixture.addresses[Self.login]!
        let port = fixture.ports[Self.login]!.http
        let last = fixture.url(Self.login, "http", "/b/echo")
        let sameName = "http://\(Self.app):\(port)/a/redirect?status=302&to=\(IPDirectFixture.query(last))"
        let start = "http://\(address):\(port)/redirect?status=302&to=\(IPDirectFixture.query(sameName))"
        let result = try fixture.ctl(["-sS", "-L", "-H", "Host: \(Self.app)", start])
        #expect(result.status == 0, "\(result.stderr)")
        let requests = fixture.requests
        try #require(requests.count == 3, "\(requests)")
        #expect(requests.allSatisfy { $0["server"] == .string(Self.login) }, "\(requests)")
        #expect(requests.map { $0["path"]?.stringValue?.prefix(3) } == ["/re", "/a/", "/b/"])
        // curl sends its user's Host header while the host name is the first URL's.
        #expect(requests[0]["host"] == .string(Self.app) && requests[1]["host"] == .string(Self.app))
        #expect(requests[2]["host"] == .string("\(Self.login):\(port)"))
    }

    /// A URL that names its host: the user's Host header goes to curl unchanged (and, as curl
    /// does, only while the host is the first one), the jar follows the URL's host. What the
    /// origins see is what plain curl makes them see.
    @Test func aUsersHostHeaderWithANamedHostIsCurlsAndTheJarFollowsTheURL() throws {
        let fixture = try IPDirectFixture()
        let end = fixture.url(Self.login, "http", "/echo")
        let middle = Self.redirect(fixture, Self.app, "/x/redirect", to: end)
        let start = Self.redirect(fixture, Self.app, to: middle, cookies: ["k=1"])
        let options = ["-sS", "-L", "-H", "Host: virtual.example.test", start]
        let ours = try fixture.ctl(options)
        #expect(ours.status == 0, "\(ours.stderr)")
        let ourRequests = fixture.requests
        let theirs = try fixture.plainCurl(options)
        #expect(theirs.status == 0, "\(theirs.stderr)")
        let theirRequests = Array(fixture.requests.dropFirst(ourRequests.count))
        try #require(ourRequests.count == 3 && theirRequests.count == 3, "\(fixture.requests)")
        let hosts = ourRequests.map { $0["host"] }
        #expect(hosts == theirRequests.map { $0["host"] })
        #expect(hosts[0] == "virtual.example.test" && hosts[1] == "virtual.example.test", "\(hosts)")
        #expect(ourRequests.map { $0["server"] } == theirRequests.map { $0["server"] })
        #expect(ourRequests[1]["cookie"] == "k=1")
        #expect(try Self.jarDomains(fixture) == [Self.app])
        #expect(try fixture.cookieHeaderThroughSocat("http://virtual.example.test/") == "")
    }

    /// Three redirects over two hosts: a cookie replaced, a Secure one refused over http, a
    /// Domain cookie, one deleted at the end, with and without a `-b` file of the user's (one of
    /// whose cookies the chain replaces). The jar file is plain curl's, byte for byte.
    @Test(arguments: [false, true])
    func theCookieJarFileOfAChainIsWhatCurlLWrites(withCookieFile: Bool) throws {
        let fixture = try IPDirectFixture()
        let last = Self.redirect(fixture, Self.login, status: 200, to: "/", cookies: ["a=; Max-Age=0"])
        let third = Self.redirect(fixture, Self.app, to: last, cookies: ["c=3; Domain=example.test"])
        let second = Self.redirect(fixture, Self.login, "/x/redirect", to: third, cookies: ["a=2", "b=2; Path=/x/"])
        let start = Self.redirect(fixture, Self.login, to: second, cookies: ["a=1", "s=x; Secure", "keep=new"])
        var options = ["-sS", "-L"]
        if withCookieFile {
            let input = fixture.directory.file("in.txt")
            try "\(Self.login)\tFALSE\t/\tFALSE\t0\tkeep\told\n\(Self.login)\tFALSE\t/\tFALSE\t0\tmine\tm\n".write(
                toFile: input, atomically: true, encoding: .utf8)
            options += ["-b", input]
        }
        let ourFile = fixture.directory.file("ours.txt")
        let theirFile = fixture.directory.file("theirs.txt")
        let ours = try fixture.ctl(options + ["-c", ourFile, start])
        let theirs = try fixture.plainCurl(options + ["-c", theirFile, start])
        #expect(ours.status == 0 && theirs.status == 0, "\(ours.stderr)\(theirs.stderr)")
        #expect(ours.stdout == theirs.stdout)
        let ourJar = try String(contentsOfFile: ourFile, encoding: .utf8)
        let theirJar = try String(contentsOfFile: theirFile, encoding: .utf8)
        #expect(ourJar == theirJar, "--- httpdnsctl:\n\(ourJar)--- curl:\n\(theirJar)")
        let names = theirJar.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: "\t").dropFirst(5).first
        }
        #expect(
            Set(names) == Set(["b", "c", "keep"] + (withCookieFile ? ["mine"] : [])),
            "the comparison compared \(theirJar)")
    }

    /// `-c -` writes the jar on standard output after everything else, as curl does.
    @Test func theCookieJarOnStandardOutputComesLast() throws {
        let fixture = try IPDirectFixture()
        let start = Self.redirect(fixture, Self.login, to: "/echo", cookies: ["a=1"])
        let options = ["-sS", "-L", "-c", "-", "-w", "%{http_code}\\n", start]
        let ours = try fixture.ctl(options)
        let theirs = try fixture.plainCurl(options)
        #expect(ours.status == 0 && ours.stdout.hasSuffix("\tFALSE\t/\tFALSE\t0\ta\t1\n"), "\(ours.stdout)")
        // The echoed request differs (httpdnsctl's curl sent the cookie from the daemon's jar, by a header).
        func withoutEcho(_ text: String) -> String {
            text.split(separator: "\n").filter { !$0.hasPrefix("{") }.joined(separator: "\n")
        }
        #expect(withoutEcho(ours.stdout) == withoutEcho(theirs.stdout), "\(ours.stdout)\n---\n\(theirs.stdout)")
    }

    @Test func verboseSaysWhatTheJarDidWithEachCookieByNameOnly() throws {
        let fixture = try IPDirectFixture()
        let end = fixture.url(Self.login, "http", "/echo")
        let start = Self.redirect(fixture, Self.login, to: end, cookies: ["sid=VALUE-SID", "pref=VALUE-PREF; Secure"])
        let result = try fixture.ctl(["-sS", "-v", "-L", start])
        #expect(result.status == 0, "\(result.stderr)")
        let ours = result.stderr.split(separator: "\n").filter { $0.hasPrefix("* httpdnsctl: ") }
        #expect(
            ours == [
                "* httpdnsctl: stored sid for \(Self.login)", "* httpdnsctl: rejected pref (secure-required)",
                "* httpdnsctl: sending cookie sid to \(Self.login)",
            ], "\(result.stderr)")
        #expect(!ours.contains { $0.contains("VALUE") })
        // curl's own verbose lines are all still there (it shows headers as it always does).
        #expect(result.stderr.contains("> GET /echo HTTP/1.1"))

        // Without -v only the refusal is told, as a warning (curl would say nothing), by name only.
        let quiet = try fixture.ctl(["-sS", "-L", start])
        #expect(quiet.status == 0, "\(quiet.stderr)")
        #expect(
            quiet.stderr == "httpdnsctl: warning: cookie pref from \(Self.login) rejected (secure-required)\n",
            "\(quiet.stderr)")
    }
}
