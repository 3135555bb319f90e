import HTTPDNSCore
import HTTPDNSIDNA
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Shared helpers: a fixed clock and short names for the jar's calls.
struct JarHarness {
    static let now: Int64 = 1_800_000_000
    let jar: CookieJar

    init(limits: CookieJarLimits = CookieJarLimits(), rules: any DomainRules = BasicDomainRules()) {
        jar = CookieJar(rules: rules, limits: limits)
    }

    /// The daemon's reading of a URL (IDNA by libidn2, as the daemon's).
    static func url(_ text: String) -> RequestURL? { RequestURL(text, toASCII: IDNA.urlDomainToASCII) }

    @discardableResult
    func set(
        _ headers: String..., url: String, host: String? = nil, at now: Int64 = JarHarness.now
    ) throws -> SetCookiesOutcome {
        jar.setCookies(headers, for: try CookieRequest(#require(Self.url(url)), host: host, for: jar), now: now)
    }

    func header(
        _ url: String, host: String? = nil, forScript: Bool = false, site: String? = nil, topLevel: Bool = false,
        at now: Int64 = JarHarness.now
    ) throws -> String {
        let site = try site.map { try #require(Self.url($0)) }
        let request = try CookieRequest(#require(Self.url(url)), host: host, for: jar)
        func retrieve() -> String {
            jar.cookieHeader(
                for: request, forScript: forScript, siteForCookies: site, topLevelNavigation: topLevel, now: now
            ).header
        }
        // Twice: the jar keeps a header at its second miss, so whatever the test changes next
        // meets a remembered header, which must follow the change.
        let first = retrieve()
        #expect(retrieve() == first)
        return first
    }

    func only(_ now: Int64 = JarHarness.now) throws -> Cookie {
        let all = try jar.list(now: now)
        try #require(all.count == 1)
        return all[0]
    }
}

extension SetCookiesOutcome {
    var reasons: [CookieRejection] { rejected.map(\.reason) }
}

/// RFC 6265bis section 5.7, the storage model.
struct CookieStorageTests {
    @Test func hostOnlyCookie() throws {
        let h = JarHarness()
        let outcome = try h.set("a=b", url: "http://www.example.com/")
        #expect(outcome == SetCookiesOutcome(host: "www.example.com", stored: 1))
        let cookie = try h.only()
        #expect(cookie.hostOnly)
        #expect(cookie.domain == "www.example.com")
        #expect(cookie.path == "/")
        #expect(cookie.expires == nil)
        #expect(cookie.sameSite == .default)
        #expect(cookie.created == JarHarness.now)
        #expect(try h.header("http://www.example.com/x") == "a=b")
        #expect(try h.header("http://sub.www.example.com/") == "")
        #expect(try h.header("http://example.com/") == "")
    }

    @Test func domainCookie() throws {
        let h = JarHarness()
        try h.set("a=b; Domain=.EXAMPLE.com", url: "http://www.example.com/")
        let cookie = try h.only()
        #expect(!cookie.hostOnly)
        #expect(cookie.domain == "example.com")
        #expect(try h.header("http://example.com/") == "a=b")
        #expect(try h.header("http://other.example.com/") == "a=b")
        #expect(try h.header("http://notexample.com/") == "")
    }

    @Test func domainMismatch() throws {
        let h = JarHarness()
        let outcome = try h.set(
            "a=1; Domain=other.com", "b=2; Domain=sub.www.example.com", "c=3; Domain=ww.example.com",
            "d=4; Domain=www.example.com:80", "e=5; Domain=\"example.com\"", url: "http://www.example.com/")
        #expect(outcome.stored == 0)
        #expect(outcome.reasons == Array(repeating: .domainMismatch, count: 5))
        #expect(outcome.rejected.map(\.index) == [0, 1, 2, 3, 4])
    }

    @Test func publicSuffixDomain() throws {
        let h = JarHarness()
        let outcome = try h.set("a=1; Domain=com", "b=2; Domain=.com", url: "http://www.example.com/")
        #expect(outcome.reasons == [.publicSuffix, .publicSuffix])
        // Equal to the request host: host-only instead (step 9).
        let own = try h.set("c=3; Domain=github.io", url: "https://github.io/")
        #expect(own.stored == 1)
        #expect(try h.only().hostOnly)
        #expect(try h.header("https://x.github.io/") == "")
        #expect(try h.header("https://github.io/") == "c=3")
    }

    @Test func emptyDomainAttributeIsHostOnly() throws {
        // Step 7 takes the last Domain attribute, even an empty one.
        let h = JarHarness()
        try h.set("a=b; Domain=example.com; Domain=", url: "http://www.example.com/")
        #expect(try h.only().hostOnly)
    }

    @Test func defaultPath() throws {
        let h = JarHarness()
        try h.set("a=1", "b=2; Path=relative", "c=3; Path=", url: "http://example.com/dir/sub/page?q=/x")
        #expect(try h.jar.list(now: JarHarness.now).map(\.path) == ["/dir/sub", "/dir/sub", "/dir/sub"])
        #expect(try h.header("http://example.com/dir/sub") == "a=1; b=2; c=3")
        #expect(try h.header("http://example.com/dir/sub/x/y") == "a=1; b=2; c=3")
        #expect(try h.header("http://example.com/dir/subway") == "")
        #expect(try h.header("http://example.com/dir") == "")
        try h.set("d=4", url: "http://example.com/top")
        try h.set("e=5", url: "http://example.com")
        #expect(try h.jar.list(domain: "example.com", now: JarHarness.now).filter { $0.path == "/" }.count == 2)
    }

    /// A Path= attribute over 1024 octets is ignored (5.6 step 6), and a default-path over that
    /// refuses the cookie: a request path of a megabyte is not held by each cookie of the response.
    @Test func aDefaultPathOver1024OctetsIsTooLarge() throws {
        let h = JarHarness()
        let longest = "/" + String(repeating: "d", count: 1023)
        let outcome = try h.set(
            "kept=1", "long=2", "attribute=3; Path=/", "ignored=4; Path=/\(String(repeating: "a", count: 1024))",
            url: "http://example.com\(longest)/page")
        #expect(outcome.stored == 4)
        let tooLong = try h.set(
            "a=1", "b=2; Path=/", "c=3; Path=/\(String(repeating: "a", count: 1024))",
            url: "http://example.com\(longest)x/page")
        #expect(tooLong.stored == 1)
        #expect(
            tooLong.rejected == [
                RejectedCookie(index: 0, reason: .tooLarge), RejectedCookie(index: 2, reason: .tooLarge),
            ])
        let paths = try h.jar.list(now: JarHarness.now).map(\.path)
        #expect(paths.map(\.utf8.count).sorted() == [1, 1, 1024, 1024, 1024])
        #expect(paths.filter { $0 != "/" }.allSatisfy { $0 == longest })
    }

    @Test func pathMatching() throws {
        let h = JarHarness()
        try h.set("slash=1; Path=/a/", "plain=2; Path=/a", url: "http://example.com/")
        #expect(try h.header("http://example.com/a") == "plain=2")
        #expect(try h.header("http://example.com/a/") == "slash=1; plain=2")
        #expect(try h.header("http://example.com/a/b") == "slash=1; plain=2")
        #expect(try h.header("http://example.com/ab") == "")
        #expect(try h.header("http://example.com/A") == "")
    }

    @Test func expiresAndMaxAge() throws {
        let now = JarHarness.now
        let h = JarHarness()
        try h.set("a=1; Max-Age=100; Expires=Sun, 06 Nov 1994 08:49:37 GMT", url: "http://example.com/")
        #expect(try h.only().expires == now + 100)
        #expect(try h.header("http://example.com/", at: now + 99) == "a=1")
        #expect(try h.header("http://example.com/", at: now + 100) == "")
        #expect(h.jar.count == 0)  // Purged by the retrieval that found it expired.

        let outcome = try h.set("b=2; Expires=Wed, 09 Jun 2027 10:18:14 GMT; Max-Age=-1", url: "http://example.com/")
        #expect(outcome == SetCookiesOutcome(host: "example.com"))
        #expect(h.jar.count == 0)
    }

    @Test func expiryIsCappedAt400Days() throws {
        let now = JarHarness.now
        let h = JarHarness()
        try h.set("a=1; Max-Age=999999999", "b=2; Expires=Fri, 31 Dec 9999 23:59:59 GMT", url: "http://example.com/")
        let cookies = try h.jar.list(now: now)
        #expect(cookies.map(\.expires) == [now + 400 * 86_400, now + 400 * 86_400])
    }

    @Test func expiredCookieDeletesTheOneItNames() throws {
        let h = JarHarness()
        try h.set("a=1; Path=/p", "a=2; Path=/q", url: "http://example.com/")
        let outcome = try h.set("a=gone; Path=/p; Max-Age=0", url: "http://example.com/")
        #expect(outcome.deleted == 1)
        #expect(outcome.stored == 0)
        #expect(try h.jar.list(now: JarHarness.now).map(\.path) == ["/q"])
        let past = try h.set("a=x; Path=/q; Expires=Thu, 01 Jan 1970 00:00:00 GMT", url: "http://example.com/")
        #expect(past.deleted == 1)
        #expect(h.jar.count == 0)
    }

    @Test func replacementKeepsCreationTime() throws {
        let h = JarHarness()
        try h.set("a=1", "b=2", url: "http://example.com/", at: 100)
        try h.set("a=3", url: "http://example.com/", at: 200)
        #expect(try h.header("http://example.com/", at: 300) == "a=3; b=2")
        let a = try h.jar.list(now: 300).first { $0.name == "a" }
        #expect(a?.created == 100)
        #expect(h.jar.count == 2)
    }

    @Test func nameAndEmptyValueSerialization() throws {
        let h = JarHarness()
        let outcome = try h.set("nameless", "a=", "=", "", "  ", url: "http://example.com/")
        #expect(outcome.stored == 2)
        #expect(outcome.reasons == [.syntax, .syntax, .syntax])
        #expect(try h.header("http://example.com/") == "nameless; a=")
    }

    @Test func secureRequiresASecureOrigin() throws {
        let h = JarHarness()
        #expect(try h.set("a=1; Secure", url: "http://example.com/").reasons == [.secureRequired])
        #expect(try h.set("a=1; Secure", url: "https://example.com/").stored == 1)
        #expect(try h.header("http://example.com/") == "")
        #expect(try h.header("https://example.com/") == "a=1")
        #expect(try h.header("wss://example.com/") == "a=1")
    }

    @Test func insecureOriginCannotShadowSecureCookie() throws {
        // The example of step 16's note: an existing secure "a" at /login.
        let h = JarHarness()
        try h.set("a=secure; Secure; Path=/login", url: "https://example.com/")
        #expect(try h.set("a=1; Path=/", url: "http://example.com/").stored == 1)
        #expect(try h.set("a=2; Path=/foo", url: "http://example.com/").stored == 1)
        #expect(try h.set("a=3; Path=/login", url: "http://example.com/").reasons == [.secureRequired])
        #expect(try h.set("a=4; Path=/login/en", url: "http://example.com/").reasons == [.secureRequired])
        // Domain-matching in either direction counts.
        #expect(
            try h.set("a=5; Path=/login; Domain=example.com", url: "http://www.example.com/").reasons
                == [.secureRequired])
        // Another name is fine; so is the same name from a secure origin.
        #expect(try h.set("b=1; Path=/login", url: "http://example.com/").stored == 1)
        #expect(try h.set("a=6; Path=/login", url: "https://example.com/").stored == 1)
    }

    @Test func sameSiteNoneRequiresSecure() throws {
        let h = JarHarness()
        #expect(try h.set("a=1; SameSite=None", url: "https://example.com/").reasons == [.sameSite])
        #expect(try h.set("a=1; SameSite=None; Secure", url: "https://example.com/").stored == 1)
        #expect(try h.only().sameSite == CookieSameSite.none)
    }

    @Test func securePrefix() throws {
        let h = JarHarness()
        #expect(try h.set("__Secure-a=1", url: "https://example.com/").reasons == [.prefix])
        #expect(try h.set("__secure-b=1", url: "https://example.com/").reasons == [.prefix])
        #expect(try h.set("__SECURE-c=1; Domain=example.com", url: "https://example.com/").reasons == [.prefix])
        #expect(try h.set("__Secure-d=1; Secure", url: "http://example.com/").reasons == [.secureRequired])
        #expect(
            try h.set("__Secure-e=1; Secure; Domain=example.com; Path=/x", url: "https://w.example.com/").stored == 1)
    }

    @Test func hostPrefix() throws {
        let h = JarHarness()
        let url = "https://www.example.com/dir/page"
        #expect(try h.set("__Host-a=1; Secure; Path=/", url: url).stored == 1)
        #expect(try h.set("__host-b=1; Secure; Path=/", url: url).stored == 1)
        #expect(try h.set("__Host-c=1; Secure", url: url).reasons == [.prefix])
        #expect(try h.set("__Host-d=1; Secure; Path=/dir", url: url).reasons == [.prefix])
        #expect(try h.set("__Host-e=1; Path=/", url: url).reasons == [.prefix])
        #expect(try h.set("__HOST-f=1; Secure; Path=/; Domain=example.com", url: url).reasons == [.prefix])
        // Domain equal to the host is still a Domain attribute: not host-only.
        #expect(try h.set("__Host-g=1; Secure; Path=/; Domain=www.example.com", url: url).reasons == [.prefix])
    }

    @Test func namelessCookieMustNotLookPrefixed() throws {
        let h = JarHarness()
        let outcome = try h.set("__Secure-x=1", "=__Host-y", "__host-z; Secure; Path=/", url: "https://example.com/")
        // "__Secure-x=1" has a name; it fails the prefix rule for lacking Secure.
        #expect(outcome.reasons == [.prefix, .prefix, .prefix])
    }

    @Test func controlCharactersAndSizeAreReported() throws {
        let h = JarHarness()
        let outcome = try h.set(
            "a=b\r\nSet-Cookie: evil=1", "x=" + String(repeating: "v", count: 4095),
            "y=" + String(repeating: "v", count: 4096),
            url: "http://example.com/")
        #expect(
            outcome.rejected == [
                RejectedCookie(index: 0, reason: .syntax), RejectedCookie(index: 2, reason: .tooLarge),
            ])
        #expect(outcome.stored == 1)
    }

