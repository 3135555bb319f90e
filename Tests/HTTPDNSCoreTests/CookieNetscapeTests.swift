import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// Netscape cookies.txt, as curl, wget and Python's MozillaCookieJar write it.
struct CookieNetscapeTests {
    static let now = JarHarness.now

    @Test func exportFormat() throws {
        let h = JarHarness()
        try h.set("sid=abc; Secure; HttpOnly; Max-Age=3600", url: "https://www.example.com/")
        try h.set("lang=en; Domain=example.com; Path=/docs", url: "http://www.example.com/")
        let text = h.jar.exportNetscape(now: Self.now).text
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "# Netscape HTTP Cookie File")
        let records = lines.filter { !$0.isEmpty && (!$0.hasPrefix("#") || $0.hasPrefix("#HttpOnly_")) }
        #expect(
            records == [
                ".example.com\tTRUE\t/docs\tFALSE\t0\tlang\ten",
                "#HttpOnly_www.example.com\tFALSE\t/\tTRUE\t\(Self.now + 3600)\tsid\tabc",
            ])
        #expect(text.hasSuffix("\n"))
    }

    @Test func roundTrip() throws {
        let h = JarHarness()
        try h.set("a=1; Max-Age=100", "c=3; Domain=example.com; HttpOnly", url: "http://www.example.com/p/q")
        try h.set("s=1; Secure; Path=/", url: "https://example.org/")
        try h.set("v6=1", url: "http://[2001:db8::1]/")
        let exported = h.jar.exportNetscape(now: Self.now)
        #expect(exported.leftOut.isEmpty)
        #expect(!exported.text.contains("Left out"))

        let copy = JarHarness()
        let result = copy.jar.importNetscape(exported.text, now: Self.now)
        #expect(result == NetscapeImportResult(imported: 4))
        func fields(_ cookies: [Cookie]) -> [String] {
            cookies.map {
                "\($0.name)=\($0.value) \($0.domain) \($0.hostOnly) \($0.path) \($0.expires ?? -1) \($0.secure) \($0.httpOnly)"
            }
        }
        #expect(fields(try copy.jar.list(now: Self.now)) == fields(try h.jar.list(now: Self.now)))
    }

    /// The TAB check reads eight bytes a step: a TAB at any offset of a longer value is found,
    /// and a value of any length without one is written.
    @Test func aTabAtAnyOffsetOfAValueIsFound() {
        func cookie(_ value: String) -> Cookie {
            Cookie(
                name: "n", value: value, domain: "example.com", hostOnly: true, path: "/", expires: nil, secure: false,
                httpOnly: false, sameSite: .default, partitioned: false, created: 0, creationIndex: 0, lastAccess: 0)
        }
        for length in 0...40 {
            let plain = String(repeating: "v", count: length)
            #expect(CookieJar.netscapeCanHold(cookie(plain)), "\(length)")
            for offset in 0..<length {
                var bytes = Array(plain.utf8)
                bytes[offset] = 0x09
                #expect(
                    !CookieJar.netscapeCanHold(cookie(String(decoding: bytes, as: UTF8.self))), "\(length) \(offset)")
            }
        }
    }

    /// A TAB is allowed inside a value (RFC 6265bis 5.6: only CTLs other than HTAB refuse a cookie,
    /// and only leading and trailing ones are trimmed), and the jar keeps it; but curl and Python
    /// split a cookies.txt line at every TAB, so export leaves such cookies out, names them, and
    /// says so in a comment, as it does for names and paths holding one.
    @Test func cookiesHoldingATabAreLeftOutOfTheExportAndNamed() throws {
        let h = JarHarness()
        try h.set("v=x\ty", "n\tm=1", "ok=1", "p=1; Path=/a\tb", url: "http://www.example.com/")
        #expect(try h.jar.list(now: Self.now).count == 4)
        #expect(try h.header("http://www.example.com/") == "v=x\ty; n\tm=1; ok=1")
        let export = h.jar.exportNetscape(now: Self.now)
        #expect(
            export.leftOut == [
                CookieKey(domain: "www.example.com", path: "/", name: "v"),
                CookieKey(domain: "www.example.com", path: "/", name: "n\tm"),
                CookieKey(domain: "www.example.com", path: "/a\tb", name: "p"),
            ])
        let lines = export.text.split(separator: "\n")
        #expect(lines.contains("# Left out: 3 cookies holding a TAB in the name, value or path."))
        // Every line but comments has exactly seven fields: what the readers split on.
        let records = lines.filter { !$0.hasPrefix("#") || $0.hasPrefix("#HttpOnly_") }
        #expect(records == ["www.example.com\tFALSE\t/\tFALSE\t0\tok\t1"])
        let copy = JarHarness()
        #expect(copy.jar.importNetscape(export.text, now: Self.now) == NetscapeImportResult(imported: 1))
    }

    @Test func importSkipsWhatItCannotUse() throws {
        let now = Self.now
        let text = [
            "# Netscape HTTP Cookie File",
            "# https://curl.se/docs/http-cookies.html",
            "",
            ".example.com\tTRUE\t/\tFALSE\t0\tsession\tyes\r",
            "#HttpOnly_www.example.com\tFALSE\t/\tTRUE\t\(now + 60)\thttponly\tyes",
            "example.net\tTRUE\t/\tFALSE\t\(now + 60)\tflagged\tyes",
            "www.example.com\tFALSE\t/\tFALSE\t\(now - 1)\texpired\tyes",
            "www.example.com\tFALSE\t/\tFALSE\t0\tsix-fields",
            "www.example.com\tMAYBE\t/\tFALSE\t0\tbadflag\tx",
            "www.example.com\tFALSE\tnoslash\tFALSE\t0\tbadpath\tx",
            "www.example.com\tFALSE\t/\tFALSE\tsoon\tbadexpiry\tx",
            "www.example.com\tFALSE\t/\tFALSE\t-5\tnegative\tx",
            "bad host\tFALSE\t/\tFALSE\t0\tbadhost\tx",
            ".com\tTRUE\t/\tFALSE\t0\tsupercookie\tx",
            "www.example.com\tFALSE\t/\tFALSE\t0\tctl\tx\u{1}y",
            "www.example.com\tFALSE\t/\(String(repeating: "p", count: 1024))\tFALSE\t0\tlongpath\tx",
            "   ",
        ].joined(separator: "\n")
        let h = JarHarness()
        let result = h.jar.importNetscape(text, now: now)
        #expect(result == NetscapeImportResult(imported: 3, skipped: 9, expired: 1))
        let cookies = try h.jar.list(now: now)
        #expect(cookies.map(\.name) == ["session", "flagged", "httponly"])
        #expect(cookies[0].value == "yes")  // The CR of a CRLF line is not part of the value.
        #expect(!cookies[0].hostOnly && cookies[0].expires == nil)
        #expect(!cookies[1].hostOnly && cookies[1].domain == "example.net")
        #expect(cookies[2].httpOnly && cookies[2].secure && cookies[2].hostOnly)
        #expect(try h.header("http://a.example.com/") == "session=yes")
    }

    @Test func importReplacesAndCapsExpiry() throws {
        let now = Self.now
        let h = JarHarness()
        try h.set("a=old", url: "http://example.com/")
        let result = h.jar.importNetscape("example.com\tFALSE\t/\tFALSE\t9999999999\ta\tnew\n", now: now)
        #expect(result.imported == 1)
        let cookie = try h.only()
        #expect(cookie.value == "new")
        #expect(cookie.expires == now + 400 * 86_400)
    }
}
