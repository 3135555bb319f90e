import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSCore

/// The jar remembers the headers it built (`CookieJar.headerMemo`): a random run of sets (new
/// cookies, replacements, refreshes of the same value with other attributes), deletions, expiries,
/// evictions and retrievals gets the same headers, counts and final jar
/// (last-access times and LRU order included) from a jar that remembers and one that builds
/// every header afresh.
struct CookieHeaderMemoTests {
    @Test func rememberedHeadersMatchFreshOnes() throws {
        var rng = SeededGenerator(state: 0x6D65_6D6F_0001)
        let limits = CookieJarLimits(maxPerDomain: 5, maxTotal: 14)
        let remembering = CookieJar(rules: BasicDomainRules(), limits: limits)
        let fresh = CookieJar(rules: BasicDomainRules(), limits: limits)
        fresh.testsOnly_remembersHeaders = false
        let hosts = ["a.example", "www.a.example", "b.example", "c.b.example", "192.0.2.7"]
        let paths = ["/", "/app/page", "/other/x"]
        func pick<T>(_ choices: [T]) -> T { choices[Int(rng.next() % UInt64(choices.count))] }
        var now: Int64 = 1_800_000_000
        var hits = 0
        // Few sets between many retrievals, so that remembered headers are used, and must be
        // given up, between changes.
        for round in 0..<20000 {
            now += Int64(rng.next() % 3)
            let host = pick(hosts)
            let scheme = pick(["https", "http"])
            let url = try #require(RequestURL("\(scheme)://\(host)\(pick(paths))"))
            switch rng.next() % 100 {
            case 0..<7:
                // Often the value the cookie already has: a refresh keeps remembered headers.
                var header = "c\(rng.next() % 4)=" + pick(["same", "same", "other", "v\(round)"])
                header += pick(["", "; Path=/", "; Path=/app", "; Path=/other"])
                header += pick(["", "", "; Domain=a.example", "; Domain=b.example", "; Domain=www.a.example"])
                header += pick(["", "; Secure", "; HttpOnly", "; Secure; HttpOnly"])
                header += pick(["", "; SameSite=Strict", "; SameSite=None; Secure"])
                header += pick(["", "", "; Max-Age=0", "; Max-Age=1", "; Max-Age=3", "; Max-Age=3600"])
                let a = remembering.setCookies([header], for: try CookieRequest(url, for: remembering), now: now)
                let b = fresh.setCookies([header], for: try CookieRequest(url, for: fresh), now: now)
                #expect(a == b, "round \(round)")
            case 7..<9:
                let scope: CookieDeletionScope = pick([
                    .domain("a.example"), .domain("c.b.example"), .request(try CookieRequest(url, for: remembering)),
                ])
                let name: String? = pick([nil, "c0", "c1"])
                #expect(
                    try remembering.delete(scope, name: name, now: now) == fresh.delete(scope, name: name, now: now))
            default:
                let forScript = rng.next() % 4 == 0
                let site: RequestURL? = pick([nil, nil, url, RequestURL("https://b.example/")])
                let topLevel = rng.next() % 2 == 0
                let request = try CookieRequest(url, for: remembering)
                let a = remembering.cookieHeader(
                    for: request, forScript: forScript, siteForCookies: site, topLevelNavigation: topLevel, now: now)
                let b = fresh.cookieHeader(
                    for: request, forScript: forScript, siteForCookies: site, topLevelNavigation: topLevel, now: now)
                #expect(a == b, "round \(round): \(url)")
                if !a.header.isEmpty { hits += 1 }
            }
        }
        #expect(hits > 3000, "the run should retrieve cookies often (\(hits))")
        let listA = try remembering.list(now: now)
        let listB = try fresh.list(now: now)
        #expect(listA == listB)
        #expect(!listA.isEmpty)
    }

    /// A shape's header is kept at its second miss, and served at its version only; a shape
    /// remembered before is kept again at its next miss (a newer version); a header too long is
    /// never kept; shapes asked for in turn are all kept (no two displace each other).
    @Test func aHeaderIsKeptAtItsSecondMissAndServedAtItsVersion() {
        func probe(_ path: String) -> CookieHeaderMemory.Probe {
            CookieHeaderMemory.Probe(.init(host: "a.example", path: path, isSecure: true, forScript: false))!
        }
        var memory = CookieHeaderMemory()
        let page = probe("/page")
        memory.remember("a=1", selected: [], for: page, version: 1)
        #expect(memory.entry(for: page, version: 1, now: 0) == nil, "asked for once: not kept")
        memory.remember("a=1", selected: [], for: page, version: 1)
        #expect(memory.entry(for: page, version: 1, now: 0)?.header == "a=1")
        #expect(memory.entry(for: page, version: 2, now: 0) == nil)
        memory.remember("a=2", selected: [], for: page, version: 2)
        #expect(memory.entry(for: page, version: 2, now: 0)?.header == "a=2")
        // Many shapes asked for in turn: each is kept at its second round.
        let pages = (0..<100).map { probe("/p\($0)") }
        for _ in 0..<2 {
            for shape in pages where memory.entry(for: shape, version: 1, now: 0) == nil {
                memory.remember("b=\(shape.key.path)", selected: [], for: shape, version: 1)
            }
        }
        #expect(pages.allSatisfy { memory.entry(for: $0, version: 1, now: 0)?.header == "b=\($0.key.path)" })
        // Too long to keep, however often.
        let long = probe("/long")
        let header = String(repeating: "x", count: 4097)
        for _ in 0..<3 { memory.remember(header, selected: [], for: long, version: 1) }
        #expect(memory.entry(for: long, version: 1, now: 0) == nil)
        // A path too long to keep has no probe: its key would hold the whole path.
        let longest = "/" + String(repeating: "p", count: CookieHeaderMemory.maxPathBytes - 1)
        #expect(
            CookieHeaderMemory.Probe(.init(host: "a.example", path: longest, isSecure: true, forScript: false)) != nil)
        #expect(
            CookieHeaderMemory.Probe(.init(host: "a.example", path: longest + "p", isSecure: true, forScript: false))
                == nil)
    }

    /// Each way a remembered header goes out of date, one at a time.
    @Test func aRememberedHeaderFollowsEveryChange() throws {
        let h = JarHarness()
        let page = "https://www.a.example/app"
        let now = JarHarness.now
        try h.set("sid=1; Domain=a.example; Path=/", "short=x; Path=/; Max-Age=10", url: page, at: now)
        #expect(try h.header(page, at: now) == "sid=1; short=x")
        #expect(try h.header(page, at: now + 9) == "sid=1; short=x")
        // Expiry, with no other change to the jar.
        #expect(try h.header(page, at: now + 10) == "sid=1")
        // A replacement.
        try h.set("sid=2; Domain=a.example; Path=/", url: page, at: now + 11)
        #expect(try h.header(page, at: now + 11) == "sid=2")
        // A deletion by domain, by URL and by Max-Age=0.
        try h.set("other=y; Path=/", url: page, at: now + 12)
        #expect(try h.header(page, at: now + 12) == "sid=2; other=y")
        #expect(try h.jar.delete(.domain("a.example"), name: "sid", now: now + 13) == 1)
        #expect(try h.header(page, at: now + 13) == "other=y")
        try h.set("more=z; Path=/app", url: page, at: now + 14)
        #expect(try h.header(page, at: now + 14) == "more=z; other=y")
        #expect(
            try h.jar.delete(
                .request(try CookieRequest(#require(RequestURL(page)), for: h.jar)), name: "more", now: now + 15)
                == 1)
        #expect(try h.header(page, at: now + 15) == "other=y")
        try h.set("other=; Max-Age=0; Path=/", url: page, at: now + 16)
        #expect(try h.header(page, at: now + 16) == "")
        // A remembered header still counts as a retrieval: last-access moves on.
        try h.set("sid=3; Path=/", url: page, at: now + 17)
        #expect(try h.header(page, at: now + 18) == "sid=3")
        #expect(try h.header(page, at: now + 19) == "sid=3")
        #expect(try h.only(now + 19).lastAccess == now + 19)
    }

    /// A refresh with the same value keeps remembered headers only when nothing a retrieval reads
    /// changed; each of these changes must show in the next header.
    @Test func aRefreshThatChangesWhatIsReadIsSeen() throws {
        let now = JarHarness.now
        let https = "https://www.a.example/"
        let http = "http://www.a.example/"

        var h = JarHarness()
        try h.set("c=same; Path=/", url: https, at: now)
        #expect(try h.header(https, forScript: true, at: now) == "c=same")
        try h.set("c=same; Path=/; HttpOnly", url: https, at: now)
        #expect(try h.header(https, forScript: true, at: now) == "")

        h = JarHarness()
        try h.set("c=same; Path=/", url: https, at: now)
        #expect(try h.header(http, at: now) == "c=same")
        try h.set("c=same; Path=/; Secure", url: https, at: now)
        #expect(try h.header(http, at: now) == "")

        h = JarHarness()
        try h.set("c=same; Path=/", url: "https://a.example/", at: now)
        #expect(try h.header(https, at: now) == "")
        try h.set("c=same; Path=/; Domain=a.example", url: "https://a.example/", at: now)
        #expect(try h.header(https, at: now) == "c=same")

        // An earlier expiry, from a later one and from none.
        for first in ["; Max-Age=100", ""] {
            h = JarHarness()
            try h.set("c=same; Path=/" + first, url: https, at: now)
            #expect(try h.header(https, at: now) == "c=same")
            try h.set("c=same; Path=/; Max-Age=5", url: https, at: now)
            #expect(try h.header(https, at: now + 4) == "c=same")
            #expect(try h.header(https, at: now + 5) == "", "first: \(first)")
        }

        // A refresh that changes nothing read: the same header, a later expiry honoured.
        h = JarHarness()
        try h.set("c=same; Path=/; Max-Age=5", url: https, at: now)
        #expect(try h.header(https, at: now) == "c=same")
        try h.set("c=same; Path=/; Max-Age=50", url: https, at: now + 1)
        #expect(try h.header(https, at: now + 10) == "c=same")
    }
}