    @Test func invalidHostsThrow() throws {
        let h = JarHarness()
        #expect(throws: CookieRequestError.invalidHost(CookieHostError(field: "host", host: "bad host"))) {
            try h.set("a=b", url: "http://192.0.2.1/", host: "bad host")
        }
        #expect(throws: CookieRequestError.invalidHost(CookieHostError(field: "url", host: "a..b"))) {
            try h.set("a=b", url: "http://a..b/")
        }
        #expect(throws: CookieHostError(field: "domain", host: "a b")) {
            try h.jar.delete(.domain("a b"), now: JarHarness.now)
        }
    }

    @Test func partitionedIsKept() throws {
        let h = JarHarness()
        try h.set("a=1; Secure; Partitioned", url: "https://example.com/")
        #expect(try h.only().partitioned)
    }
}

/// RFC 6265bis section 5.8.3, the retrieval algorithm.
struct CookieRetrievalTests {
    @Test func orderIsLongerPathThenEarlierCreation() throws {
        let h = JarHarness()
        // All in one second: the creation sequence breaks the tie.
        try h.set(
            "short=1; Path=/", "long=2; Path=/a/b", "mid1=3; Path=/a", "mid2=4; Path=/a", url: "http://example.com/")
        try h.set("long0=5; Path=/a/b", url: "http://example.com/")
        #expect(try h.header("http://example.com/a/b/c") == "long=2; long0=5; mid1=3; mid2=4; short=1")
    }

