import HTTPDNSClient
import Testing

/// RFC 3986 section 5.4's examples, resolved against its base URI, and the http(s) targets built on it.
struct URLReferenceTests {
    static let base = URLReference("http://a/b/c/d;p?q")

    @Test(arguments: [
        // 5.4.1 normal examples
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y#s"),
        ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"),
        ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"),
        ("../../g", "http://a/g"),
        // 5.4.2 abnormal examples
        ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"), ("/./g", "http://a/g"),
        ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"), ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"), ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"), ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g#s/./x"), ("g#s/../x", "http://a/b/c/g#s/../x"), ("http:g", "http:g"),
    ])
    func resolvesAsRFC3986Says(reference: String, expected: String) {
        #expect(URLReference(reference).resolved(against: Self.base).description == expected)
    }

    @Test func splitsAndRecomposesTheFiveComponents() {
        let reference = URLReference("https://user@h.example:8443/p/q?x=1&y#frag")
        #expect(reference.scheme == "https")
        #expect(reference.authority == "user@h.example:8443")
        #expect(reference.path == "/p/q")
        #expect(reference.query == "x=1&y")
        #expect(reference.fragment == "frag")
        #expect(reference.description == "https://user@h.example:8443/p/q?x=1&y#frag")
        #expect(URLReference("a:b/c").scheme == "a")
        #expect(URLReference("/x:y").scheme == nil)
        #expect(URLReference("1a:b").scheme == nil)
    }

    @Test func httpTargetsKnowHostPortAndOrigin() throws {
        let target = try #require(HTTPTarget("HTTPS://User:pw@API.Example.com/a?b"))
        #expect(target.scheme == "https")
        #expect(target.host == "api.example.com")
        #expect(target.port == 443)
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
    }

    @Test(arguments: [
        "", "example.com", "ftp://example.com/", "http://", "http:///x", "http://h:0/", "http://h:65536/",
        "http://h:x/", "http://::1/", "http://[::1/", "http://[zz]/", "mailto:a@b", "http://a%2eb/",
    ])
    func refusesWhatIsNotAnHTTPURLWithAHost(text: String) {
        #expect(HTTPTarget(text) == nil)
    }

    @Test func redirectsResolveAndEncodeLikeCurl() throws {
        let target = try #require(HTTPTarget("https://a.example/dir/sub/page?q#top"))
        #expect(target.redirect(to: "../other")?.url == "https://a.example/dir/other#top")
        #expect(target.redirect(to: "//b.example:8443/x")?.url == "https://b.example:8443/x#top")
        #expect(target.redirect(to: "http://c.example/y#frag")?.url == "http://c.example/y#frag")
        #expect(target.redirect(to: "/a b/é")?.url == "https://a.example/a%20b/%C3%A9#top")
        #expect(target.redirect(to: "ftp://d.example/") == nil)
    }
}
