import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// One connection to a real daemon, with numbered calls and helpers that name the reply when it
/// does not have the expected shape. It keeps the daemon alive as long as the session lives.
final class RPCSession {
    let daemon: DaemonHarness
    let client: LineClient
    private var nextID = 0

    init(config: String = "") throws {
        daemon = try DaemonHarness(config: config)
        client = try daemon.connectReady()
    }

    /// A session on a daemon started elsewhere (waits for its READY=1).
    init(daemon: DaemonHarness) throws {
        self.daemon = daemon
        client = try daemon.connectReady()
    }

    /// The whole response to one call.
    func response(_ method: String, _ params: JSON = [:]) throws -> JSON {
        nextID += 1
        guard let response = try client.call(method, params, id: nextID) else {
            throw HarnessError("no response to \(method) \(params.encodedString); daemon log: \(daemon.log)")
        }
        return response
    }

    /// The `result` member; an error reply is thrown, with the request, so the test names it.
    func result(_ method: String, _ params: JSON = [:]) throws -> JSON {
        let response = try response(method, params)
        guard let result = response["result"] else {
            throw HarnessError("\(method) \(params.encodedString) answered \(response.encodedString)")
        }
        return result
    }

    /// The `error` member; a success is thrown.
    func error(_ method: String, _ params: JSON = [:]) throws -> JSON {
        let response = try response(method, params)
        guard let error = response["error"] else {
            throw HarnessError("\(method) \(params.encodedString) should fail but answered \(response.encodedString)")
        }
        return error
    }

    @discardableResult
    func setCookies(_ url: String, _ values: [String], host: String? = nil) throws -> JSON {
        var params: JSONObject = ["url": .string(url), "setCookie": .array(values.map(JSON.string))]
        if let host { params.append("host", .string(host)) }
        return try result("handleSetCookie", .object(params))
    }

    /// The `header` of getCookieHeader for `url`, with any further params.
    func header(_ url: String, _ extra: JSONObject = [:]) throws -> String {
        var params: JSONObject = ["url": .string(url)]
        for (key, value) in extra { params.append(key, value) }
        let result = try result("getCookieHeader", .object(params))
        guard let header = result["header"]?.stringValue else {
            throw HarnessError("getCookieHeader result without a string header: \(result.encodedString)")
        }
        return header
    }

    func list(domain: String? = nil) throws -> [JSON] {
        let params: JSON = domain.map { ["domain": .string($0)] } ?? [:]
        let result = try result("listCookies", params)
        guard let cookies = result["cookies"]?.arrayValue else {
            throw HarnessError("listCookies result without a cookies array: \(result.encodedString)")
        }
        return cookies
    }

    func deleted(_ params: JSON) throws -> Int64? {
        try result("deleteCookies", params)["deleted"]?.numberValue?.int64Value
    }
}

/// Test-side views of results.
enum CookieResults {
    /// `rejected` as index -> reason.
    static func rejections(_ result: JSON) -> [Int64: String] {
        var reasons: [Int64: String] = [:]
        for entry in result["rejected"]?.arrayValue ?? [] {
            if let index = entry["index"]?.numberValue?.int64Value {
                reasons[index] = entry["reason"]?.stringValue ?? "?"
            }
        }
        return reasons
    }

    static func names(_ cookies: [JSON]) -> [String] { cookies.compactMap { $0["name"]?.stringValue }.sorted() }

    static func named(_ name: String, in cookies: [JSON]) -> JSON? { cookies.first { $0["name"]?.stringValue == name } }

    static var now: Int64 { Int64(Date().timeIntervalSince1970) }
}

/// The cookie methods over the real socket, each expectation taken from httpdnsd-rpc(7) and RFC 6265bis section 5.
@Suite(.serialized)
struct CookieSocketTests {
    // MARK: handleSetCookie

    @Test func setCookieResultNamesHostAndCountsStored() throws {
        let rpc = try RPCSession()
        let result = try rpc.setCookies("https://www.example.com/login", ["a=1", "b=2; Path=/"])
        #expect(result["host"] == "www.example.com")
        #expect(result["stored"] == .int(2))
        #expect(result["rejected"]?.arrayValue?.isEmpty == true, "\(result.encodedString)")
    }

    /// A renewal with the same value is stored like any set (it only writes nothing when it
    /// stores exactly what is stored), and the headers the daemon remembers follow each change.
    @Test func renewalsAndChangesShowInTheHeader() throws {
        let rpc = try RPCSession()
        let url = "https://www.example.com/app"
        for _ in 0..<3 {
            #expect(try rpc.setCookies(url, ["sid=1; Path=/; Max-Age=600"])["stored"] == .int(1))
            #expect(try rpc.header(url) == "sid=1")
        }
        #expect(try rpc.setCookies(url, ["sid=2; Path=/; Max-Age=600"])["stored"] == .int(1))
        #expect(try rpc.header(url) == "sid=2")
        #expect(try rpc.setCookies(url, ["sid=2; Path=/; Max-Age=600; HttpOnly"])["stored"] == .int(1))
        #expect(try rpc.header(url, ["forScript": true]) == "")
        #expect(try rpc.header(url) == "sid=2")
        #expect(try rpc.setCookies(url, ["sid=; Path=/; Max-Age=0"])["stored"] == .int(0))
        #expect(try rpc.header(url) == "")
    }

    /// Every rejection reason of the contract, each at its own index of one request (RFC 6265bis 5.6 and 5.7).
    @Test func eachRejectionReasonAtItsIndex() throws {
        let rpc = try RPCSession()
        let atExample = try rpc.setCookies(
            "https://www.example.com/",
            [
                "ok=1",
                "ctl=a\u{01}b",  // a CTL other than HTAB: the whole string is ignored
                "dm=1; Domain=other.test",
                "ps=1; Domain=com",
                "hp=1; Secure; Path=/; Domain=www.example.com",
                "__Host-hd=1; Secure; Path=/; Domain=www.example.com",
                "__Host-hp=1; Secure; Path=/app",
                "__Host-hs=1; Path=/",
                "__Secure-ns=1",
                "n=" + String(repeating: "v", count: 4095),  // name + value = 4096: allowed
                "n2=" + String(repeating: "v", count: 4095),  // 4097: too large
            ])
        #expect(atExample["host"] == "www.example.com")
        #expect(
            CookieResults.rejections(atExample) == [
                1: "syntax", 2: "domain-mismatch", 3: "public-suffix", 5: "prefix", 6: "prefix", 7: "prefix",
                8: "prefix", 10: "too-large",
            ], "\(atExample.encodedString)")
        #expect(atExample["stored"] == .int(3))