    @Test func httpOnlyIsLeftOutForScripts() throws {
        let h = JarHarness()
        try h.set("a=1; HttpOnly", "b=2", url: "http://example.com/")
        #expect(try h.header("http://example.com/") == "a=1; b=2")
        #expect(try h.header("http://example.com/", forScript: true) == "b=2")
    }

    @Test func sameSite() throws {
        let h = JarHarness()
        try h.set(
            "strict=1; SameSite=Strict", "lax=2; SameSite=Lax", "none=3; SameSite=None; Secure", "default=4",
            url: "https://a.example.com/")
        let target = "https://a.example.com/"
        // No site: same-site.
        #expect(try h.header(target) == "strict=1; lax=2; none=3; default=4")
        // Same registrable domain, same scheme: same-site.
        #expect(try h.header(target, site: "https://www.example.com/page") == "strict=1; lax=2; none=3; default=4")
        // Cross-site subresource: only None.
        #expect(try h.header(target, site: "https://evil.com/") == "none=3")
        // Cross-site top-level navigation: Lax and Default too, never Strict.
        #expect(try h.header(target, site: "https://evil.com/", topLevel: true) == "lax=2; none=3; default=4")
        // Schemeful: an http site is cross-site to an https request.
        #expect(try h.header(target, site: "http://a.example.com/") == "none=3")
        // A script retrieval in a cross-site context gets no Lax cookies.
        #expect(try h.header(target, forScript: true, site: "https://evil.com/", topLevel: true) == "none=3")
    }

