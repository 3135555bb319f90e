import HTTPDNSCore
import HTTPDNSTestSupport
import Testing

/// Domain normalization in one place: the site a request through an IP literal is about.
struct CookieRequestTests {
    static let rules = BasicDomainRules()

    static func request(_ url: String, host: String? = nil, remembered: [String] = []) throws -> CookieRequest {
        try CookieRequest.normalizing(#require(RequestURL(url)), host: host, rules: rules) { _ in remembered }
    }

    @Test func aHostNameURLIsItsOwnSiteInCanonicalForm() throws {
        let request = try Self.request("https://WWW.Example.COM/a", host: "ignored.example", remembered: ["x.example"])
        #expect(request.host == "www.example.com")
        #expect(request.ipLiteral == nil)
        #expect(request.url.path == "/a")
    }

    @Test func anIPURLTakesTheGivenHostFirst() throws {
        let request = try Self.request(
            "https://203.0.113.10/", host: "Bank.Example", remembered: ["a.example", "b.example"])
        #expect(request.host == "bank.example")
        #expect(request.ipLiteral == "203.0.113.10")
    }

    @Test func anIPURLTakesTheOneRememberedName() throws {
        #expect(try Self.request("https://203.0.113.10/", remembered: ["bank.example"]).host == "bank.example")
        let unknown = try Self.request("https://[2001:db8::1]/")
        #expect(unknown.host == "2001:db8::1" && unknown.ipLiteral == "2001:db8::1")
    }

    /// Every remembered name is a candidate: with two, the request is refused, never resolved by
    /// picking one.
    @Test func twoRememberedNamesAreAmbiguous() {
        #expect(throws: CookieRequestError.ambiguousAddress("203.0.113.10", candidates: ["a.example", "b.example"])) {
            try Self.request("https://203.0.113.10/", remembered: ["a.example", "b.example"])
        }
    }

    @Test func badHostsAreRefusedNamingTheMember() {
        #expect(throws: CookieRequestError.emptyHost) { try Self.request("https://203.0.113.10/", host: "") }
        #expect(throws: CookieRequestError.invalidHost(CookieHostError(field: "host", host: "a b"))) {
            try Self.request("https://203.0.113.10/", host: "a b")
        }
        #expect(throws: CookieRequestError.invalidHost(CookieHostError(field: "host", host: "x..y"))) {
            try Self.request("https://203.0.113.10/", remembered: ["x..y"])
        }
        #expect(throws: CookieRequestError.invalidHost(CookieHostError(field: "url", host: "a..b"))) {
            try Self.request("https://a..b/")
        }
    }

    /// The memory is asked only for an IP URL without `host`.
    @Test func theMemoryIsAskedOnlyWhenItDecides() throws {
        var asked: [String] = []
        let remember: (String) -> [String] = { ip in
            asked.append(ip)
            return []
        }
        _ = try CookieRequest.normalizing(
            #require(RequestURL("https://a.example/")), host: nil, rules: Self.rules, rememberedNames: remember)
        _ = try CookieRequest.normalizing(
            #require(RequestURL("https://192.0.2.1/")), host: "a.example", rules: Self.rules, rememberedNames: remember)
        #expect(asked.isEmpty)
        _ = try CookieRequest.normalizing(
            #require(RequestURL("https://192.0.2.1/")), host: nil, rules: Self.rules, rememberedNames: remember)
        #expect(asked == ["192.0.2.1"])
    }
}