        let overHTTP = try rpc.setCookies("http://www.example.com/", ["plain=1", "sec=1; Secure"])
        #expect(CookieResults.rejections(overHTTP) == [1: "secure-required"], "\(overHTTP.encodedString)")
        #expect(overHTTP["stored"] == .int(1))
    }

    /// github.io is a private-section public suffix: from x.github.io it is not a domain mismatch
    /// but a public suffix; from github.io itself it becomes a host-only cookie (RFC 6265bis 5.6 step 9).
    @Test func privateSectionPublicSuffix() throws {
        let rpc = try RPCSession()
        let fromSubdomain = try rpc.setCookies(
            "https://x.github.io/", ["ok=1; Domain=x.github.io", "ps=1; Domain=github.io"])
        #expect(CookieResults.rejections(fromSubdomain) == [1: "public-suffix"], "\(fromSubdomain.encodedString)")

        let fromSuffix = try rpc.setCookies("https://github.io/", ["own=1; Domain=github.io"])
        #expect(fromSuffix["stored"] == .int(1), "\(fromSuffix.encodedString)")
        let own = try #require(CookieResults.named("own", in: try rpc.list()))
        #expect(own["domain"] == "github.io")
        #expect(own["hostOnly"] == true)
        #expect(try rpc.header("https://x.github.io/") == "ok=1")
    }

    @Test func sameSiteNoneRequiresSecure() throws {
        let rpc = try RPCSession()
        let result = try rpc.setCookies(
            "https://www.example.com/", ["a=1; SameSite=None", "b=1; SameSite=None; Secure"])
        #expect(CookieResults.rejections(result).keys.sorted() == [0], "\(result.encodedString)")
        #expect(result["stored"] == .int(1))
    }

    @Test func invalidParamsNameTheField() throws {
        let rpc = try RPCSession()
        let cases: [(JSON, String)] = [
            (["url": "not a url", "setCookie": ["a=1"]], "url"),
            (["url": "https://", "setCookie": ["a=1"]], "url"),
            (["setCookie": ["a=1"]], "url"),
            (["url": "https://www.example.com/"], "setCookie"),
            (["url": "https://www.example.com/", "setCookie": "a=1"], "setCookie"),
            (["url": "https://www.example.com/", "setCookie": ["a=1", 7]], "setCookie[1]"),
        ]
        for (params, field) in cases {
            let error = try rpc.error("handleSetCookie", params)
            #expect(error["code"] == .int(-32602), "\(params.encodedString): \(error.encodedString)")
            #expect(error["data"]?["field"] == .string(field), "\(params.encodedString): \(error.encodedString)")
            #expect(error["data"]?["name"] == "InvalidParams")
        }
        let badURL = try rpc.error("getCookieHeader", ["url": "nope"])
        #expect(badURL["code"] == .int(-32602))
        #expect(badURL["data"]?["field"] == "url")
    }

    @Test func moreThan256SetCookieValuesIsALimitError() throws {
        let rpc = try RPCSession()
        let url: JSON = "https://www.example.com/"
        let atLimit = try rpc.response(
            "handleSetCookie", ["url": url, "setCookie": .array(Array(repeating: "a=1", count: 256))])
        #expect(atLimit["result"] != nil, "\(atLimit.encodedString)")
        let over = try rpc.error(
            "handleSetCookie", ["url": url, "setCookie": .array(Array(repeating: "b=1", count: 257))])
        #expect(over["code"] == .int(-32003), "\(over.encodedString)")
        // Nothing of the refused request was stored.
        #expect(CookieResults.named("b", in: try rpc.list()) == nil)
    }

    // MARK: getCookieHeader

    /// RFC 6265bis 5.8.3 step 2: longer paths first, equal paths by earlier creation; a replaced
    /// cookie keeps the creation time of the one it replaces (5.7 step 22).
    @Test func headerOrderAndPathMatch() throws {
        let rpc = try RPCSession()
        try rpc.setCookies("https://www.example.com/a/b/page", ["zeta=1; Path=/"])
        try rpc.setCookies("https://www.example.com/a/b/page", ["long=2; Path=/a/b", "mid=3; Path=/a"])
        try rpc.setCookies("https://www.example.com/a/b/page", ["alpha=4; Path=/"])
        #expect(try rpc.header("https://www.example.com/a/b/c") == "long=2; mid=3; zeta=1; alpha=4")
        let count = try rpc.result("getCookieHeader", ["url": "https://www.example.com/a/b/c"])["count"]
        #expect(count == .int(4))
        #expect(try rpc.header("https://www.example.com/a/b") == "long=2; mid=3; zeta=1; alpha=4")
        #expect(try rpc.header("https://www.example.com/a") == "mid=3; zeta=1; alpha=4")
        #expect(try rpc.header("https://www.example.com/ab") == "zeta=1; alpha=4")

        try rpc.setCookies("https://www.example.com/", ["zeta=9; Path=/"])
        #expect(try rpc.header("https://www.example.com/") == "zeta=9; alpha=4")

        let none = try rpc.result("getCookieHeader", ["url": "https://other.test/"])
        #expect(none["header"] == "")
        #expect(none["count"] == .int(0))
    }

    @Test func secureCookiesGoOnlyToSecureURLs() throws {
        let rpc = try RPCSession()
        try rpc.setCookies("https://www.example.com/", ["sec=1; Secure", "plain=2"])
        #expect(try rpc.header("https://www.example.com/") == "sec=1; plain=2")
        #expect(try rpc.header("http://www.example.com/") == "plain=2")
    }

    @Test func forScriptLeavesOutHttpOnly() throws {
        let rpc = try RPCSession()
        try rpc.setCookies("https://www.example.com/", ["h=1; HttpOnly", "j=2"])
        #expect(try rpc.header("https://www.example.com/") == "h=1; j=2")
        #expect(try rpc.header("https://www.example.com/", ["forScript": true]) == "j=2")
        #expect(try rpc.header("https://www.example.com/", ["forScript": false]) == "h=1; j=2")
    }

    /// RFC 6265bis 5.8.3 step 1: a cross-site request gets no Strict cookie, and Lax ones only on a
    /// top-level navigation; a site is the registrable domain, so sub.example.com is same-site.
    @Test func sameSiteWithSiteForCookies() throws {
        let rpc = try RPCSession()
        try rpc.setCookies(
            "https://www.example.com/",
            ["strict=1; SameSite=Strict", "lax=2; SameSite=Lax", "none=3; SameSite=None; Secure"])
        let url = "https://www.example.com/"
        let all = "strict=1; lax=2; none=3"
        #expect(try rpc.header(url) == all)
        #expect(try rpc.header(url, ["siteForCookies": "https://www.example.com/"]) == all)
        #expect(try rpc.header(url, ["siteForCookies": "https://sub.example.com/page"]) == all)
        #expect(try rpc.header(url, ["siteForCookies": "https://other.test/"]) == "none=3")
        #expect(
            try rpc.header(url, ["siteForCookies": "https://other.test/", "topLevelNavigation": true])
                == "lax=2; none=3")
        #expect(
            try rpc.header(url, ["siteForCookies": "https://example.org/", "topLevelNavigation": false]) == "none=3")

        let cookies = try rpc.list()
        #expect(CookieResults.named("strict", in: cookies)?["sameSite"] == "strict")
        #expect(CookieResults.named("lax", in: cookies)?["sameSite"] == "lax")
        #expect(CookieResults.named("none", in: cookies)?["sameSite"] == "none")
    }

    /// Max-Age wins over Expires (5.6.2), counted from the daemon's clock; a Set-Cookie that arrives
    /// expired removes the stored cookie of the same name, domain and path only (5.7 step 23).
    /// (Cookies running out as time passes: `CookieServiceTests`, on a manual clock.)
    @Test func expiryAndDeletionBySetCookie() throws {
        let rpc = try RPCSession()
        let start = CookieResults.now
        let stored = try rpc.setCookies(
            "https://www.example.com/",
            ["hour=2; Max-Age=3600", "wins=3; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=3600"])
        let end = CookieResults.now
        #expect(stored["stored"] == .int(2), "\(stored.encodedString)")
        #expect(try rpc.header("https://www.example.com/") == "hour=2; wins=3")
        let hour = try #require(CookieResults.named("hour", in: try rpc.list()))
        let expires = try #require(hour["expires"]?.numberValue?.int64Value)
        #expect(expires >= start + 3600 && expires <= end + 3600, "expires \(expires)")

        try rpc.setCookies("https://www.example.com/", ["sid=1", "kept=1; Path=/a", "old=1"])
        try rpc.setCookies(
            "https://www.example.com/",
            ["sid=; Max-Age=0", "kept=; Path=/; Max-Age=0", "old=x; Expires=Thu, 01 Jan 1970 00:00:00 GMT"])
        let names = CookieResults.names(try rpc.list())
        #expect(names == ["hour", "kept", "wins"])
        #expect(try rpc.header("https://www.example.com/a/x") == "kept=1; hour=2; wins=3")
    }

    /// Hosts compare in A-label form and without case (IDNA through libidn2).
    @Test func hostsCompareAsALabelsAndIgnoreCase() throws {
        let rpc = try RPCSession()
        try rpc.setCookies("https://bücher.example/", ["i=1"])
        #expect(try rpc.header("https://xn--bcher-kva.example/") == "i=1")
        try rpc.setCookies("https://WWW.Example.COM/", ["c=1; Domain=EXAMPLE.com"])
        #expect(try rpc.header("https://www.example.com/") == "c=1")
        #expect(try rpc.header("https://api.example.com/") == "c=1")
    }

    /// Parsing rules of RFC 6265bis 5.6, observed through the jar.
    @Test func setCookieParsingRules() throws {
        let rpc = try RPCSession()
        let url = "https://www.example.com/dir/page"
        let before = CookieResults.now
        let result = try rpc.setCookies(
            url,
            [
                "  spaced = 1 ; Path=/ ",  // name and value are trimmed
                "abc",  // no "=": a nameless cookie whose value is "abc"
                "badpath=1; Path=nope",  // a Path not starting with "/" means the default-path
                "dotted=1; Domain=.example.com; Path=/",  // a leading dot is dropped
                "long=1; Path=/" + String(repeating: "x", count: 1100),  // over 1024 octets: attribute ignored
                "odd=1; SameSite=Bogus; Path=/",  // an unknown SameSite value does not reject the cookie
                "y99=1; Expires=Wednesday, 09-Jun-99 10:18:14 GMT",  // 99 is 1999: arrives expired
                "y38=1; Expires=Wed, 09-Jun-38 10:18:14 GMT; Path=/",  // 38 is 2038
                "asc=1; Expires=Wed Jun  9 10:18:14 2100; Path=/",  // asctime form
                "cap=1; Max-Age=999999999; Path=/",
                "cr=1\r\nX-Injected: 1", "lf=1\n", "nul=1\u{0}",
            ])
        let after = CookieResults.now
        #expect(
            CookieResults.rejections(result) == [10: "syntax", 11: "syntax", 12: "syntax"], "\(result.encodedString)")
        let cookies = try rpc.list()
        #expect(
            CookieResults.names(cookies) == ["", "asc", "badpath", "cap", "dotted", "long", "odd", "spaced", "y38"])
        #expect(CookieResults.named("", in: cookies)?["value"] == "abc")
        #expect(CookieResults.named("spaced", in: cookies)?["value"] == "1")
        #expect(CookieResults.named("badpath", in: cookies)?["path"] == "/dir")
        #expect(CookieResults.named("dotted", in: cookies)?["domain"] == "example.com")
        #expect(CookieResults.named("dotted", in: cookies)?["hostOnly"] == false)
        #expect(CookieResults.named("long", in: cookies)?["path"] == "/dir")
        // Expiry is capped at 400 days from now (5.6.1, 5.6.2).
        let cap = Int64(400 * 86_400)
        for name in ["y38", "asc", "cap"] {
            let expires = CookieResults.named(name, in: cookies)?["expires"]?.numberValue?.int64Value ?? 0
            #expect(expires >= before + cap && expires <= after + cap, "\(name): \(expires)")
        }
        let header = try rpc.header(url)
        #expect(!header.contains("\r") && !header.contains("\n"))
        #expect(
            header.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.contains("abc"), "\(header)")
    }

    /// 5.7 step 16: an insecure origin cannot set a cookie that would shadow a Secure one.
    @Test func insecureOriginCannotOverlaySecureCookie() throws {
        let rpc = try RPCSession()
        try rpc.setCookies("https://www.example.com/", ["sid=good; Secure; Path=/"])
        let overlay = try rpc.setCookies("http://www.example.com/", ["sid=evil; Path=/"])
        #expect(overlay["stored"] == .int(0), "\(overlay.encodedString)")
        #expect(try rpc.header("https://www.example.com/") == "sid=good")
        #expect(try rpc.header("http://www.example.com/") == "")
    }

    @Test func getCookieHeaderParamErrors() throws {
        let rpc = try RPCSession()
        let cases: [(JSON, String)] = [
            ([:], "url"),
            (["url": "https://www.example.com/\r\nX-Injected: 1"], "url"),
            (["url": "https://www.example.com/", "siteForCookies": "nope"], "siteForCookies"),
            (["url": "https://203.0.113.10/", "host": ""], "host"),
            (["url": "https://203.0.113.10/", "host": "bad..host"], "host"),
            // Every member is read before the URL is parsed, so a wrong type wins over a bad URL.
            (["url": "nope", "forScript": "yes"], "forScript"),
            (["url": "nope", "siteForCookies": "also nope"], "url"),
            (["url": 7], "url"),
        ]
        for (params, field) in cases {
            let error = try rpc.error("getCookieHeader", params)
            #expect(error["code"] == .int(-32602), "\(params.encodedString): \(error.encodedString)")
            #expect(error["data"]?["field"] == .string(field), "\(params.encodedString): \(error.encodedString)")
        }
    }

    /// The URL is parsed from the request's bytes when it holds no escape, else from its decoded
    /// value: both name the same cookies, and a URL whose escapes decode to a control character
    /// is refused either way.
    @Test func escapedAndPlainURLsReadAlike() throws {
        let rpc = try RPCSession()
        try rpc.setCookies("https://www.example.com/", ["sid=1; Path=/app"])
        let lines = [
            #"{"jsonrpc":"2.0","id":1,"method":"getCookieHeader","params":{"url":"https://www.example.com/app/x"}}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"getCookieHeader","params":{"url":"https:\/\/www.example.com\/app\/x"}}"#,
            #"{"jsonrpc":"2.0","id":3,"method":"getCookieHeader","params":{"url":"https://www.\u0065xample.com/app/x"}}"#,
            #"{"jsonrpc":"2.0","id":4,"method":"getCookieHeader","params":{"url":"https://www.example.com/app\n/x"}}"#,
            #"{"jsonrpc":"2.0","id":5,"method":"getCookieHeader","params":{"url":"https://www.example.com/ap"}}"#,
        ]
        for line in lines { try rpc.client.sendLine(line) }
        var answers: [Int64: JSON] = [:]
        for _ in lines {
            let response = try #require(rpc.client.readJSON())
            answers[try #require(response["id"]?.numberValue?.int64Value)] = response
        }
        for id: Int64 in 1...3 {
            #expect(answers[id]?["result"]?["header"] == "sid=1", "\(id): \(String(describing: answers[id]))")
        }
        #expect(answers[4]?["error"]?["data"]?["field"] == "url", "\(String(describing: answers[4]))")
        #expect(answers[5]?["result"]?["header"] == "", "\(String(describing: answers[5]))")
        // handleSetCookie reads its URL the same way.
        try rpc.client.sendLine(
            #"{"jsonrpc":"2.0","id":6,"method":"handleSetCookie","params":{"url":"https:\/\/www.example.com\/app\/","setCookie":["b=2"]}}"#
        )
        let stored = try #require(rpc.client.readJSON())
        #expect(stored["result"]?["host"] == "www.example.com", "\(stored)")
        #expect(try rpc.header("https://www.example.com/app/x") == "sid=1; b=2")
    }

    /// `[Cookies] MaxPerDomain=` counts a registrable domain with its subdomains and evicts the least
    /// recently used cookie; `MaxTotal=` bounds the jar; the cookie just set always stays.
    @Test func limitsEvictLeastRecentlyUsed() throws {
        let rpc = try RPCSession(config: "[Cookies]\nMaxPerDomain=5\nMaxTotal=8\n")
        try rpc.setCookies("https://www.example.com/", (1...5).map { "a\($0)=1; Path=/p\($0)" })
        #expect(try rpc.header("https://www.example.com/p1") == "a1=1")  // a1 is now the most recently used
        try rpc.setCookies("https://api.example.com/", ["b=1"])
        #expect(CookieResults.names(try rpc.list()) == ["a1", "a3", "a4", "a5", "b"])
        try rpc.setCookies("https://other.test/", ["o1=1", "o2=1", "o3=1"])
        #expect(try rpc.list().count == 8)
        try rpc.setCookies("https://third.test/", ["t=1"])
        let names = CookieResults.names(try rpc.list())
        #expect(names.count == 8)
        #expect(names.contains("t"))
        #expect(!names.contains("a3"), "a3 was the least recently used: \(names)")
    }

    // MARK: deleteCookies / listCookies

    private static func seed(_ rpc: RPCSession) throws {
        try rpc.setCookies(
            "https://www.example.com/app/page",
            ["a=1; Path=/", "b=2; Path=/app", "c=3; Domain=example.com; Path=/", "s=4; Secure; Path=/"])
        try rpc.setCookies("https://api.example.com/", ["d=5"])
        try rpc.setCookies("https://other.test/", ["e=6"])
        try rpc.setCookies("https://notexample.com/", ["f=7"])
    }

    @Test func deleteByURLDeletesWhatTheHeaderWouldSend() throws {
        let rpc = try RPCSession()
        try Self.seed(rpc)
        #expect(try rpc.header("http://www.example.com/app") == "b=2; a=1; c=3")
        #expect(try rpc.deleted(["url": "http://www.example.com/app"]) == 3)
        #expect(CookieResults.names(try rpc.list()) == ["d", "e", "f", "s"])
        #expect(try rpc.deleted(["url": "https://www.example.com/", "name": "nosuch"]) == 0)
        #expect(try rpc.deleted(["url": "https://www.example.com/", "name": "s"]) == 1)
        #expect(CookieResults.names(try rpc.list()) == ["d", "e", "f"])
    }

    @Test func deleteByDomainTakesSubdomainsOnly() throws {
        let rpc = try RPCSession()
        try Self.seed(rpc)
        // www.example.com holds a, b and s; c belongs to the parent example.com.
        #expect(try rpc.deleted(["domain": "www.example.com"]) == 3)
        #expect(CookieResults.names(try rpc.list()) == ["c", "d", "e", "f"])
        #expect(try rpc.deleted(["domain": "other.test", "name": "zzz"]) == 0)
        #expect(try rpc.deleted(["domain": "example.com"]) == 2)
        #expect(CookieResults.names(try rpc.list()) == ["e", "f"])
        #expect(try rpc.deleted(["domain": "other.test", "name": "e"]) == 1)
        #expect(CookieResults.names(try rpc.list()) == ["f"])
    }

    @Test func deleteAll() throws {
        let rpc = try RPCSession()
        try Self.seed(rpc)
        #expect(try rpc.deleted(["all": true, "name": "e"]) == 1)
        #expect(try rpc.deleted(["all": true]) == 6)
        #expect(try rpc.list().isEmpty)
        #expect(try rpc.deleted(["all": true]) == 0)
    }

    @Test func deleteNeedsExactlyOneTarget() throws {
        let rpc = try RPCSession()
        try Self.seed(rpc)
        let cases: [JSON] = [
            [:], ["name": "a"], ["all": false],
            ["url": "https://www.example.com/", "domain": "example.com"],
            ["domain": "example.com", "all": true],
            ["url": "https://www.example.com/", "all": true],
        ]
        for params in cases {
            let error = try rpc.error("deleteCookies", params)
            #expect(error["code"] == .int(-32602), "\(params.encodedString): \(error.encodedString)")
            let field = error["data"]?["field"]?.stringValue
            #expect(["url", "domain", "all"].contains(field ?? ""), "\(params.encodedString): \(error.encodedString)")
        }
        #expect(try rpc.list().count == 7, "a rejected delete deleted something")
    }

    @Test func listRecordsHaveTheContractFields() throws {
        let rpc = try RPCSession()
        let before = CookieResults.now
        try Self.seed(rpc)
        try rpc.setCookies(
            "https://www.example.com/app/page", ["p=v; Max-Age=3600; Secure; HttpOnly; SameSite=Lax", "dp=1"])
        let after = CookieResults.now
        let cookies = try rpc.list()
        #expect(CookieResults.names(cookies) == ["a", "b", "c", "d", "dp", "e", "f", "p", "s"])
        for cookie in cookies {
            for key in ["name", "value", "domain", "path", "sameSite"] {
                #expect(cookie[key]?.stringValue != nil, "\(key) in \(cookie.encodedString)")
            }
            for key in ["hostOnly", "secure", "httpOnly"] {
                #expect(cookie[key]?.boolValue != nil, "\(key) in \(cookie.encodedString)")
            }
            let created = cookie["created"]?.numberValue?.int64Value ?? 0
            #expect(created >= before - 1 && created <= after + 1, "\(cookie.encodedString)")
            #expect(cookie["expires"] != nil, "expires must be present (null for session): \(cookie.encodedString)")
        }
        let a = try #require(CookieResults.named("a", in: cookies))
        #expect(a["value"] == "1")
        #expect(a["domain"] == "www.example.com")
        #expect(a["hostOnly"] == true)
        #expect(a["path"] == "/")
        #expect(a["expires"] == .null)
        #expect(a["secure"] == false)
        #expect(a["httpOnly"] == false)
        let c = try #require(CookieResults.named("c", in: cookies))
        #expect(c["domain"] == "example.com")
        #expect(c["hostOnly"] == false)
        // Default-path (5.1.4): the request path up to, not including, its right-most "/".
        #expect(CookieResults.named("dp", in: cookies)?["path"] == "/app")
        let p = try #require(CookieResults.named("p", in: cookies))
        #expect(p["secure"] == true)
        #expect(p["httpOnly"] == true)
        #expect(p["sameSite"] == "lax")
        let expires = p["expires"]?.numberValue?.int64Value ?? 0
        #expect(expires >= before + 3599 && expires <= after + 3601)

        #expect(CookieResults.names(try rpc.list(domain: "other.test")) == ["e"])
        #expect(CookieResults.names(try rpc.list(domain: "api.example.com")) == ["d"])
        let underExample = CookieResults.names(try rpc.list(domain: "example.com"))
        #expect(underExample == ["a", "b", "c", "d", "dp", "p", "s"])
        #expect(try rpc.list(domain: "nothing.test").isEmpty)
    }
}

