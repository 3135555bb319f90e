import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Retrieval remembers which buckets can hold a host's cookies; that memory must follow the jar
/// as domains gain their first cookie or lose their last.
struct CookieRetrievalCacheTests {
    let jar = CookieJar(rules: BasicDomainRules())

    func header(_ url: String) throws -> String {
        jar.cookieHeader(for: try CookieRequest(#require(RequestURL(url)), for: jar), now: 1_000).header
    }

    func set(_ url: String, _ values: [String]) throws {
        _ = jar.setCookies(values, for: try CookieRequest(#require(RequestURL(url)), for: jar), now: 1_000)
    }

    @Test func aDomainsFirstCookieIsFoundAfterAnEarlierEmptyLookup() throws {
        #expect(try header("https://www.a.example/") == "")
        try set("https://a.example/", ["sid=1; Domain=a.example"])
        #expect(try header("https://www.a.example/") == "sid=1")
        try set("https://www.a.example/", ["host=2"])
        #expect(try header("https://www.a.example/") == "sid=1; host=2")
    }

    @Test func aDomainsLastCookieGoneIsGoneFromLookups() throws {
        try set("https://www.b.example/", ["x=1"])
        #expect(try header("https://www.b.example/") == "x=1")
        _ = try jar.delete(.domain("b.example"), now: 1_000)
        #expect(try header("https://www.b.example/") == "")
        try set("https://www.b.example/", ["y=2"])
        #expect(try header("https://www.b.example/") == "y=2")
    }

    @Test func expiredCookiesLeaveTheirBucketAndNewOnesAreFound() throws {
        try set("https://c.example/", ["old=1; Max-Age=10"])
        #expect(
            jar.cookieHeader(for: try CookieRequest(#require(RequestURL("https://c.example/")), for: jar), now: 2_000)
                .header == "")
        try set("https://c.example/", ["new=2"])
        #expect(try header("https://c.example/") == "new=2")
    }
}
