import HTTPDNSClient
import Testing

struct HTTPTargetTests {
    @Test func httpTargetsKnowHostPortAndOrigin() throws {
        let target = try #require(HTTPTarget("HTTPS://User:pw@API.Example.com/a?b"))
        #expect(target.scheme == "https")
        #expect(target.host == "api.example.com")
        #expect(target.port == 443)
        #expect(target.url == "https://User:pw@api.example.com/a?b")
        #expect(!target.isIPLiteral)
        #expect(
            target.resolveEntry(addresses: ["192.0.2.1", "2001:db8::1"])
                == "api.example.com:443:192.0.2.1,[2001:db8::1]")
        #expect(target.resolveEntry(addresses: []) == nil)

        let plain = try #require(HTTPTarget("http://h.example:8080"))
        #expect(plain.port == 8080)
        #expect(!plain.isSameOrigin(as: try #require(HTTPTarget("http://h.example/"))))
        #expect(plain.isSameOrigin(as: try #require(HTTPTarget("http://H.example:8080/other"))))
        #expect(!plain.isSameOrigin(as: try #require(HTTPTarget("https://h.example:8080/"))))

        let v6 = try #require(HTTPTarget("http://[2001:db8::1]:81/"))
        #expect(v6.host == "2001:db8::1" && v6.port == 81 && v6.isIPLiteral)
        #expect(v6.resolveEntry(addresses: ["2001:db8::1"]) == nil)
        #expect(try #require(HTTPTarget("http://192.0.2.7/")).isIPLiteral)
        #expect(try #require(HTTPTarget("http://192.0.2.7.example/")).isIPLiteral == false)
        #expect(try #require(HTTPTarget("http://bücher.example/")).host == "xn--bcher-kva.example")
    }

    @Test(arguments: [
        "", "example.com", "ftp://example.com/", "http://", "http:///x", "http://h:65536/", "http://h:x/",
        "http://::1/", "http://[::1/", "http://[zz]/", "mailto:a@b", "http://a%2eb/", "ws://a.example/",
    ])
    func refusesWhatIsNotAnHTTPURLWithAHost(text: String) {
        #expect(HTTPTarget(text) == nil)
    }

    /// Each reaches one host under the WHATWG URL Standard and another (or none) under curl's
    /// RFC 3986 reading.
    @Test(arguments: [
        "http://bank.example\\@attacker.example:9001/steal", "http://a@b@attacker.example/", "http://%62ank.example/",
        "http://0x7f.1/", "http://127.1/", "http://010.0.0.1/", "http:/bank.example/", "http:\\\\bank.example/",
        "http://bank.example\t/", " http://bank.example/", "http://1.2.3.4./",
    ])
    func refusesAmbiguousURLs(text: String) {
        #expect(HTTPTarget.parse(text) == .failure(.ambiguous), "\(text)")
    }

    @Test func redirectsResolveAndEncodeAsBrowsersDo() throws {
        let target = try #require(HTTPTarget("https://a.example/dir/sub/page?q#top"))
        func next(_ location: String) -> String? { try? target.redirect(to: location).get().url }
        #expect(next("../other") == "https://a.example/dir/other#top")
        #expect(next("//b.example:8443/x") == "https://b.example:8443/x#top")
        #expect(next("http://c.example/y#frag") == "http://c.example/y#frag")
        #expect(next("/a b/é") == "https://a.example/a%20b/%C3%A9#top")
        #expect(next("\\x") == "https://a.example/x#top")
        #expect(target.redirect(to: "ftp://d.example/") == .failure(.notHTTP))
        for location in [
            "http://bank.example\\@attacker.example:9001/steal", "//bank.example\\@attacker.example/",
            "/\\attacker.example/", "\\\\attacker.example/", "https://x@y@attacker.example/", "http://0x7f.1/",
        ] {
            #expect(target.redirect(to: location) == .failure(.ambiguous), "\(location)")
        }
    }
}