/// Domain normalization (httpdnsd-rpc(7), JARS AND ADDRESS MEMORY): cookies from an IP-literal URL are kept under a host name.
@Suite(.serialized)
struct DomainNormalizationSocketTests {
    static let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "a.example.com": (["203.0.113.10", "203.0.113.11"], ["2001:db8::10"], 300),
        "first.example.com": (["203.0.113.20"], [], 300),
        "second.example.com": (["203.0.113.20"], [], 300),
        "brief.example.com": (["203.0.113.30"], [], 1),
        "lasting.example.com": (["203.0.113.30"], [], 300),
    ]

    private static func start() throws -> (FakeHTTPServer, RPCSession) {
        let upstream = try FakeHTTPServer.alibaba(answers: answers)
        let rpc = try RPCSession(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let resolved = try rpc.result("resolve", ["host": "a.example.com"])
        let addresses = (resolved["ipv4"]?.arrayValue ?? []) + (resolved["ipv6"]?.arrayValue ?? [])
        #expect(addresses.compactMap(\.stringValue).sorted() == ["2001:db8::10", "203.0.113.10", "203.0.113.11"])
        return (upstream, rpc)
    }

    @Test func cookieFromOneIPIsSentThroughEveryIPOfTheHost() throws {
        let (upstream, rpc) = try Self.start()
        defer { upstream.stop() }
        let stored = try rpc.setCookies("https://203.0.113.10/login", ["sid=abc; Path=/; Secure; HttpOnly"])
        #expect(stored["host"] == "a.example.com", "\(stored.encodedString)")
        #expect(stored["stored"] == .int(1))

        #expect(try rpc.header("https://203.0.113.11/x") == "sid=abc")
        #expect(try rpc.header("https://203.0.113.10/x") == "sid=abc")
        #expect(try rpc.header("https://[2001:db8::10]/x") == "sid=abc")
        // Another spelling of the same addresses, and a port, change nothing.
        #expect(try rpc.header("https://[2001:DB8:0:0::10]/x") == "sid=abc")
        #expect(try rpc.header("https://203.0.113.11:8443/x") == "sid=abc")
        #expect(try rpc.header("https://a.example.com/x") == "sid=abc")
        // Host-only for a.example.com: not a subdomain, not its parent.
        #expect(try rpc.header("https://x.a.example.com/x") == "")
        #expect(try rpc.header("https://example.com/x") == "")

        let cookies = try rpc.list()
        #expect(cookies.count == 1)
        #expect(cookies.first?["domain"] == "a.example.com")
        #expect(cookies.first?["hostOnly"] == true)
        #expect(!cookies.contains { ($0["domain"]?.stringValue ?? "").contains("203.0.113") })
    }

    @Test func deleteAndListThroughAnotherIP() throws {
        let (upstream, rpc) = try Self.start()
        defer { upstream.stop() }
        try rpc.setCookies("https://203.0.113.10/", ["sid=1", "other=2; Path=/other"])
        #expect(CookieResults.names(try rpc.list(domain: "a.example.com")) == ["other", "sid"])
        #expect(try rpc.deleted(["url": "https://203.0.113.11/"]) == 1)
        #expect(CookieResults.names(try rpc.list()) == ["other"])
        #expect(try rpc.deleted(["url": "https://198.51.100.9/other", "host": "a.example.com"]) == 1)
        #expect(try rpc.list().isEmpty)
    }

    /// `Domain=<IP>` is taken as the host name: a host-only cookie for it; a parent-domain
    /// attribute is matched against the host name, not the IP.
    @Test func domainAttributeAgainstTheHostName() throws {
        let (upstream, rpc) = try Self.start()
        defer { upstream.stop() }
        let result = try rpc.setCookies(
            "https://203.0.113.10/", ["d=1; Domain=203.0.113.10", "w=2; Domain=example.com", "x=3; Domain=other.test"])
        #expect(result["host"] == "a.example.com")
        #expect(CookieResults.rejections(result) == [2: "domain-mismatch"], "\(result.encodedString)")
        let cookies = try rpc.list()
        let d = try #require(CookieResults.named("d", in: cookies))
        #expect(d["domain"] == "a.example.com")
        #expect(d["hostOnly"] == true)
        let w = try #require(CookieResults.named("w", in: cookies))
        #expect(w["domain"] == "example.com")
        #expect(w["hostOnly"] == false)
        #expect(try rpc.header("https://www.example.com/") == "w=2")
        #expect(try rpc.header("https://203.0.113.11/") == "d=1; w=2")
    }

    @Test func hostParamNamesTheHostOfAnUnresolvedIP() throws {
        let (upstream, rpc) = try Self.start()
        defer { upstream.stop() }
        let result = try rpc.setCookies("https://198.51.100.7/", ["t=1"], host: "b.example.com")
        #expect(result["host"] == "b.example.com", "\(result.encodedString)")
        #expect(try rpc.header("https://b.example.com/") == "t=1")
        #expect(try rpc.header("https://198.51.100.7/", ["host": "b.example.com"]) == "t=1")
        // Without `host`, this IP has no known host name: the cookie stored for b.example.com is not its.
        #expect(try rpc.header("https://198.51.100.7/") == "")
        #expect(CookieResults.named("t", in: try rpc.list())?["domain"] == "b.example.com")
        // The host param wins over the resolver's memory too.
        let explicit = try rpc.setCookies("https://203.0.113.10/", ["u=1"], host: "c.example.com")
        #expect(explicit["host"] == "c.example.com")
        #expect(try rpc.header("https://a.example.com/") == "")
    }

    @Test func withoutAnyKnownHostTheIPItselfIsTheKey() throws {
        let (upstream, rpc) = try Self.start()
        defer { upstream.stop() }
        let result = try rpc.setCookies("https://192.0.2.55/", ["u=1"])
        #expect(result["host"] == "192.0.2.55", "\(result.encodedString)")
        #expect(try rpc.header("https://192.0.2.55/") == "u=1")
        #expect(try rpc.header("https://192.0.2.56/") == "")
        let u = try #require(CookieResults.named("u", in: try rpc.list()))
        #expect(u["domain"] == "192.0.2.55")
        #expect(u["hostOnly"] == true)
    }

    /// A name resolved to an address after another name's answer for it expired does not take the
    /// address over: the expired name is still remembered, so a cookie set through the address
    /// without `host` is ambiguous rather than filed under the newer name (on a manual clock:
    /// `CookieServiceTests`). Here the daemon's real clock runs out the 1 s TTL: the wait is the
    /// behaviour under test, polled (with a generous bound) rather than slept.
    @Test func aNameResolvedAfterAnotherExpiredDoesNotTakeTheAddressOver() throws {
        let (upstream, rpc) = try Self.start()
        defer { upstream.stop() }
        _ = try rpc.result("resolve", ["host": "brief.example.com", "family": "ipv4"])
        #expect(try rpc.setCookies("https://203.0.113.30/", ["brief_sid=1"])["host"] == "brief.example.com")
        #expect(
            try eventually(30, every: 50) { try rpc.result("reverse", ["address": "203.0.113.30"])["ttl"] == 0 },
            "brief.example.com's answer did not expire")
        _ = try rpc.result("resolve", ["host": "lasting.example.com", "family": "ipv4"])
        let error = try rpc.error("handleSetCookie", ["url": "https://203.0.113.30/", "setCookie": ["s=1"]])
        #expect(error["code"] == .int(-32602), "\(error.encodedString)")
        #expect(error["data"]?["reason"] == "ambiguous-address")
        #expect(error["data"]?["candidates"] == ["lasting.example.com", "brief.example.com"])
        #expect(try rpc.header("https://lasting.example.com/") == "")
        #expect(try rpc.header("https://203.0.113.30/", ["host": "brief.example.com"]) == "brief_sid=1")
    }

    @Test func twoOfTheCallersNamesOnOneIPAreAnAmbiguousAddress() throws {
        let (upstream, rpc) = try Self.start()
        defer { upstream.stop() }
        _ = try rpc.result("resolve", ["host": "first.example.com", "family": "ipv4"])
        _ = try rpc.result("resolve", ["host": "second.example.com", "family": "ipv4"])
        let calls: [(String, JSON)] = [
            ("handleSetCookie", ["url": "https://203.0.113.20/", "setCookie": ["s=1"]]),
            ("getCookieHeader", ["url": "https://203.0.113.20/"]),
            ("deleteCookies", ["url": "https://203.0.113.20/"]),
        ]
        for (method, params) in calls {
            let error = try rpc.error(method, params)
            #expect(error["code"] == .int(-32602), "\(method): \(error.encodedString)")
            #expect(error["data"]?["name"] == "InvalidParams")
            #expect(error["data"]?["field"] == "host")
            #expect(error["data"]?["reason"] == "ambiguous-address")
            #expect(error["data"]?["candidates"] == ["second.example.com", "first.example.com"])
        }
        #expect(try rpc.list().isEmpty)
        // Naming the host settles it.
        let result = try rpc.setCookies("https://203.0.113.20/", ["s=1"], host: "first.example.com")
        #expect(result["host"] == "first.example.com", "\(result.encodedString)")
        #expect(try rpc.header("https://first.example.com/") == "s=1")
        #expect(try rpc.header("https://second.example.com/") == "")
    }
}

