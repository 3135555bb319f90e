import HTTPDNSClient
import Testing

@testable import httpdnsctl

/// How `httpdnsctl curl` reads a curl command line and what it gives curl for each hop.
struct CurlCommandLineTests {
    typealias Element = CurlCommandLine.Element

    @Test func bundlesAttachedValuesAndLongOptionsParseAsCurlDoes() throws {
        let line = try CurlCommandLine([
            "-sSLo", "out.html", "-XPOST", "-H", "A: b", "-dx=1", "--max-redirs", "5", "https://h.example/",
            "--no-progress-meter", "--max-r", "7", "--", "-not-an-option",
        ])
        #expect(
            line.elements == [
                .option(CurlOption("silent")), .option(CurlOption("show-error")), .option(CurlOption("location")),
                .option(CurlOption("output", "out.html")), .option(CurlOption("request", "POST")),
                .option(CurlOption("header", "A: b")), .option(CurlOption("data", "x=1")),
                .option(CurlOption("max-redirs", "5")), .url("https://h.example/"),
                .option(CurlOption("progress-meter", negated: true)), .option(CurlOption("max-redirs", "7")),
                .url("-not-an-option"),
            ])
        #expect(line.last("max-redirs") == "7")
    }

    @Test func equalsFormsAndUnknownWordsPassThroughWithoutTakingAValue() throws {
        // curl has no --name=value: the word is unknown to curl, and the next argument is the URL.
        let line = try CurlCommandLine(["--max-redirs=5", "https://h.example/", "--loc", "-%"])
        #expect(
            line.elements == [
                .option(CurlOption("--max-redirs=5", known: false)), .url("https://h.example/"),
                // Ambiguous (location, location-trusted): curl will refuse it, httpdnsctl leaves it to curl.
                .option(CurlOption("--loc", known: false)), .option(CurlOption("-%", known: false)),
            ])
        #expect(line.options[0].arguments == ["--max-redirs=5"])
        #expect(CurlOption("data", "x").arguments == ["--data", "x"])
        #expect(CurlOption("buffer", negated: true).arguments == ["--no-buffer"])
    }

    @Test func aNearMissOfAKnownOptionIsAUsageErrorAndOtherWordsGoToCurl() throws {
        #expect(throws: UsageError("curl: unknown option --lcoation (did you mean --location?)")) {
            try CurlRequest(["--lcoation", "https://h/"])
        }
        #expect(throws: UsageError("curl: unknown option --hots (did you mean --host?)")) {
            try CurlRequest(["--hots", "h.example", "https://192.0.2.1/"])
        }
        #expect(throws: UsageError("curl: unknown option --max-redirs=5 (did you mean --max-redirs?)")) {
            try CurlRequest(["--max-redirs=5", "https://h/"])
        }
        // Nothing close (or an ambiguous prefix): curl decides.
        let passed = try CurlRequest(["--frobnicate-widely", "--loc", "https://h/"])
        #expect(passed.commandLine.options.map(\.name) == ["--frobnicate-widely", "--loc"])
    }

    @Test func aMissingValueIsAUsageError() {
        #expect(throws: UsageError("curl option -o needs a value")) { try CurlCommandLine(["https://h/", "-o"]) }
        #expect(throws: UsageError("curl option --header needs a value")) { try CurlCommandLine(["--header"]) }
        #expect(throws: UsageError("curl option -H needs a value")) { try CurlCommandLine(["-sH"]) }
    }

    @Test func theRequestKnowsFollowingLimitsAndTheURL() throws {
        let plain = try CurlRequest(["example.com/x"])
        #expect(plain.url.url == "http://example.com/x")
        #expect(!plain.follow && plain.maxRedirects == 50 && plain.reportsErrors)
        #expect(plain.initialMethod == "GET")

        let follow = try CurlRequest(["-sL", "--max-redirs", "-1", "https://h/", "--fallback"])
        #expect(follow.follow && follow.maxRedirects == -1 && follow.fallback && !follow.reportsErrors)
        #expect(try CurlRequest(["-sSL", "https://h/"]).reportsErrors)
        #expect(try CurlRequest(["-L", "--no-location", "https://h/"]).follow == false)
        let trusted = try CurlRequest(["--location-trusted", "https://h/"])
        #expect(trusted.follow && trusted.trusted)
        #expect(try CurlRequest(["-d", "a", "https://h/"]).initialMethod == "POST")
        #expect(try CurlRequest(["-G", "-d", "a", "https://h/"]).initialMethod == "GET")
        #expect(try CurlRequest(["-T", "f", "https://h/"]).initialMethod == "PUT")
        #expect(try CurlRequest(["-I", "https://h/"]).initialMethod == "HEAD")
        #expect(try CurlRequest(["-X", "DELETE", "-d", "a", "https://h/"]).initialMethod == "DELETE")
        #expect(try CurlRequest(["--url", "https://h/"]).url.host == "h")

        #expect(throws: UsageError("curl: no URL given")) { try CurlRequest(["-s"]) }
        #expect(throws: UsageError("curl: one URL at a time, not 2")) { try CurlRequest(["https://a/", "https://b/"]) }
        #expect(throws: UsageError("curl: one URL per command; --next is not supported")) {
            try CurlRequest(["https://a/", "-:", "https://b/"])
        }
        #expect(throws: UsageError("curl: ftp://a/ is not an http or https URL with a host")) {
            try CurlRequest(["ftp://a/"])
        }
        #expect(throws: UsageError("curl: --max-redirs needs a number")) {
            try CurlRequest(["--max-redirs", "x", "https://a/"])
        }
    }

    @Test func writeOutFromAFileIsRead() throws {
        let request = try CurlRequest(["-w", "@fmt", "https://h/"]) { path in path == "fmt" ? "%{http_code}\n" : nil }
        #expect(request.writeOut == "%{http_code}\n")
        #expect(throws: UsageError("curl: cannot read the --write-out file nope")) {
            try CurlRequest(["-w", "@nope", "https://h/"]) { _ in nil }
        }
    }

    /// curl 7.88's rules look at its kind of request (data is a POST, -T a PUT), never at -X.
    @Test(arguments: [
        (301, ["-d", "a"], true), (302, ["-d", "a"], true), (303, ["-d", "a"], true), (307, ["-d", "a"], false),
        (308, ["-d", "a"], false), (301, ["-X", "PUT", "-d", "a"], true), (302, ["-X", "GET", "-d", "a"], true),
        (303, ["-X", "PUT", "-d", "a"], true), (307, ["-X", "PUT", "-d", "a"], false), (301, ["-T", "f"], false),
        (302, ["-X", "POST", "-T", "f"], false), (303, ["-T", "f"], true), (303, ["-G", "-d", "a"], false),
        (303, ["-X", "DELETE"], false), (303, ["-I"], false), (301, ["-F", "x=y"], true),
        (302, ["--json", "{}"], true),
    ])
    func methodRulesOfCurl(status: Int, options: [String], drops: Bool) throws {
        let request = try CurlRequest(options + ["https://h/"])
        #expect(request.dropsBody(status: status, kind: request.requestKind) == drops)
    }

    @Test func curlsPost30xOptionsKeepPost() throws {
        let request = try CurlRequest(["--post301", "--post302", "--post303", "-X", "PUT", "-d", "a", "https://h/"])
        #expect(!request.dropsBody(status: 301, kind: .post))
        #expect(!request.dropsBody(status: 302, kind: .post))
        #expect(!request.dropsBody(status: 303, kind: .post))
        #expect(request.dropsBody(status: 303, kind: .put))
        #expect(try CurlRequest(["--post301", "-d", "a", "https://h/"]).dropsBody(status: 302, kind: .post))
    }

    static let additions = CurlRequest.HopAdditions(
        resolve: "h.example:443:192.0.2.1",
        cookies: CurlCookieFile(path: "/tmp/x/cookie", value: "a=1", curlSendsCookies: false),
        dumpHeaderPath: "/tmp/x/headers", writeOut: "W")

    @Test func theFirstHopKeepsTheUsersOptionsAndTakesOverFollowingAndOutputs() throws {
        let request = try CurlRequest([
            "-sSL", "--max-redirs", "3", "-D", "h.txt", "-w", "%{http_code}", "--stderr", "e.txt", "-d", "a=1",
            "-H", "X-A: 1", "-o", "out", "https://h.example/login",
        ])
        let arguments = request.arguments(for: CurlRequest.Hop(target: request.url), adding: Self.additions)
        #expect(
            arguments == [
                "--silent", "--show-error", "--data", "a=1", "--header", "X-A: 1", "--output", "out",
                "--resolve", "h.example:443:192.0.2.1", "--header", "@/tmp/x/cookie", "--dump-header", "/tmp/x/headers",
                "--write-out", "W", "--location", "--max-redirs", "0", "--globoff", "--url", "https://h.example/login",
            ])
        let single = try CurlRequest(["https://h.example/"])
        var bare = Self.additions
        bare.writeOut = nil
        bare.cookies = nil
        #expect(
            single.arguments(for: CurlRequest.Hop(target: single.url), adding: bare) == [
                "--resolve", "h.example:443:192.0.2.1", "--dump-header", "/tmp/x/headers", "--no-location",
                "--globoff", "--url", "https://h.example/",
            ])
    }

    /// With a `-b FILE`, curl's engine sends the file's cookies: the merged value goes as curl's
    /// cookie string, which curl puts in that same Cookie header, through a configuration file.
    @Test func withACookieFileTheValueIsCurlsCookieStringInAConfigFile() throws {
        let request = try CurlRequest(["-b", "cookies.txt", "-b", "lang=en", "https://h.example/"])
        #expect(request.readsCookieFile)
        let cookies = CurlCookieFile(
            path: "/tmp/x/cookie", value: #"sid=a"b\c; lang=en"#, curlSendsCookies: request.readsCookieFile)
        #expect(cookies.contents == #"cookie = "sid=a\"b\\c; lang=en""# + "\n")
        var additions = Self.additions
        additions.cookies = cookies
        let arguments = request.arguments(for: CurlRequest.Hop(target: request.url), adding: additions)
        #expect(
            arguments.starts(with: [
                "--cookie", "cookies.txt", "--resolve", "h.example:443:192.0.2.1", "--config", "/tmp/x/cookie",
            ]), "\(arguments)")
        #expect(!arguments.contains("--header") && !arguments.contains("lang=en"), "\(arguments)")
    }

    /// Without a cookie file, and for a value curl would read as a file name (or refuse as too
    /// long), the value is a `Cookie:` header line.
    @Test func otherwiseTheValueIsAHeaderLine() throws {
        #expect(try !CurlRequest(["-b", "lang=en", "-c", "jar.txt", "https://h.example/"]).readsCookieFile)
        for (value, curlSendsCookies) in [
            ("sid=1", false), ("nameless", true), ("@x=1", true), ("a=" + String(repeating: "v", count: 8200), true),
        ] {
            let cookies = CurlCookieFile(path: "/tmp/x/cookie", value: value, curlSendsCookies: curlSendsCookies)
            #expect(cookies.contents == "Cookie: \(value)\n")
            #expect(cookies.arguments == ["--header", "@/tmp/x/cookie"])
        }
    }

    /// The cookies curl's engine would send from a cookies.txt file: matched by domain, path,
    /// Secure and expiry, longest path first, then longest domain and name, then file order.
    @Test func theCookieFilesCookiesAreThoseCurlsEngineSendsInItsOrder() throws {
        let file = [
            "# Netscape HTTP Cookie File", ".example.test\tTRUE\t/\tFALSE\t0\tsite\t1",
            "h.example.test\tFALSE\t/a\tFALSE\t0\tdeep\t2", "#HttpOnly_h.example.test\tFALSE\t/\tFALSE\t0\tho\t3",
            "h.example.test\tFALSE\t/\tTRUE\t0\tsec\t4", "h.example.test\tFALSE\t/\tFALSE\t100\told\t5",
            "x.h.example.test\tFALSE\t/\tFALSE\t0\tsub\t6", "h.example.test\tFALSE\t/ab\tFALSE\t0\tab\t7",
            "h.example.test\tFALSE\t/\tFALSE\t0\tnovalue", "h.example.test\tFALSE\t/\tFALSE\t0\tho\t8",
        ].joined(separator: "\n")
        let files = try #require(CurlCookieFileCookies(files: ["c.txt"]) { $0 == "c.txt" ? file : nil })
        let plain = try #require(HTTPTarget("http://h.example.test/a/b?q=1"))
        #expect(files.header(to: plain, then: "jar=1", now: 200) == "deep=2; novalue=; ho=8; site=1; jar=1")
        let secure = try #require(HTTPTarget("https://h.example.test/a"))
        #expect(files.sent(to: secure, now: 50).map(\.name) == ["deep", "novalue", "sec", "old", "ho", "site"])
        #expect(files.jarLines(except: [files.cookies[0].key], now: 200).count == 6)
        // Not a cookies.txt file (curl also reads Set-Cookie lines), unreadable, standard input: not taken over.
        #expect(CurlCookieFileCookies(files: ["c.txt"]) { _ in "Set-Cookie: a=1\n" } == nil)
        #expect(CurlCookieFileCookies(files: ["c.txt"]) { _ in nil } == nil)
        #expect(CurlCookieFileCookies(files: ["-"]) { _ in "" } == nil)
        #expect(
            try CurlRequest(["-b", "@c.txt", "-b", "a=1", "-b", "d.txt", "https://h/"]).cookieFiles == [
                "c.txt", "d.txt",
            ])
    }

    @Test func aRedirectToGetDropsTheBodyAndBodyHeadersButKeepsTheCustomMethod() throws {
        let request = try CurlRequest([
            "-L", "-X", "POST", "-d", "a=1", "--data-binary", "@f", "-F", "x=y", "--json", "{}", "-H",
            "Content-Type: text/plain", "-H", "content-length: 3", "-H", "Accept: */*", "https://h.example/",
        ])
        let hop = CurlRequest.Hop(target: request.url, redirects: 1, bodyDropped: true)
        let arguments = request.arguments(for: hop, adding: Self.additions)
        #expect(
            arguments == [
                "--request", "POST", "--header", "Accept: */*", "--resolve", "h.example:443:192.0.2.1", "--header",
                "@/tmp/x/cookie",
                "--dump-header", "/tmp/x/headers", "--write-out", "W", "--location", "--max-redirs", "0", "--globoff",
                "--url", "https://h.example/",
            ])
        #expect(request.method(of: hop) == "POST")
        #expect(try CurlRequest(["-L", "-d", "a=1", "https://h.example/"]).method(of: hop) == "GET")
    }

    @Test func anotherOriginGetsNoCredentialsUnlessTrusted() throws {
        let arguments = [
            "-L", "-u", "me:pw", "--oauth2-bearer", "t", "-H", "Authorization: x", "-H", "Cookie: own=1",
            "https://a.example/",
        ]
        let request = try CurlRequest(arguments)
        let other = try #require(HTTPTarget("https://b.example/"))
        let crossed = request.arguments(for: CurlRequest.Hop(target: other, redirects: 1), adding: Self.additions)
        for gone in ["--user", "--oauth2-bearer", "Authorization: x", "Cookie: own=1"] {
            #expect(!crossed.contains(gone), "\(gone) in \(crossed)")
        }
        let same = request.arguments(for: CurlRequest.Hop(target: request.url, redirects: 1), adding: Self.additions)
        #expect(same.contains("--user") && same.contains("Authorization: x"))
        #expect(request.cookieHeader(jar: "j=2", for: CurlRequest.Hop(target: other)) == "j=2")
        #expect(request.cookieHeader(jar: "j=2", for: CurlRequest.Hop(target: request.url)) == "own=1; j=2")

        let trusted = try CurlRequest(["--location-trusted"] + arguments)
        let kept = trusted.arguments(for: CurlRequest.Hop(target: other, redirects: 1), adding: Self.additions)
        #expect(kept.contains("--user") && kept.contains("Authorization: x"))
    }

    @Test func theUsersCookiesComeFirstAndWinOverTheJars() throws {
        let request = try CurlRequest([
            "-b", "lang=en; theme=dark", "-b", "cookies.txt", "-H", "Cookie: sid=mine", "https://h.example/",
        ])
        let hop = CurlRequest.Hop(target: request.url)
        #expect(request.cookieHeader(jar: "sid=jar; other=1", for: hop) == "lang=en; theme=dark; sid=mine; other=1")
        #expect(request.cookieHeader(jar: "", for: hop) == "lang=en; theme=dark; sid=mine")
        let arguments = request.arguments(for: hop, adding: Self.additions)
        #expect(arguments.contains("cookies.txt"), "a cookie file stays curl's")
        #expect(!arguments.contains("lang=en; theme=dark") && !arguments.contains("Cookie: sid=mine"))
        #expect(try CurlRequest(["https://h/"]).cookieHeader(jar: "", for: hop) == nil)

        let removed = try CurlRequest(["-H", "Cookie:", "https://h.example/"])
        #expect(removed.suppressesCookies(for: hop))
        #expect(!request.suppressesCookies(for: hop))
    }

    @Test func laterHopsKeepRemoteNamesGetDataAndAutoReferer() throws {
        let request = try CurlRequest([
            "-L", "-O", "-G", "-d", "q=1", "-e", ";auto", "https://h.example/dir/file.tgz?x=1",
        ])
        #expect(request.outputFile == "file.tgz")
        let first = request.arguments(for: CurlRequest.Hop(target: request.url), adding: Self.additions)
        #expect(first.contains("--remote-name") && first.contains("--get") && first.contains(";auto"))
        let next = try #require(HTTPTarget("https://h.example/mirror/other.tgz"))
        let later = request.arguments(
            for: CurlRequest.Hop(target: next, redirects: 1, referrer: request.url.url), adding: Self.additions)
        #expect(!later.contains("--remote-name") && !later.contains("--get") && !later.contains("--data"))
        #expect(later.contains("file.tgz"), "curl -L -O names the file after the first URL: \(later)")
        #expect(later.contains(request.url.url) && !later.contains(";auto"))
    }

    @Test func standardInputIsSavedOnlyWhenAnOptionReadsIt() throws {
        for arguments in [["-d", "@-"], ["--data-urlencode", "name@-"], ["-F", "f=@-"], ["-T", "-"], ["-H", "@-"]] {
            #expect(try CurlRequest(arguments + ["https://h/"]).readsStandardInput, "\(arguments)")
        }
        #expect(try !CurlRequest(["-d", "@file", "https://h/"]).readsStandardInput)
        #expect(
            try CurlRequest(["--resolve", "h:443:192.0.2.1", "https://h/"]).resolvesItself(HTTPTarget("https://h/")!))
        #expect(
            try !CurlRequest(["--resolve", "h:80:192.0.2.1", "https://h/"]).resolvesItself(HTTPTarget("https://h/")!))
    }

    @Test func theDumpKeepsTheLastResponse() {
        let dump = Array(
            ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 302 Found\r\nLocation: /next\r\nSet-Cookie: a=1\r\n"
                + "X-Long: one\r\n  two\r\nset-cookie:  b=2 \r\n\r\n").utf8)
        let response = HeaderDump(dump)
        #expect(response.status == 302 && response.isRedirect)
        #expect(response.values("Set-Cookie") == ["a=1", "b=2"])
        #expect(response.values("location") == ["/next"])
        #expect(response.values("X-Long") == ["one two"])
        #expect(HeaderDump(Array("HTTP/2 200 \r\nset-cookie: c=3\r\n\r\n".utf8)).values("Set-Cookie") == ["c=3"])
        #expect(HeaderDump([]).status == 0)
    }
}

