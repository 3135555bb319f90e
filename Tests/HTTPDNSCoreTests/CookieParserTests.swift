import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// RFC 6265bis section 5.6, parsing a set-cookie-string.
struct CookieParserTests {
    func parse(_ text: String) throws -> ParsedSetCookie {
        try SetCookieParser.parse(text).get()
    }

    func rejection(_ text: String) -> CookieRejection? {
        if case .failure(let reason) = SetCookieParser.parse(text) { return reason }
        return nil
    }

    @Test func nameValueAndFlags() throws {
        let cookie = try parse("SID=31d4d96e407aad42; Path=/; Secure; HttpOnly")
        #expect(cookie.name == "SID")
        #expect(cookie.value == "31d4d96e407aad42")
        #expect(cookie.path == "/")
        #expect(cookie.secure)
        #expect(cookie.httpOnly)
        #expect(cookie.domain == nil)
        #expect(cookie.sameSite == nil)
        #expect(!cookie.partitioned)
    }

    @Test func namelessCookies() throws {
        // Step 3: no "=" means an empty name and the whole pair as the value.
        let bare = try parse("foo; Path=/")
        #expect(bare.name == "")
        #expect(bare.value == "foo")
        let leadingEquals = try parse("=foo")
        #expect(leadingEquals.name == "")
        #expect(leadingEquals.value == "foo")
    }

    @Test func splitsAtTheFirstEqualsAndTrimsWhitespace() throws {
        let cookie = try parse(" \ta b = c=d e \t;x")
        #expect(cookie.name == "a b")
        #expect(cookie.value == "c=d e")
        let quoted = try parse("a=\"b\"")
        #expect(quoted.value == "\"b\"")
    }

    @Test func controlCharactersRejectTheWholeString() {
        for control in (0x00...0x1F).filter({ $0 != 0x09 }) + [0x7F] {
            let text = "a=b" + String(UnicodeScalar(UInt8(control))) + "c"
            #expect(rejection(text) == .syntax, "control \(control)")
            #expect(rejection("a=b; Path=/" + String(UnicodeScalar(UInt8(control)))) == .syntax)
        }
        #expect(rejection("a=b\tc") == nil)
    }

    /// The search runs eight bytes a step: a control must be found at every offset of the words
    /// (and of the overlapping last one), and tabs anywhere must not hide one after them.
    @Test func aControlAnywhereRejectsAndTabsDoNot() {
        for length in 1...40 {
            for offset in 0..<length {
                var bytes = [UInt8](repeating: UInt8(ascii: "v"), count: length)
                bytes[0] = UInt8(ascii: "a")
                bytes[offset] = 0x09
                #expect(rejection(String(decoding: bytes, as: UTF8.self)) == nil, "tab at \(offset) of \(length)")
                for control: UInt8 in [0x00, 0x0A, 0x1F, 0x7F] {
                    var withControl = bytes
                    withControl[offset] = control
                    #expect(rejection(String(decoding: withControl, as: UTF8.self)) == .syntax)
                    // After a tab, in the same word or a later one.
                    if offset + 1 < length {
                        withControl[offset] = 0x09
                        withControl[length - 1] = control
                        #expect(rejection(String(decoding: withControl, as: UTF8.self)) == .syntax)
                    }
                }
            }
        }
    }

    @Test func nameAndValueLimit() {
        #expect(rejection("a=" + String(repeating: "v", count: 4095)) == nil)
        #expect(rejection("a=" + String(repeating: "v", count: 4096)) == .tooLarge)
        #expect(rejection(String(repeating: "n", count: 4097)) == .tooLarge)
        // Octets, not characters: 2049 two-octet characters are 4098 octets.
        #expect(rejection("=" + String(repeating: "é", count: 2049)) == .tooLarge)
    }

    @Test func longAttributeValuesAreIgnored() throws {
        let ok = "/" + String(repeating: "p", count: 1023)
        #expect(try parse("a=b; Path=\(ok)").path == ok)
        let tooLong = "/" + String(repeating: "p", count: 1024)
        #expect(try parse("a=b; Path=/first; Path=\(tooLong)").path == "/first")
        #expect(try parse("a=b; Domain=\(String(repeating: "d", count: 1025))").domain == nil)
    }