/// cookies.txt interop with the real curl, against a fake site on 127.0.0.1.
@Suite(.serialized)
struct NetscapeCurlSocketTests {
    /// Sets three cookies on /login (one HttpOnly, one persistent) and records every request.
    private static func site() throws -> FakeHTTPServer {
        try FakeHTTPServer { request in
            guard request.path == "/login" else { return .text("ok") }
            return .respond(
                status: 200,
                headers: [
                    ("Set-Cookie", "sid=abc123; Path=/"), ("Set-Cookie", "tok=xyz; Path=/; HttpOnly"),
                    ("Set-Cookie", "pref=dark; Path=/; Max-Age=3600"), ("Content-Type", "text/plain"),
                ],
                body: Array("welcome".utf8))
        }
    }

    private static func curl(_ arguments: [String]) throws -> CommandResult {
        let result = try runCommand("/usr/bin/curl", ["-s", "-S", "--noproxy", "*", "--max-time", "10"] + arguments)
        #expect(result.status == 0, "curl \(arguments): \(result.stderr)")
        return result
    }

    /// The Cookie header values the fake received on `path`.
    private static func cookieHeaders(_ site: FakeHTTPServer, path: String) -> [String] {
        site.requests.filter { $0.path == path }.map { $0.header("Cookie") ?? "" }
    }

