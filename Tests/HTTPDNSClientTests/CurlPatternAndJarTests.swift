import HTTPDNSClient
import HTTPDNSProtocol
import Testing

@testable import httpdnsctl

/// curl's IP-direct pattern as `httpdnsctl curl` reads it, the Host header's scope, `-c` across
/// hops and the `-v` cookie lines.
struct CurlPatternAndJarTests {
    typealias Hop = CurlRequest.Hop
    static let additions = CurlRequest.HopAdditions(dumpHeaderPath: "/tmp/x/headers")

    @Test func anIPURLWithAHostHeaderRunsOnTheNameToThatAddress() throws {
        let request = try CurlRequest(["-H", "Host: Web.Example.test", "https://127.0.0.5:8443/echo?x=1#f"])
        #expect(request.url.url == "https://web.example.test:8443/echo?x=1#f")
        #expect(request.pin == CurlRequest.Pin(host: "web.example.test", address: "127.0.0.5"))
        #expect(request.pinnedResolveEntry(for: request.url) == "web.example.test:8443:127.0.0.5")
        // Every port of the name goes there (an http -> https upgrade stays on the address) ...
        #expect(
            request.pinnedResolveEntry(for: try #require(HTTPTarget("http://web.example.test/")))
                == "web.example.test:80:127.0.0.5")
        // ... and another name is the daemon's to resolve.
        #expect(request.pinnedResolveEntry(for: try #require(HTTPTarget("https://other.example.test/"))) == nil)
        let arguments = request.arguments(for: Hop(target: request.url), adding: Self.additions)
        #expect(arguments.contains("Host: Web.Example.test"), "the user's header goes to curl as written")
        #expect(arguments.suffix(2) == ["--url", "https://web.example.test:8443/echo?x=1#f"])

        let option = try CurlRequest(["--host", "web.example.test", "-s", "http://[::1]/"])
        #expect(option.url.url == "http://web.example.test/")
        #expect(option.pinnedResolveEntry(for: option.url) == "web.example.test:80:[::1]")
        let optionArguments = option.arguments(for: Hop(target: option.url), adding: Self.additions)
        #expect(!optionArguments.contains("--host") && optionArguments.first == "--silent", "\(optionArguments)")

        let ported = try CurlRequest(["-H", "host:web.example.test:9443", "https://127.0.0.5/"])
        #expect(ported.url.url == "https://web.example.test/" && ported.pin?.address == "127.0.0.5")
        let agreeing = try CurlRequest([
            "--host", "web.example.test", "-H", "Host: WEB.example.test", "http://10.1.2.3/",
        ])
        #expect(agreeing.pin?.host == "web.example.test")
    }

