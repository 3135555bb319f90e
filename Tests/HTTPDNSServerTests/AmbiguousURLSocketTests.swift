import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// URLs that curl's RFC 3986 reading sends to another host than the URL Standard's (the daemon's
/// parser): every cookie method that takes a URL refuses them with -32602 and `data.reason`
/// `ambiguous-url`, and nothing is filed under either host.
@Suite(.serialized)
struct AmbiguousURLSocketTests {
    static let ambiguous = [
        // curl connects to attacker.example with userinfo "bank.example\"; the Standard reads bank.example.
        #"http://bank.example\@attacker.example:9001/steal"#,
        // curl takes userinfo to the first "@", the Standard to the last.
        "http://bank.example@x@attacker.example/",
        // Percent-escapes in the host are decoded by the Standard only.
        "http://%62ank.example/",
        // The Standard reads 127.0.0.1; other readers another host, or a name.
        "http://0x7f.1/",
        // Backslashes and a missing slash are separators to the Standard only.
        #"http:\\bank.example/"#, "http:/bank.example/",
    ]

    @Test func everyCookieMethodRefusesAnAmbiguousURL() throws {
        let rpc = try RPCSession()
        for url in Self.ambiguous {
            let calls: [(String, JSON, String)] = [
                ("handleSetCookie", ["url": .string(url), "setCookie": ["sid=ATTACKER-FIXED"]], "url"),
                ("getCookieHeader", ["url": .string(url)], "url"),
                ("deleteCookies", ["url": .string(url)], "url"),
                (
                    "getCookieHeader", ["url": "https://bank.example/", "siteForCookies": .string(url)],
                    "siteForCookies"
                ),
            ]
            for (method, params, field) in calls {
                let error = try rpc.error(method, params)
                #expect(error["code"] == .int(-32602), "\(method) \(url): \(error.encodedString)")
                #expect(error["data"]?["name"] == "InvalidParams")
                #expect(error["data"]?["field"] == .string(field), "\(method) \(url): \(error.encodedString)")
                #expect(error["data"]?["reason"] == "ambiguous-url", "\(method) \(url): \(error.encodedString)")
            }
        }
        #expect(try rpc.list().isEmpty)
        // The same hosts written plainly are served.
        try rpc.setCookies("http://bank.example/", ["sid=1"])
        #expect(try rpc.header("http://user@bank.example/a") == "sid=1")
        #expect(try rpc.header(#"http://bank.example/a\b"#) == "sid=1")
    }
}