    @Test func curlJarImportsAndExportedJarIsReadByCurl() throws {
        let site = try Self.site()
        defer { site.stop() }
        let scratch = TemporaryDirectory(prefix: "jar")
        let jar = scratch.file("jar.txt")
        let before = CookieResults.now
        _ = try Self.curl(["-c", jar, "\(site.baseURL)/login"])
        let after = CookieResults.now
        let jarText = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(jarText.contains("#HttpOnly_127.0.0.1\t"), "curl wrote no #HttpOnly_ line:\n\(jarText)")

        let rpc = try RPCSession()
        let imported = try rpc.result("importCookies", ["format": "netscape", "data": .string(jarText)])
        #expect(imported["imported"] == .int(3), "\(imported.encodedString)")
        let cookies = try rpc.list()
        #expect(CookieResults.names(cookies) == ["pref", "sid", "tok"])
        for cookie in cookies { #expect(cookie["domain"] == "127.0.0.1", "\(cookie.encodedString)") }
        #expect(CookieResults.named("tok", in: cookies)?["httpOnly"] == true)
        #expect(CookieResults.named("sid", in: cookies)?["httpOnly"] == false)
        #expect(CookieResults.named("sid", in: cookies)?["expires"] == .null)
        let prefExpires = CookieResults.named("pref", in: cookies)?["expires"]?.numberValue?.int64Value ?? 0
        // curl counted Max-Age=3600 from its own clock, while it ran.
        #expect(prefExpires >= before + 3600 && prefExpires <= after + 3600, "\(prefExpires)")
        let forScript = try rpc.header("\(site.baseURL)/check", ["forScript": true])
        #expect(
            Set(forScript.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }) == [
                "sid=abc123", "pref=dark",
            ])