/// `--write-out` through standard error and back.
struct CurlWriteOutTests {
    let format = WriteOutFormat(nonce: "n0")

    @Test func streamSwitchesAndTheRedirectCountAreRewritten() {
        #expect(
            format.rewrite("%{http_code} %{num_redirects}\\n%{stderr}err%{stdout}%%{stdout}\\%{stdout}", redirects: 2)
                == "%{stderr}@@httpdnsctl-n0:o@@%{http_code} 2\\n%{stderr}@@httpdnsctl-n0:e@@err"
                + "%{stderr}@@httpdnsctl-n0:o@@%%{stdout}\\%{stdout}@@httpdnsctl-n0:z@@")
        #expect(format.rewrite("", redirects: 0) == "%{stderr}@@httpdnsctl-n0:o@@@@httpdnsctl-n0:z@@")
    }

    @Test func theDemultiplexerSeparatesWriteOutAndDropsOurOwnCurlErrors() {
        let stream = Array(
            ("\r  % Total progress\r100 done\n* Maximum (0) redirects followed\ncurl: (47) Maximum (0) redirects followed\n"
                + "curl: (22) other\n@@httpdnsctl-n0:o@@200 @@httpdnsctl-n0:e@@to stderr@@httpdnsctl-n0:o@@ back"
                + "@@httpdnsctl-n0:z@@tail @@httpdnsctl-n1:o@@").utf8)
        // Byte by byte: a marker or a dropped line cut by a read must still be recognized.
        var demultiplexer = StandardErrorDemultiplexer(
            format: format,
            droppedLines: ["curl: (47) Maximum (0) redirects followed\n", "* Maximum (0) redirects followed\n"])
        var passed: [UInt8] = []
        for byte in stream { passed += demultiplexer.feed([byte]) }
        passed += demultiplexer.finish()
        #expect(
            String(decoding: passed, as: UTF8.self)
                == "\r  % Total progress\r100 done\ncurl: (22) other\ntail @@httpdnsctl-n1:o@@")
        let parts = demultiplexer.writeOut.map { ($0.stream, String(decoding: $0.bytes, as: UTF8.self)) }
        #expect(parts.map(\.0) == [.standardOutput, .standardError, .standardOutput])
        #expect(parts.map(\.1) == ["200 ", "to stderr", " back"])
    }

    @Test func aProgressMeterIsNotHeldBack() {
        var filter = LineFilter(droppedLines: [Array("curl: (47) x\n".utf8)])
        #expect(filter.feed(Array("\r 10%".utf8)) == Array("\r 10%".utf8))
        #expect(filter.feed(Array("\n".utf8)) == Array("\n".utf8))
        #expect(filter.feed(Array("curl: (4".utf8)) == [])
        #expect(filter.feed(Array("8) y\n".utf8)) == Array("curl: (48) y\n".utf8))
        #expect(filter.feed(Array("curl: (47) x\n".utf8)) == [])
        #expect(filter.feed(Array("cu".utf8)) == [] && filter.finish() == Array("cu".utf8))
    }
}