    @Test func lastAccessIsUpdated() throws {
        let h = JarHarness()
        try h.set("a=1", url: "http://example.com/", at: 100)
        _ = try h.header("http://example.com/", at: 150)
        #expect(try h.only(150).lastAccess == 150)
        #expect(try h.only(150).created == 100)
    }

    @Test func hostsCompareCaseInsensitively() throws {
        let h = JarHarness()
        try h.set("a=1; Domain=EXAMPLE.com", url: "http://WWW.Example.COM/")
        #expect(try h.header("http://wWw.eXample.com/") == "a=1")
    }
}

/// Domain normalization (httpdnsd-rpc(7), JARS AND ADDRESS MEMORY): IP-literal URLs store and fetch under the host name.
struct CookieNormalizationTests {
    @Test func ipUrlWithHostStoresUnderTheHost() throws {
        let h = JarHarness()
        let outcome = try h.set("sid=abc; Path=/", url: "http://192.0.2.1/login", host: "A.Example.com")
        #expect(outcome.host == "a.example.com")
        let cookie = try h.only()
        #expect(cookie.domain == "a.example.com")
        #expect(cookie.hostOnly)
        #expect(try h.header("http://a.example.com/") == "sid=abc")
        // Through another IP of the same host.
        #expect(try h.header("http://192.0.2.2/x", host: "a.example.com") == "sid=abc")
        #expect(try h.header("http://[2001:db8::7]/x", host: "a.example.com") == "sid=abc")
        // Not through the bare IP, nor for a sibling host.
        #expect(try h.header("http://192.0.2.1/") == "")
        #expect(try h.header("http://b.example.com/") == "")
    }

