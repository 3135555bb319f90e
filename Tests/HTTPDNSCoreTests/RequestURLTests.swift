import HTTPDNSCore
import HTTPDNSIDNA
import Testing

struct RequestURLTests {
    @Test func splitsAnAbsoluteURL() throws {
        let url = try #require(RequestURL("HTTPS://WWW.Example.COM:8443/a/B%20c?q=1&r#frag"))
        #expect(url.scheme == "https")
        #expect(url.host == "www.example.com")
        #expect(!url.isIPLiteral)
        #expect(url.port == 8443)
        #expect(url.path == "/a/B%20c")
        #expect(url.isSecure)
        #expect(url.description == "https://www.example.com:8443/a/B%20c", "the query and fragment are not kept")
    }

    @Test func missingPathIsSlash() throws {
        let url = try #require(RequestURL("http://example.com?x"))
        #expect(url.path == "/")
        #expect(url.cookiePath == "/")
        #expect(url.description == "http://example.com/")
        #expect(url.port == nil)
    }

    @Test func secureSchemes() throws {
        #expect(try #require(RequestURL("wss://a.example/")).isSecure)
        #expect(try !#require(RequestURL("ws://a.example/")).isSecure)
        #expect(try !#require(RequestURL("http://a.example/")).isSecure)
    }

    @Test func ipLiterals() throws {
        let v4 = try #require(RequestURL("http://192.0.2.1:8080/x"))
        #expect(v4.isIPLiteral)
        #expect(v4.host == "192.0.2.1")
        let v6 = try #require(RequestURL("http://[2001:DB8:0:0:0:0:0:1]/"))
        #expect(v6.isIPLiteral)
        #expect(v6.host == "2001:db8::1")
        #expect(v6.path == "/")
        let loopback = try #require(RequestURL("https://[::1]:443"))
        #expect(loopback.host == "::1")
        #expect(loopback.port == nil)
        let mapped = try #require(RequestURL("http://[::ffff:192.0.2.1]/"))
        #expect(mapped.host == "::ffff:192.0.2.1")
    }

    @Test func userInformationIsDropped() throws {
        let url = try #require(RequestURL("http://user:pw@example.com/p"))
        #expect(url.host == "example.com")
        #expect(url.path == "/p")
    }

    @Test func nonASCIIHostsAreConvertedByTheIDNAGiven() throws {
        let url = try #require(RequestURL("http://BÜcher.example/", toASCII: IDNA.urlDomainToASCII))
        #expect(url.host == "xn--bcher-kva.example")
        #expect(RequestURL("http://BÜcher.example/") == nil)
    }

    /// Each reaches one host under the WHATWG URL Standard and another (or none) under curl's
    /// RFC 3986 reading: the daemon refuses them as ambiguous rather than pick a site.
    @Test(arguments: [
        "http://bank.example\\@attacker.example:9001/steal", "http://a@b@attacker.example/", "http://%62ank.example/",
        "http://0x7f.1/", "http://127.1/", "http://010.0.0.1/", "http:/bank.example/", "http:\\\\bank.example/",
        "http://1.2.3.4./", "https:///bank.example/",
    ])
    func refusesAmbiguousURLs(_ text: String) {
        #expect(RequestURL.parse(text, toASCII: IDNA.urlDomainToASCII) == .failure(.ambiguous), "\(text)")
    }

    @Test(arguments: [
        "example.com/x", "//example.com/", "ftp://example.com/", "http:/example.com/", "http://", "http:///x",
        "http://exa mple.com/", "http://example.com/a b", "http://example.com/\n", "http://ex\u{0}ample.com/",
        "http://example.com:65536/", "http://example.com:8x/", "http://[::1/", "http://[::1]x/", "http://[1::2::3]/",
        "http://[fe80::1%25eth0]/", "http://1.2.3.999/", "http://01.2.3.4/", "http://a.b.123/", "http://ex%41mple.com/",
        "http://:80/", "", "http://example.com\u{7F}/",
    ])
    func rejects(_ text: String) {
        #expect(RequestURL(text) == nil)
    }

    /// Spaces and control characters are looked for eight bytes at a time: each must refuse the
    /// URL wherever it is, and a URL without one must still parse.
    @Test func aSpaceOrControlAnywhereRefusesTheURL() throws {
        for tail in ["", "a", "ab/cd", "abc/def/ghi?j=1", "abcdefgh/ijklmnop/qrstuvw?x=yz#frag"] {
            let text = "https://h.example/" + tail
            #expect(RequestURL(text) != nil, "\(text)")
            let bytes = Array(text.utf8)
            for position in bytes.indices {
                for bad: UInt8 in [0x00, 0x09, 0x1F, 0x20, 0x7F] {
                    var damaged = bytes
                    damaged[position] = bad
                    #expect(RequestURL(String(decoding: damaged, as: UTF8.self)) == nil, "\(damaged)")
                }
            }
        }
    }

    @Test func emptyPortMeansDefault() throws {
        let url = try #require(RequestURL("http://example.com:/x"))
        #expect(url.port == nil)
        #expect(url.path == "/x")
    }

    @Test func descriptionRoundTrips() throws {
        for text in ["https://a.example:8443/p", "http://[2001:db8::1]/", "ws://192.0.2.1/x"] {
            let url = try #require(RequestURL(text))
            #expect(RequestURL(url.description) == url)
            #expect(url.description == text)
            #expect(RequestURL(text + "?q#f") == url, "the query and fragment play no part in cookies")
        }
    }

    @Test func ipLiteralCanonicalForms() {
        #expect(IPLiteral.canonical("2001:0db8:0000:0000:0001:0000:0000:0001") == "2001:db8::1:0:0:1")
        #expect(IPLiteral.canonical("[::]") == "::")
        #expect(IPLiteral.canonical("1:0:0:1:0:0:0:1") == "1:0:0:1::1")
        #expect(IPLiteral.canonical("1:2:3:4:5:6:7:8") == "1:2:3:4:5:6:7:8")
        #expect(IPLiteral.canonical("1:2:3:4:5:6:7:8:9") == nil)
        #expect(IPLiteral.canonical("1:2:3:4:5:6:7::8") == nil)
        #expect(IPLiteral.canonical("::1:") == nil)
        #expect(IPLiteral.canonical("255.255.255.255") == "255.255.255.255")
        #expect(IPLiteral.canonical("256.1.1.1") == nil)
        #expect(IPLiteral.canonical("1.2.3") == nil)
        #expect(IPLiteral.canonical("example.com") == nil)
    }
}