        // A cookie the daemon took from a response must reach curl too.
        try rpc.setCookies("\(site.baseURL)/", ["made=bydaemon; Path=/"])
        let exported = try #require(try rpc.result("exportCookies", ["format": "netscape"])["data"]?.stringValue)
        #expect(exported.contains("#HttpOnly_127.0.0.1\t"), "no #HttpOnly_ line in:\n\(exported)")
        let exportedPath = scratch.file("exported.txt")
        try exported.write(toFile: exportedPath, atomically: true, encoding: .utf8)
        _ = try Self.curl(["-b", exportedPath, "\(site.baseURL)/check"])
        let received = try #require(Self.cookieHeaders(site, path: "/check").last)
        let pairs = Set(received.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(pairs == ["sid=abc123", "tok=xyz", "pref=dark", "made=bydaemon"], "curl sent: \(received)")
    }

    /// A cookie holding a TAB (kept by the jar: RFC 6265bis allows one inside a value) is left out of
    /// the export and named in `leftOut`, so that curl and Python's MozillaCookieJar read every line
    /// of the file as written.
    @Test func cookiesHoldingATabAreLeftOutOfTheExport() throws {
        let site = try Self.site()
        defer { site.stop() }
        let rpc = try RPCSession()
        try rpc.setCookies("\(site.baseURL)/", ["tabbed=a\tb; Path=/", "plain=1; Path=/", "t\tname=2; Path=/"])
        #expect(try rpc.header("\(site.baseURL)/check") == "tabbed=a\tb; plain=1; t\tname=2")
        let result = try rpc.result("exportCookies", [:])
        #expect(
            result["leftOut"] == [
                ["domain": "127.0.0.1", "path": "/", "name": "tabbed"],
                ["domain": "127.0.0.1", "path": "/", "name": "t\tname"],
            ], "\(result.encodedString)")
        let exported = try #require(result["data"]?.stringValue)
        let scratch = TemporaryDirectory(prefix: "jar")
        let path = scratch.file("exported.txt")
        try exported.write(toFile: path, atomically: true, encoding: .utf8)