    @Test func domainNamingTheIPMeansTheHost() throws {
        let h = JarHarness()
        try h.set("a=1; Domain=192.0.2.1", url: "http://192.0.2.1/", host: "a.example.com")
        let cookie = try h.only()
        #expect(cookie.domain == "a.example.com")
        #expect(cookie.hostOnly)
        let v6 = JarHarness()
        try v6.set("b=2; Domain=[2001:DB8:0::1]", url: "http://[2001:db8::1]/", host: "a.example.com")
        #expect(try v6.only().domain == "a.example.com")
    }

    @Test func domainAttributeAppliesToTheHost() throws {
        let h = JarHarness()
        let outcome = try h.set(
            "a=1; Domain=example.com", "b=2; Domain=192.0.2.9", "c=3; Domain=other.com",
            url: "http://192.0.2.1/", host: "a.example.com")
        #expect(outcome.stored == 1)
        #expect(outcome.reasons == [.domainMismatch, .domainMismatch])
        #expect(try h.header("http://www.example.com/") == "a=1")
    }

    @Test func withoutHostTheIPIsTheHost() throws {
        let h = JarHarness()
        let outcome = try h.set(
            "a=1", "b=2; Domain=192.0.2.1", "c=3; Domain=example.com", "d=4; Domain=0.2.1",
            url: "http://192.0.2.1/")
        #expect(outcome.host == "192.0.2.1")
        #expect(outcome.reasons == [.domainMismatch, .domainMismatch])
        let cookies = try h.jar.list(now: JarHarness.now)
        #expect(cookies.map(\.domain) == ["192.0.2.1", "192.0.2.1"])
        #expect(cookies.allSatisfy { $0.hostOnly })
        #expect(try h.header("http://192.0.2.1/") == "a=1; b=2")
        #expect(try h.header("http://192.0.2.1/", host: "a.example.com") == "")
    }

    @Test func hostParameterIsIgnoredForHostNameURLs() throws {
        let h = JarHarness()
        let outcome = try h.set("a=1", url: "http://www.example.com/", host: "other.example.org")
        #expect(outcome.host == "www.example.com")
    }
}

