import HTTPDNSCore
import HTTPDNSIDNA
import HTTPDNSPSL
import HTTPDNSProtocol
import Testing

/// The real rules: libpsl's list and libidn2's IDNA.
struct CookiePublicSuffixTests {
    let rules: PublicSuffixRules

    init() throws {
        rules = try PublicSuffixRules()
    }

    @Test func publicSuffixes() {
        #expect(rules.isPublicSuffix("com"))
        #expect(rules.isPublicSuffix("co.uk"))
        #expect(rules.isPublicSuffix("github.io"))  // Private section.
        #expect(!rules.isPublicSuffix("example.co.uk"))
        #expect(!rules.isPublicSuffix("example.com"))
        #expect(!rules.isPublicSuffix("192.0.2.1"))
    }

    @Test func registrableDomains() {
        #expect(rules.registrableDomain("a.b.example.co.uk") == "example.co.uk")
        #expect(rules.registrableDomain("www.example.com") == "example.com")
        #expect(rules.registrableDomain("alice.github.io") == "alice.github.io")
        #expect(rules.registrableDomain("co.uk") == nil)
        #expect(rules.registrableDomain("192.0.2.1") == nil)
        #expect(rules.registrableDomain("::1") == nil)
    }

    @Test func idnaCanonicalization() {
        #expect(rules.canonicalHost("bücher.example") == "xn--bcher-kva.example")
        #expect(rules.canonicalHost("BÜCHER.example") == "xn--bcher-kva.example")
        #expect(rules.canonicalHost("XN--BCHER-KVA.Example") == "xn--bcher-kva.example")
        #expect(rules.canonicalHost("[2001:DB8::1]") == "2001:db8::1")
        #expect(rules.canonicalHost("a..b") == nil)
        #expect(rules.canonicalHost("exa mple.com") == nil)
        #expect(rules.canonicalHost("") == nil)
        #expect(rules.canonicalHost("bü\u{0}cher.example") == nil)
    }

    /// A name is refused past the most UTF-8 a name whose A-labels fit DNS can take, before
    /// libidn2 maps its code points; within it, code points UTS #46 ignores (U+00AD) still go.
    @Test func aNameLongerThanAnyValidOneIsRefusedBeforeIDNA() {
        let shy = "\u{AD}"  // two octets of UTF-8, mapped to nothing
        let within = "bü" + String(repeating: shy, count: 400) + "cher.example"
        #expect(within.utf8.count <= IDNA.maxInputBytes)
        #expect(rules.canonicalHost(within) == "xn--bcher-kva.example")
        let past = "bü" + String(repeating: shy, count: 600) + "cher.example"
        #expect(past.utf8.count > IDNA.maxInputBytes)
        #expect(IDNA.domainToASCII(past) == nil)
        #expect(rules.canonicalHost(past) == nil)
        #expect(rules.canonicalHost(String(repeating: "a.", count: 600) + "example") == nil)
    }

    @Test func domainOnAPublicSuffixIsRejected() throws {
        let h = JarHarness(rules: rules)
        let outcome = try h.set(
            "a=1; Domain=co.uk", "b=2; Domain=example.co.uk", url: "https://www.example.co.uk/")
        #expect(outcome.reasons == [.publicSuffix])
        #expect(try h.header("https://shop.example.co.uk/") == "b=2")
        #expect(try h.header("https://other.co.uk/") == "")

        let pages = try h.set("c=3; Domain=github.io", url: "https://alice.github.io/")
        #expect(pages.reasons == [.publicSuffix])
        try h.set("d=4; Domain=alice.github.io", url: "https://alice.github.io/")
        #expect(try h.header("https://bob.github.io/") == "")
        #expect(try h.header("https://www.alice.github.io/") == "d=4")
    }

    @Test func unicodeAndALabelHostsAreOneHost() throws {
        let h = JarHarness(rules: rules)
        let outcome = try h.set("a=1", url: "http://bücher.example/")
        #expect(outcome.host == "xn--bcher-kva.example")
        #expect(try h.header("http://xn--bcher-kva.example/") == "a=1")
        try h.set("b=2; Domain=BÜCHER.example", url: "http://www.xn--bcher-kva.example/")
        #expect(try h.header("http://shop.bücher.example/") == "b=2")
    }

    @Test func sameSiteUsesRegistrableDomains() throws {
        let h = JarHarness(rules: rules)
        try h.set("s=1; SameSite=Strict", url: "https://alice.github.io/")
        #expect(try h.header("https://alice.github.io/", site: "https://bob.github.io/") == "")
        #expect(try h.header("https://alice.github.io/", site: "https://www.alice.github.io/") == "s=1")
        try h.set("t=1; SameSite=Strict", url: "https://a.example.co.uk/")
        #expect(try h.header("https://a.example.co.uk/", site: "https://b.example.co.uk/") == "t=1")
        #expect(try h.header("https://a.example.co.uk/", site: "https://b.other.co.uk/") == "")
    }
}
