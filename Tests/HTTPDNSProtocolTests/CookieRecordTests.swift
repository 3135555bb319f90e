import HTTPDNSProtocol
import Testing

/// The cookie as `listCookies` shows it: pinned bytes for every field variant, and the reading a
/// client does of them.
struct CookieRecordTests {
    static let session = Cookie(
        name: "sid", value: "a\"b\\c\td\ne\u{1}é😀", domain: "a.example.com", hostOnly: true, path: "/",
        expires: nil, secure: true, httpOnly: true, sameSite: .strict, partitioned: false, created: 1_764_400_000,
        creationIndex: 7, lastAccess: 1_764_400_500)
    static let persistent = Cookie(
        name: "", value: "v", domain: "example.com", hostOnly: false, path: "/p/q", expires: 1_767_225_600,
        secure: false, httpOnly: false, sameSite: .lax, partitioned: true, created: 0)
    static let crossSite = Cookie(
        name: "a/b", value: "", domain: "192.0.2.1", hostOnly: true, path: "/x y", expires: 0, secure: true,
        httpOnly: false, sameSite: .none, partitioned: true, created: 1)
    static let withoutSameSite = Cookie(
        name: "q\\", value: "\u{2028}\u{7F}", domain: "xn--bcher-kva.example", hostOnly: false, path: "/",
        expires: -1, secure: false, httpOnly: true, sameSite: .default, partitioned: false, created: 42,
        creationIndex: 1)

    /// Every cookie with the bytes the daemon writes for it: the jar's bookkeeping (creationIndex,
    /// lastAccess) is never on the wire; only `"`, `\` and control characters are escaped.
    static let pinned: [(Cookie, String)] = [
        (
            session,
            #"{"name":"sid","value":"a\"b\\c\td\ne\u0001é😀","domain":"a.example.com","hostOnly":true,"path":"/","#
                + #""expires":null,"secure":true,"httpOnly":true,"sameSite":"strict","partitioned":false,"#
                + #""created":1764400000}"#
        ),
        (
            persistent,
            #"{"name":"","value":"v","domain":"example.com","hostOnly":false,"path":"/p/q","expires":1767225600,"#
                + #""secure":false,"httpOnly":false,"sameSite":"lax","partitioned":true,"created":0}"#
        ),
        (
            crossSite,
            #"{"name":"a/b","value":"","domain":"192.0.2.1","hostOnly":true,"path":"/x y","expires":0,"#
                + #""secure":true,"httpOnly":false,"sameSite":"none","partitioned":true,"created":1}"#
        ),
        (
            withoutSameSite,
            #"{"name":"q\\","value":"\#u{2028}\#u{7F}","domain":"xn--bcher-kva.example","hostOnly":false,"#
                + #""path":"/","expires":-1,"secure":false,"httpOnly":true,"sameSite":"default","#
                + #""partitioned":false,"created":42}"#
        ),
    ]

    @Test func writesThePinnedBytes() {
        for (cookie, expected) in Self.pinned {
            var out = JSONOutput()
            cookie.write(to: &out)
            #expect(String(decoding: out.bytes, as: UTF8.self) == expected)
        }
    }

    @Test func listCookiesWritesEachCookieAsPinned() {
        var out = JSONOutput()
        ListCookiesResult(cookies: Self.pinned.map(\.0)).write(to: &out)
        let expected = #"{"cookies":["# + Self.pinned.map(\.1).joined(separator: ",") + "]}"
        #expect(String(decoding: out.bytes, as: UTF8.self) == expected)
    }

    /// A cookie read back is the one written, but for the bookkeeping the wire does not carry: its
    /// index is 0 and it was last accessed when created.
    @Test func readsBackWhatItWrote() throws {
        for (cookie, text) in Self.pinned {
            var expected = cookie
            expected.creationIndex = 0
            expected.lastAccess = cookie.created
            #expect(Cookie(json: try JSONParser.parse(Array(text.utf8))) == expected, "\(text)")
        }
    }

    /// Only name, value, domain and path must be strings; the other members read as their
    /// defaults when absent or of another type, and an unknown sameSite reads as `default`.
    @Test func readsLeniently() throws {
        let minimal = Cookie(
            name: "n", value: "v", domain: "d.example", hostOnly: false, path: "/", expires: nil, secure: false,
            httpOnly: false, sameSite: .default, partitioned: false, created: 0)
        let base = #""name":"n","value":"v","domain":"d.example","path":"/""#
        for text in [
            "{\(base)}",
            #"{\#(base),"hostOnly":"yes","expires":"x","secure":1,"httpOnly":null,"sameSite":"Lax","#
                + #""partitioned":[],"created":1.5}"#,
            #"{\#(base),"sameSite":1,"created":"1","expires":1e3}"#,
            #"{\#(base),"sameSite":"unknown","extra":{"a":1},"creationIndex":9,"lastAccess":9}"#,
        ] {
            #expect(Cookie(json: try JSONParser.parse(Array(text.utf8))) == minimal, "\(text)")
        }
        let full = try JSONParser.parse(
            Array(
                #"{\#(base),"hostOnly":true,"expires":7,"secure":true,"httpOnly":true,"sameSite":"none","#
                    .utf8) + Array(#""partitioned":true,"created":5}"#.utf8))
        #expect(
            Cookie(json: full)
                == Cookie(
                    name: "n", value: "v", domain: "d.example", hostOnly: true, path: "/", expires: 7, secure: true,
                    httpOnly: true, sameSite: .none, partitioned: true, created: 5))
    }

    @Test func refusesACookieWithoutItsStrings() throws {
        let members = [#""name":"n""#, #""value":"v""#, #""domain":"d""#, #""path":"/""#]
        for i in members.indices {
            var missing = members
            missing.remove(at: i)
            #expect(Cookie(json: try JSONParser.parse(Array("{\(missing.joined(separator: ","))}".utf8))) == nil)
            var wrong = members
            wrong[i] = String(wrong[i].prefix { $0 != ":" }) + ":1"
            #expect(Cookie(json: try JSONParser.parse(Array("{\(wrong.joined(separator: ","))}".utf8))) == nil)
        }
        for text in ["[]", #""n""#, "null", "1"] {
            #expect(Cookie(json: try JSONParser.parse(Array(text.utf8))) == nil, "\(text)")
        }
    }
}