/// Limits and eviction ("remove excess cookies", RFC 6265bis 5.7).
struct CookieEvictionTests {
    /// A replacement skips the limits only while they hold: after they were lowered (a reload), it
    /// brings the jar back within them, keeping the cookie it stored.
    @Test func aReplacementAfterLoweredLimitsEvicts() throws {
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 3, maxTotal: 100))
        try h.set("c1=1; Path=/1", "c2=2; Path=/2", "c3=3; Path=/3", url: "http://example.com/")
        h.jar.limits = CookieJarLimits(maxPerDomain: 2, maxTotal: 100)
        try h.set("c3=new; Path=/3", url: "http://example.com/")
        #expect(try h.jar.list(now: JarHarness.now).map(\.name).sorted() == ["c2", "c3"])
        h.jar.limits = CookieJarLimits(maxPerDomain: 2, maxTotal: 1)
        try h.set("c3=newer; Path=/3", url: "http://example.com/")
        #expect(try h.jar.list(now: JarHarness.now).map(\.value) == ["newer"])
    }

    @Test func perDomainLeastRecentlyUsed() throws {
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 3, maxTotal: 100))
        try h.set("c1=1; Path=/1", "c2=2; Path=/2", "c3=3; Path=/3", url: "http://example.com/")
        _ = try h.header("http://example.com/1")  // c1 is now the most recently used.
        try h.set("c4=4", url: "http://www.example.com/")  // Same registrable domain.
        #expect(try h.jar.list(now: JarHarness.now).map(\.name).sorted() == ["c1", "c3", "c4"])
        #expect(h.jar.count == 3)
    }

    @Test func expiredGoFirst() throws {
        let now = JarHarness.now
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 3, maxTotal: 100))
        try h.set("c1=1; Max-Age=5; Path=/1", "c2=2; Path=/2", "c3=3; Path=/3", url: "http://example.com/", at: now)
        _ = try h.header("http://example.com/2", at: now + 1)
        _ = try h.header("http://example.com/3", at: now + 1)
        _ = try h.header("http://example.com/1", at: now + 1)  // c1 most recent, but it expires.
        try h.set("c4=4", url: "http://example.com/", at: now + 10)
        #expect(try h.jar.list(now: now + 10).map(\.name).sorted() == ["c2", "c3", "c4"])
    }

    @Test func nonSecureBeforeSecure() throws {
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 2, maxTotal: 100))
        try h.set("s=1; Secure", url: "https://example.com/")
        try h.set("n=2", url: "https://example.com/")
        try h.set("m=3", url: "https://example.com/")
        #expect(try h.jar.list(now: JarHarness.now).map(\.name).sorted() == ["m", "s"])
    }

    @Test func neverTheCookieJustSet() throws {
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 1, maxTotal: 100))
        try h.set("a=1", url: "http://example.com/")
        try h.set("b=2", url: "http://example.com/")
        #expect(try h.header("http://example.com/") == "b=2")
        // Replacing the only cookie is no eviction.
        try h.set("b=3", url: "http://example.com/")
        #expect(try h.header("http://example.com/") == "b=3")
        let none = JarHarness(limits: CookieJarLimits(maxPerDomain: 0, maxTotal: 100))
        #expect(try none.set("a=1", url: "http://example.com/").reasons == [.limit])
        #expect(none.jar.count == 0)
    }

    @Test func totalLimitEvictsAcrossDomains() throws {
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 10, maxTotal: 3))
        try h.set("a=1", url: "http://a.com/")
        try h.set("b=1", url: "http://b.com/")
        try h.set("c=1", url: "http://c.com/")
        _ = try h.header("http://a.com/")
        try h.set("d=1", url: "http://d.com/")
        #expect(try h.jar.list(now: JarHarness.now).map(\.domain) == ["a.com", "c.com", "d.com"])
    }

    @Test func fullJarLookupsStayCorrect() throws {
        let h = JarHarness()
        for site in 0..<100 {
            for index in 0..<30 {
                try h.set("k\(index)=v; Path=/", url: "http://www.site\(site).com/")
            }
        }
        #expect(h.jar.count == 3000)
        #expect(try h.header("http://www.site42.com/").split(separator: ";").count == 30)
        try h.set("new=1", url: "http://fresh.com/")
        #expect(h.jar.count == 3000)
        #expect(try h.header("http://fresh.com/") == "new=1")
    }

    @Test func purgeExpired() throws {
        let now = JarHarness.now
        let h = JarHarness()
        try h.set("a=1; Max-Age=10", "b=2; Max-Age=20", "c=3", url: "http://example.com/", at: now)
        #expect(h.jar.purgeExpired(now: now + 15) == 1)
        #expect(h.jar.count == 2)
    }
}