    @Test func attributeNamesAreCaseInsensitive() throws {
        let cookie = try parse(
            "a=b; SECURE; hTTpOnLy; pAtH=/x; DOMAIN=Example.COM; max-AGE=5; samesite=LAX; PARTITIONED")
        #expect(cookie.secure)
        #expect(cookie.httpOnly)
        #expect(cookie.path == "/x")
        #expect(cookie.domain == "example.com")
        #expect(cookie.maxAge == 5)
        #expect(cookie.sameSite == .lax)
        #expect(cookie.partitioned)
    }

    /// A name one letter off an attribute's, at its length, is an unknown attribute.
    @Test func namesOneLetterOffAreUnknown() throws {
        let cookie = try parse(
            "a=b; Securf; HttpOnlx; Pats=/x; Domaim=example.com; Max-Agf=5; Expirez=Sun, 06 Nov 1994 08:49:37 GMT; "
                + "SameSitf=Lax; Partitionex; Max_Age=5; Secure2")
        #expect(cookie == ParsedSetCookie(name: "a", value: "b"))
        #expect(try parse("a=b; SameSite=Laxx").sameSite == .default)
        #expect(try parse("a=b; SameSite=nonf").sameSite == .default)
    }

    @Test func unknownAttributesAndEmptyAVsAreIgnored() throws {
        let cookie = try parse("a=b;;; Version=1; Comment=x; =; Secure=no")
        #expect(cookie.name == "a")
        #expect(cookie.secure)  // The attribute-value of Secure plays no part.
    }

    @Test func maxAge() throws {
        #expect(try parse("a=b; Max-Age=3600").maxAge == 3600)
        #expect(try parse("a=b; Max-Age=-1").maxAge == -1)
        #expect(try parse("a=b; Max-Age=0").maxAge == 0)
        #expect(try parse("a=b; Max-Age= 10 ").maxAge == 10)
        #expect(try parse("a=b; Max-Age=99999999999999999999999").maxAge == Int64.max)
        #expect(try parse("a=b; Max-Age=-99999999999999999999999").maxAge == Int64.min)
        for ignored in ["abc", "+5", "-", "", "1.5", "5s", "- 5", "0x10"] {
            #expect(try parse("a=b; Max-Age=\(ignored)").maxAge == nil, "\(ignored)")
        }
        // The last valid one wins; an invalid later one is ignored.
        #expect(try parse("a=b; Max-Age=1; Max-Age=2; Max-Age=x").maxAge == 2)
    }

    @Test func expires() throws {
        #expect(try parse("a=b; Expires=Sun, 06 Nov 1994 08:49:37 GMT").expires == 784_111_777)
        #expect(try parse("a=b; Expires=garbage").expires == nil)
        #expect(try parse("a=b; expires=Sun, 06 Nov 1994 08:49:37 GMT; Expires=bad").expires == 784_111_777)
    }

    @Test func domainValue() throws {
        #expect(try parse("a=b; Domain=.Example.COM").domain == "example.com")
        #expect(try parse("a=b; Domain=..example.com").domain == ".example.com")
        #expect(try parse("a=b; Domain=").domain == "")
        #expect(try parse("a=b; Domain=x.example; Domain=y.example").domain == "y.example")
    }

    @Test func sameSiteEnforcement() throws {
        #expect(try parse("a=b; SameSite=Strict").sameSite == .strict)
        #expect(try parse("a=b; SameSite=lax").sameSite == .lax)
        #expect(try parse("a=b; SameSite=NONE").sameSite == CookieSameSite.none)
        #expect(try parse("a=b; SameSite=bogus").sameSite == .default)
        #expect(try parse("a=b; SameSite").sameSite == .default)
        #expect(try parse("a=b; SameSite=Strict; SameSite=bogus").sameSite == .default)
    }
}