    @Test func withoutAnIPAndANameNothingIsRenamed() throws {
        // A Host header naming an address, an empty one (curl drops the field), none at all.
        for arguments in [["-H", "Host: 127.0.0.9"], ["-H", "Host:"], []] {
            let request = try CurlRequest(arguments + ["https://127.0.0.5/"])
            #expect(request.pin == nil && request.url.url == "https://127.0.0.5/", "\(arguments)")
        }
        // A URL that names its host: the user's Host header goes to curl unchanged, the URL decides the rest.
        let named = try CurlRequest(["-H", "Host: other.example.test", "https://app.example.test/"])
        #expect(named.pin == nil && named.url.url == "https://app.example.test/")
        #expect(
            named.arguments(for: Hop(target: named.url), adding: Self.additions).contains("Host: other.example.test"))
    }

    @Test func aHostThatCannotBeUsedIsAUsageError() {
        let cases: [([String], String)] = [
            (
                ["--host", "a.example", "https://b.example/"],
                "curl: --host a.example is for a URL that names an IP address, not b.example"
            ),
            (
                ["--host", "127.0.0.1", "https://127.0.0.5/"],
                "curl: --host 127.0.0.1 names an address, not a host name"
            ),
            (["--host", "a.example/x", "https://127.0.0.5/"], "curl: --host a.example/x names no host"),
            (["-H", "Host: a b", "https://127.0.0.5/"], "curl: the Host header a b names no host"),
            (["-H", "Host: u@a.example", "https://127.0.0.5/"], "curl: the Host header u@a.example names no host"),
            (
                ["--host", "a.example", "-H", "Host: b.example", "https://127.0.0.5/"],
                "curl: --host a.example and the Host header b.example name different hosts"
            ),
            (["https://127.0.0.5/", "--host"], "curl option --host needs a value"),
        ]
        for (arguments, message) in cases {
            #expect(throws: UsageError(message), "\(arguments)") { try CurlRequest(arguments) }
        }
    }

    /// curl sends its user's Host header only while the host name is the first URL's.
    @Test func theUsersHostHeaderStaysWithTheFirstHost() throws {
        let request = try CurlRequest(["-L", "-H", "Host: virtual.example", "https://a.example/"])
        let sameHost = try #require(HTTPTarget("http://a.example:8080/next"))
        let otherHost = try #require(HTTPTarget("https://b.example/"))
        #expect(
            request.arguments(for: Hop(target: sameHost, redirects: 1), adding: Self.additions)
                .contains("Host: virtual.example"))
        #expect(
            !request.arguments(for: Hop(target: otherHost, redirects: 1), adding: Self.additions)
                .contains("Host: virtual.example"))
    }

    @Test func fallbackRunsThePatternWithCurlAlone() throws {
        let original = ["--fallback", "-sS", "--host", "web.example.test", "-o", "out", "https://127.0.0.5/x"]
        let request = try CurlRequest(original)
        #expect(request.fallback)
        #expect(
            request.plainArguments(original) == [
                "--silent", "--show-error", "--output", "out", "--resolve", "web.example.test:443:127.0.0.5",
                "--globoff", "--url", "https://web.example.test/x",
            ])
        let own = ["--resolve", "web.example.test:443:127.0.0.7", "-H", "Host: web.example.test", "https://127.0.0.5/"]
        #expect(!(try CurlRequest(own).plainArguments(own).contains("web.example.test:443:127.0.0.5")))
        let plain = ["-sS", "https://h.example/", "--fallback", "-d", "--fallback"]
        #expect(try CurlRequest(plain).plainArguments(plain) == ["-sS", "https://h.example/", "-d", "--fallback"])
    }

    @Test func theCookieJarIsEachHopsOwn() throws {
        let request = try CurlRequest(["-L", "-c", "mine.txt", "-b", "in.txt", "https://h.example/"])
        #expect(request.cookieJar == "mine.txt")
        var additions = Self.additions
        additions.cookieJar = "/tmp/x/jar"
        let arguments = request.arguments(for: Hop(target: request.url), adding: additions)
        #expect(!arguments.contains("mine.txt") && arguments.contains("in.txt"))
        #expect(arguments.firstIndex(of: "--cookie-jar").map { arguments[$0 + 1] } == "/tmp/x/jar")
        #expect(try CurlRequest(["-c", "-", "https://h.example/"]).cookieJar == "-")
        #expect(try CurlRequest(["https://h.example/"]).cookieJar == nil)
    }

    // MARK: -c

    static let header = "# Netscape HTTP Cookie File\n# curl's\n\n"

    static func target(_ url: String) -> HTTPTarget { HTTPTarget(url)! }

    /// Hop files as each hop's curl writes them (the user's -b file gave `keep` and `dropped`).
    @Test func theChainsCookiesAreMergedAsOneCurlKeepsThem() {
        var jar = CurlCookieJar()
        jar.add(
            hopJar: Self.header + "h.example\tFALSE\t/\tFALSE\t0\ta\t1\n"
                + "h.example\tFALSE\t/\tFALSE\t0\tdropped\tx\nh.example\tFALSE\t/\tFALSE\t0\tkeep\tk\n",
            setCookie: ["a=1; Path=/"], target: Self.target("http://h.example/login"))
        jar.add(
            hopJar: Self.header
                + "#HttpOnly_h.example\tFALSE\t/b/\tFALSE\t0\tb\t2\nh.example\tFALSE\t/\tFALSE\t0\tA\t2\n"
                + "h.example\tFALSE\t/\tFALSE\t0\tkeep\tk\n",
            setCookie: ["A=2; Path=/", "b=2; HttpOnly", "dropped=; Max-Age=0; Path=/"],
            target: Self.target("http://h.example/b/x?y=/z"))
        // The last hop's curl read `dropped` from -b FILE again; it names only `a` and `c`.
        jar.add(
            hopJar: Self.header + ".example\tTRUE\t/\tFALSE\t0\tc\t3\nh.example\tFALSE\t/\tFALSE\t0\tdropped\tx\n"
                + "h.example\tFALSE\t/\tFALSE\t0\tkeep\tk\n",
            setCookie: ["c=3; Domain=.Example", "a=; Max-Age=0; Path=/"], target: Self.target("http://h.example/"))
        jar.add(hopJar: nil, setCookie: ["z=1"], target: Self.target("http://h.example/"))
        #expect(
            jar.text == Self.header
                + ".example\tTRUE\t/\tFALSE\t0\tc\t3\n#HttpOnly_h.example\tFALSE\t/b/\tFALSE\t0\tb\t2\n"
                + "h.example\tFALSE\t/\tFALSE\t0\tkeep\tk\n")
        #expect(CurlCookieJar().text == CurlCookieJar.curlHeader)
    }

    @Test func setCookieFieldsAreKeyedAsCurlKeysTheirCookies() {
        let page = Self.target("https://h.example/dir/page?q=/x")
        func key(_ value: String) -> CurlCookieJar.Key? { CurlCookieJar.key(ofSetCookie: value, target: page) }
        func line(_ text: String) -> CurlCookieJar.Key? { CurlCookieJar.key(ofJarLine: Substring(text)) }
        #expect(key("SID=1") == line("h.example\tFALSE\t/dir/\tFALSE\t0\tsid\t1"))
        #expect(key(" sid = 1 ; Path=\"/Dir/\"") == line("h.example\tFALSE\t/dir\tFALSE\t0\tsid\t1"))
        #expect(key("sid=1; Domain=; Domain=.H.Example") == line("#HttpOnly_.h.example\tTRUE\t/dir/\tTRUE\t0\tsid\t"))
        #expect(key("sid=1; Path=relative") == line("h.example\tFALSE\t/\tFALSE\t0\tsid\t1"))
        #expect(key("sid=1; Domain=h.example") != key("sid=1"))
        #expect(
            CurlCookieJar.key(ofSetCookie: "a=1; Domain=127.0.0.5", target: Self.target("http://127.0.0.5/"))?.tailMatch
                == false)
        #expect(key("novalue") == nil && key("=v") == nil)
        #expect(line("# comment") == nil && line("") == nil && line("h\tFALSE\t/") == nil)
    }

    // MARK: -v

    @Test func verboseLinesNameCookiesAndNeverShowValues() {
        let setCookie = [
            "sid=SECRET1; Secure", "lang=SECRET2", "old=SECRET3; Max-Age=0",
            "gone=SECRET4; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "SECRET5", "bad\u{1B}[2J=SECRET6",
        ]
        let result = SetCookieResult(
            host: "example.test", stored: 2,
            rejected: [.init(index: 0, reason: "secure-required"), .init(index: 5, reason: "syntax")])
        let text = CookieVerboseLines.decisions(setCookie: setCookie, result: result)
        #expect(
            text == """
                * httpdnsctl: rejected sid (secure-required)
                * httpdnsctl: stored lang for example.test
                * httpdnsctl: deleted old for example.test (expired)
                * httpdnsctl: deleted gone for example.test (expired)
                * httpdnsctl: stored (nameless) for example.test
                * httpdnsctl: rejected bad?[2J (syntax)

                """)
        #expect(!text.contains("SECRET"))
        // When the count says the Expires cookie was stored, it was; when it cannot say which, both are named.
        var all = result
        all.stored = 3
        #expect(CookieVerboseLines.decisions(setCookie: setCookie, result: all).contains("stored gone for"))
        let two = ["a=1; Expires=Wed, 01 Jan 2098 00:00:00 GMT", "b=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT"]
        #expect(
            CookieVerboseLines.decisions(setCookie: two, result: SetCookieResult(host: "h", stored: 1, rejected: []))
                == "* httpdnsctl: stored or deleted a for h (by its Expires)\n"
                + "* httpdnsctl: stored or deleted b for h (by its Expires)\n")

        #expect(
            CookieVerboseLines.sending("sid=SECRET; lang=en", to: "example.test")
                == "* httpdnsctl: sending cookies sid, lang to example.test\n")
        #expect(CookieVerboseLines.sending("v", to: "h") == "* httpdnsctl: sending cookie (nameless) to h\n")
        #expect(CookieVerboseLines.maxAge(of: "a=1; Max-Age=10; max-age=x") == 10)
        #expect(CookieVerboseLines.maxAge(of: "a=1; Max-Age=-5") == -1)
    }

    @Test func ownOptionsAreReadInFullOnly() throws {
        let line = try CurlCommandLine(["--fallback", "-s", "--host", "h.example", "--hos", "https://1.2.3.4/"])
        #expect(line.own("fallback") == "" && line.own("host") == "h.example")
        #expect(line.options.map(\.name) == ["silent", "--hos"])
        #expect(
            line.curlArguments(of: ["--fallback", "-s", "--host", "h.example", "--hos", "https://1.2.3.4/"]) == [
                "-s", "--hos", "https://1.2.3.4/",
            ])
        #expect(CurlCommand.help.contains("--host NAME") && CurlCommand.help.contains("--fallback"))
    }
}