/// deleteCookies, listCookies and the persistence seam.
struct CookieManagementTests {
    @Test func deleteByURL() throws {
        let h = JarHarness()
        try h.set(
            "a=1; HttpOnly; SameSite=Strict", "b=2; Path=/x", "c=3; Domain=example.com", url: "https://www.example.com/"
        )
        try h.set("d=4", url: "https://other.example.com/")
        let url = try #require(RequestURL("https://www.example.com/"))
        #expect(try h.jar.delete(.request(CookieRequest(url, for: h.jar)), name: "c", now: JarHarness.now) == 1)
        #expect(try h.jar.delete(.request(CookieRequest(url, for: h.jar)), now: JarHarness.now) == 1)  // a; not b (/x)
        #expect(try h.jar.list(now: JarHarness.now).map(\.name).sorted() == ["b", "d"])
        let viaIP = try #require(RequestURL("https://192.0.2.1/x"))
        #expect(
            try h.jar.delete(.request(CookieRequest(viaIP, host: "www.example.com", for: h.jar)), now: JarHarness.now)
                == 1)
    }

    @Test func deleteByDomainAndAll() throws {
        let h = JarHarness()
        try h.set("a=1", url: "http://example.com/")
        try h.set("b=2", url: "http://sub.example.com/")
        try h.set("c=3; Domain=example.com", url: "http://deep.sub.example.com/")
        try h.set("d=4", url: "http://notexample.com/")
        try h.set("a=5", url: "http://192.0.2.1/")
        #expect(try h.jar.delete(.domain(".sub.example.com"), now: JarHarness.now) == 1)
        #expect(try h.jar.delete(.domain("example.com"), name: "a", now: JarHarness.now) == 1)
        #expect(try h.jar.delete(.domain("EXAMPLE.com"), now: JarHarness.now) == 1)
        #expect(try h.jar.list(now: JarHarness.now).map(\.domain) == ["192.0.2.1", "notexample.com"])
        #expect(try h.jar.delete(.all, now: JarHarness.now) == 2)
        #expect(h.jar.count == 0)
    }

    @Test func listFiltersAndSorts() throws {
        let h = JarHarness()
        try h.set("z=1; Path=/b", "y=2; Path=/a", "x=3; Path=/a", url: "http://www.example.com/")
        try h.set("w=4", url: "http://example.com/")
        try h.set("v=5", url: "http://example.org/")
        #expect(try h.jar.list(domain: "example.com", now: JarHarness.now).map(\.name) == ["w", "y", "x", "z"])
        #expect(try h.jar.list(now: JarHarness.now).count == 5)
        #expect(try h.jar.list(domain: "www.example.com", now: JarHarness.now).count == 3)
    }

    @Test func changesAreRecorded() throws {
        let h = JarHarness(limits: CookieJarLimits(maxPerDomain: 1, maxTotal: 10))
        try h.set("a=1", url: "http://example.com/")
        let first = h.jar.drainChanges()
        #expect(first.count == 1)
        guard case .upsert(let cookie) = first.first else {
            Issue.record("expected an upsert")
            return
        }
        #expect(cookie.name == "a")
        #expect(h.jar.drainChanges().isEmpty)
        try h.set("b=2", url: "http://example.com/")  // Evicts a.
        let key = CookieKey(domain: "example.com", path: "/", name: "a")
        #expect(h.jar.drainChanges().map(Self.summary) == ["delete a", "upsert b"])
        try h.set("b=2; Max-Age=0", url: "http://example.com/")
        #expect(h.jar.drainChanges() == [.delete(CookieKey(domain: "example.com", path: "/", name: "b"))])
        _ = key
    }

    /// A cookie set again exactly as stored (last-access aside) is no change to write, but says
    /// so, so that its answer waits for the changes still being written.
    @Test func aRefreshAsStoredIsNoChange() throws {
        let h = JarHarness()
        let now = JarHarness.now
        try h.set(
            "sid=1; Path=/; Max-Age=60", "fixed=1; Expires=Mon, 01 Mar 2027 00:00:00 GMT", url: "http://example.com/",
            at: now)
        #expect(h.jar.takeChanges().changes.count == 2)
        try h.set("sid=1; Path=/; Max-Age=60", url: "http://example.com/", at: now)
        let same = h.jar.takeChanges()
        #expect(same.changes.isEmpty && same.refreshedAsStored)
        #expect(h.jar.takeChanges() == CookieJarChanges(changes: []))
        // A fixed expiry stays the same a second later; a Max-Age does not.
        try h.set("fixed=1; Expires=Mon, 01 Mar 2027 00:00:00 GMT", url: "http://example.com/", at: now + 1)
        #expect(h.jar.takeChanges().changes.isEmpty)
        try h.set("sid=1; Path=/; Max-Age=60", url: "http://example.com/", at: now + 1)
        #expect(h.jar.takeChanges().changes.map(Self.summary) == ["upsert sid"])
        // Any stored attribute, or the value, is a change.
        for changed in [
            "sid=2; Path=/; Max-Age=59", "sid=1; Path=/; Max-Age=59; HttpOnly",
            "sid=1; Path=/; Max-Age=59; SameSite=Lax", "sid=1; Path=/; Max-Age=59; Partitioned",
        ] {
            try h.set(changed, url: "http://example.com/", at: now + 1)
            let drained = h.jar.takeChanges()
            #expect(drained.changes.count == 1 && !drained.refreshedAsStored, "\(changed)")
        }
        // The fleet's copy of a cookie, applied as stored, is nothing for the next request to wait for.
        let stored = try #require(h.jar.cookie(for: CookieKey(domain: "example.com", path: "/", name: "fixed")))
        #expect(h.jar.applyRemote(stored, now: now + 2).isEmpty)
        #expect(h.jar.takeChanges() == CookieJarChanges(changes: []))
    }

    @Test func loadRestoresWithoutRecording() throws {
        let source = JarHarness()
        try source.set("a=1", "b=2", url: "http://example.com/", at: 100)
        try source.set("c=3; Max-Age=50", url: "http://example.com/", at: 100)
        let stored = try source.jar.list(now: 100)

        let restored = JarHarness()
        restored.jar.load(stored.reversed(), now: 120)
        #expect(restored.jar.drainChanges().isEmpty)
        #expect(try restored.header("http://example.com/", at: 120) == "a=1; b=2; c=3")
        // New cookies sort after the loaded ones.
        try restored.set("d=4", url: "http://example.com/", at: 120)
        #expect(try restored.header("http://example.com/", at: 130) == "a=1; b=2; c=3; d=4")
        // Expired cookies are not loaded.
        let later = JarHarness()
        later.jar.load(stored, now: 200)
        #expect(later.jar.count == 2)
    }

    @Test func loadRefusesCookiesThatCouldInjectHeaders() {
        let jar = CookieJar(rules: BasicDomainRules())
        let evil = Cookie(
            name: "a", value: "b\r\nX-Evil: 1", domain: "example.com", hostOnly: true, path: "/", expires: nil,
            secure: false, httpOnly: false, sameSite: .default, partitioned: false, created: 0, creationIndex: 1,
            lastAccess: 0)
        jar.load([evil], now: 10)
        #expect(jar.count == 0)
    }

    static func summary(_ change: CookieChange) -> String {
        switch change {
        case .upsert(let cookie): return "upsert \(cookie.name)"
        case .delete(let key): return "delete \(key.name)"
        }
    }
}