        _ = try Self.curl(["-b", path, "\(site.baseURL)/check"])
        #expect(Self.cookieHeaders(site, path: "/check").last == "plain=1")
        let python = try runCommand(
            "/usr/bin/python3",
            [
                "-c",
                "import http.cookiejar, sys\nj = http.cookiejar.MozillaCookieJar(sys.argv[1])\n"
                    + "j.load(ignore_discard=True, ignore_expires=True)\n"
                    + "print(sorted((c.name, c.value) for c in j))",
                path,
            ])
        #expect(python.status == 0, "\(python.stderr)")
        #expect(python.stdout == "[('plain', '1')]\n")
    }

    /// Domain cookies: curl writes `.example.com TRUE`; after the round trip a sibling host gets them.
    /// `--resolve` keeps every connection on 127.0.0.1 while curl sees real host names.
    @Test func domainCookiesRoundTripThroughCurl() throws {
        let site = try FakeHTTPServer { request in
            guard request.path == "/login" else { return .text("ok") }
            return .respond(
                status: 200,
                headers: [
                    ("Set-Cookie", "dom=1; Domain=example.com; Path=/"),
                    ("Set-Cookie", "hostonly=2; Path=/; HttpOnly"),
                ],
                body: [])
        }
        defer { site.stop() }
        let scratch = TemporaryDirectory(prefix: "jar")
        let jar = scratch.file("jar.txt")
        func resolveTo(_ host: String) -> [String] { ["--resolve", "\(host):\(site.port):127.0.0.1"] }
        _ = try Self.curl(resolveTo("www.example.com") + ["-c", jar, "http://www.example.com:\(site.port)/login"])

        let rpc = try RPCSession()
        let jarText = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(
            try rpc.result("importCookies", ["format": "netscape", "data": .string(jarText)])["imported"] == .int(2))
        let cookies = try rpc.list()
        #expect(CookieResults.named("dom", in: cookies)?["domain"] == "example.com", "\(jarText)")
        #expect(CookieResults.named("dom", in: cookies)?["hostOnly"] == false)
        #expect(CookieResults.named("hostonly", in: cookies)?["domain"] == "www.example.com")
        #expect(CookieResults.named("hostonly", in: cookies)?["hostOnly"] == true)
        #expect(CookieResults.named("hostonly", in: cookies)?["httpOnly"] == true)
        #expect(try rpc.header("http://api.example.com/") == "dom=1")

        let exported = try #require(try rpc.result("exportCookies", ["format": "netscape"])["data"]?.stringValue)
        let exportedPath = scratch.file("exported.txt")
        try exported.write(toFile: exportedPath, atomically: true, encoding: .utf8)
        _ = try Self.curl(resolveTo("api.example.com") + ["-b", exportedPath, "http://api.example.com:\(site.port)/a"])
        _ = try Self.curl(resolveTo("www.example.com") + ["-b", exportedPath, "http://www.example.com:\(site.port)/b"])
        #expect(Self.cookieHeaders(site, path: "/a") == ["dom=1"], "\(exported)")
        let www = Set(
            (Self.cookieHeaders(site, path: "/b").first ?? "").split(separator: ";").map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        #expect(www == ["dom=1", "hostonly=2"], "\(exported)")
    }

    @Test func exportedLinesHaveTheSevenNetscapeFieldsAndBadFormatsAreRefused() throws {
        let rpc = try RPCSession()
        try rpc.setCookies("https://www.example.com/", ["a=1"])
        let exported = try rpc.result("exportCookies", ["format": "netscape"])["data"]?.stringValue ?? ""
        let line = exported.split(separator: "\n").first { !$0.hasPrefix("#") || $0.hasPrefix("#HttpOnly_") }
        let fields = (line ?? "").split(separator: "\t", omittingEmptySubsequences: false)
        #expect(fields.count == 7, "\(exported)")
        if fields.count == 7 {
            #expect(fields[0] == "www.example.com")
            #expect(fields[1] == "FALSE")
            #expect(fields[2] == "/")
            #expect(fields[5] == "a")
            #expect(fields[6] == "1")
        }

        let badFormats: [(String, JSON)] = [
            ("exportCookies", ["format": "json"]), ("importCookies", ["format": "xml", "data": ""]),
        ]
        for (method, params) in badFormats {
            let error = try rpc.error(method, params)
            #expect(error["code"] == .int(-32602), "\(method): \(error.encodedString)")
            #expect(error["data"]?["field"] == "format", "\(method): \(error.encodedString)")
        }
        let missing = try rpc.error("importCookies", ["format": "netscape"])
        #expect(missing["code"] == .int(-32602))
        #expect(missing["data"]?["field"] == "data")
    }
}
