import Testing

@testable import HTTPDNSCurl

struct URLTargetTests {
    @Test func splitsAuthority() throws {
        let plain = try #require(URLTarget("https://203.107.1.1/100000/d?host=a.com"))
        #expect(plain.scheme == "https")
        #expect(plain.host == "203.107.1.1")
        #expect(plain.port == nil)
        #expect(plain.rest == "/100000/d?host=a.com")
        #expect(
            plain.replacingHost(with: "resolvers.example.com") == "https://resolvers.example.com/100000/d?host=a.com")
        #expect(plain.connectToEntry(for: "resolvers.example.com") == "resolvers.example.com:443:203.107.1.1:443")

        let v6 = try #require(URLTarget("HTTPS://[2401:b180:2000:20::10]:8443?x=1"))
        #expect(v6.scheme == "https")
        #expect(v6.host == "[2401:b180:2000:20::10]")
        #expect(v6.port == 8443)
        #expect(v6.rest == "?x=1")
        #expect(v6.replacingHost(with: "dns.example") == "https://dns.example:8443?x=1")
        #expect(v6.connectToEntry(for: "dns.example") == "dns.example:8443:[2401:b180:2000:20::10]:8443")

        let http = try #require(URLTarget("http://user@1.2.3.4"))
        #expect(http.host == "1.2.3.4")
        #expect(http.effectivePort == 80)
    }

    @Test func rejectsBrokenURLs() {
        for url in [
            "no-scheme", "https://", "https://[::1", "https://[::1]x/", "https://a:0/", "https://a:99999/",
            "https://a:b/",
        ] {
            #expect(URLTarget(url) == nil, "\(url)")
        }
    }
}