/// Retrieval remembers, per host, where its buckets are in the jar; those places change when a
/// bucket appears or goes (and the jar's table grows). Random sets, deletions and expiries over
/// many sites, each followed by lookups, checked against a plain model of what each site holds.
struct CookieCandidateCacheTests {
    @Test func lookupsStayRightWhileBucketsComeAndGo() throws {
        var rng = SeededGenerator(state: 0x6275_636B_6574)
        let h = JarHarness()
        var model: [Int: [String: String]] = [:]  // site -> cookie name -> value
        var now = JarHarness.now
        func site(_ n: Int) -> String { "https://www.site\(n).example/" }
        for round in 0..<3000 {
            let n = Int(rng.next() % 300)
            let name = "c\(rng.next() % 3)"
            switch rng.next() % 10 {
            case 0...5:
                try h.set("\(name)=v\(round); Path=/", url: site(n), at: now)
                model[n, default: [:]][name] = "v\(round)"
            case 6, 7:
                // Max-Age=0 deletes; a site losing its last cookie loses its bucket.
                try h.set("\(name)=; Path=/; Max-Age=0", url: site(n), at: now)
                model[n]?[name] = nil
            default:
                // Expires in a second: purged by the lookup that finds it expired.
                try h.set("\(name)=short; Path=/; Max-Age=1", url: site(n), at: now)
                model[n, default: [:]][name] = nil
            }
            now += 2
            for probe in [n, Int(rng.next() % 300)] {
                let expected = (model[probe] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                let header = try h.header(site(probe) + "x", at: now)
                let got = header.isEmpty ? [] : header.split(separator: "; ").map(String.init).sorted()
                #expect(got == expected, "round \(round), site \(probe)")
            }
        }
    }
}
