import Testing

@testable import HTTPDNSCurl

/// `TLSName=` pinning: the URL addressed to the TLS name, the connection still to the URL's host.
struct TLSPinningTests {
    @Test func pinsHTTPSToTheTLSName() throws {
        let plain = try #require(
            HTTPClient.pinning("https://203.107.1.1/100000/d?host=a.com", to: "Resolvers.example.com"))
        #expect(plain.url == "https://resolvers.example.com/100000/d?host=a.com")
        #expect(plain.connectTo == "resolvers.example.com:443:203.107.1.1:443")

        let v6 = try #require(HTTPClient.pinning("HTTPS://[2401:b180:2000:20::10]:8443?x=1", to: "dns.example"))
        #expect(v6.url == "https://dns.example:8443/?x=1")
        #expect(v6.connectTo == "dns.example:8443:[2401:b180:2000:20::10]:8443")

        let same = try #require(HTTPClient.pinning("https://dns.example/q", to: "DNS.example"))
        #expect(same.url == "https://dns.example/q" && same.connectTo == nil)
        let http = try #require(HTTPClient.pinning("http://user@1.2.3.4", to: "dns.example"))
        #expect(http.url == "http://user@1.2.3.4" && http.connectTo == nil)
    }

    @Test func refusesBrokenOrAmbiguousURLs() {
        for url in [
            "no-scheme", "https://", "https://[::1", "https://[::1]x/", "https://a:99999/", "https://a:b/",
            "https://dns.example\\@203.0.113.9/", "https://a@b@203.0.113.9/", "ftp://a/",
        ] {
            #expect(HTTPClient.pinning(url, to: "dns.example") == nil, "\(url)")
        }
    }
}
