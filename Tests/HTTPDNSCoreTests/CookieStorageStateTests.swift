import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// Playwright's storageState JSON, as `browser.new_context(storage_state=...)` reads it and
/// `context.storage_state()` writes it.
struct CookieStorageStateTests {
    static let now = JarHarness.now

    static func text(_ jar: CookieJar) -> String {
        let cookies = (try? jar.list(now: now)) ?? []
        let objects = cookies.filter(CookieJar.storageStateCanHold).map {
            CookieJar.storageStateObject($0).encodedString
        }
        return CookieJar.storageStateStart + objects.joined(separator: ",") + CookieJar.storageStateEnd
    }

    /// Each attribute in Playwright's terms: host-only without a dot, a domain cookie with one,
    /// -1 for a session cookie, SameSite as Strict/Lax/None (none given: Lax, as Playwright writes
    /// Chromium's), and no partitioned cookie.
    @Test func cookiesAreWrittenAsPlaywrightWritesThem() throws {
        let h = JarHarness()
        try h.set("sid=abc; Secure; HttpOnly; SameSite=Strict; Max-Age=3600", url: "https://www.example.com/")
        try h.set("lang=en; Domain=example.com; Path=/docs", url: "http://www.example.com/")
        try h.set("chip=1; Secure; Partitioned; SameSite=None", url: "https://www.example.com/")
        let state = try JSONParser.parse(Self.text(h.jar))
        #expect(state["origins"] == .array([]))
        let cookies = try #require(state["cookies"]?.arrayValue)
        #expect(cookies.count == 2, "the partitioned cookie is left out")
        let sid = try #require(cookies.first { $0["name"] == "sid" })
        #expect(sid["domain"] == "www.example.com" && sid["path"] == "/" && sid["value"] == "abc")
        #expect(sid["expires"] == .int(Int(Self.now + 3600)) && sid["httpOnly"] == true && sid["secure"] == true)
        #expect(sid["sameSite"] == "Strict")
        let lang = try #require(cookies.first { $0["name"] == "lang" })
        #expect(lang["domain"] == ".example.com" && lang["path"] == "/docs" && lang["expires"] == .int(-1))
        #expect(lang["sameSite"] == "Lax" && lang["httpOnly"] == false && lang["secure"] == false)
    }

    @Test func aRoundTripKeepsEveryCookie() throws {
        let h = JarHarness()
        try h.set(
            "a=1; Max-Age=100; SameSite=None; Secure", "c=3; Domain=example.com; HttpOnly; SameSite=Lax",
            url: "https://www.example.com/p/q")
        try h.set("s=1; SameSite=Lax", url: "https://example.org/")
        let copy = JarHarness()
        let result = try #require(copy.jar.importStorageState(Self.text(h.jar), now: Self.now))
        #expect(result == NetscapeImportResult(imported: 3))
        func fields(_ cookies: [Cookie]) -> [String] {
            cookies.map {
                "\($0.name)=\($0.value) \($0.domain) \($0.hostOnly) \($0.path) \($0.expires ?? -1) \($0.secure) \($0.httpOnly) \($0.sameSite)"
            }.sorted()
        }
        #expect(fields(try copy.jar.list(now: Self.now)) == fields(try h.jar.list(now: Self.now)))
    }

    /// Playwright's own file: fractional expiries, an expired cookie skipped, a cookie on a
    /// public suffix refused, origins ignored; a text that is no storageState is nil.
    @Test func aPlaywrightFileIsRead() throws {
        let text = """
            {"cookies":[
             {"name":"sid","value":"x","domain":".example.com","path":"/","expires":\(Self.now + 60).5,"httpOnly":true,"secure":true,"sameSite":"Lax"},
             {"name":"old","value":"y","domain":"www.example.com","path":"/","expires":\(Self.now - 10),"httpOnly":false,"secure":false,"sameSite":"None"},
             {"name":"super","value":"z","domain":".com","path":"/","expires":-1,"httpOnly":false,"secure":false,"sameSite":"Lax"},
             {"name":"nodomain","value":"z"}
            ],"origins":[{"origin":"https://www.example.com","localStorage":[{"name":"k","value":"v"}]}]}
            """
        let h = JarHarness()
        let result = try #require(h.jar.importStorageState(text, now: Self.now))
        #expect(result.imported == 1 && result.expired == 1 && result.skipped == 2)
        let sid = try #require(try h.jar.list(now: Self.now).first)
        #expect(sid.domain == "example.com" && !sid.hostOnly && sid.httpOnly && sid.expires == Self.now + 61)
        #expect(h.jar.importStorageState("# Netscape HTTP Cookie File\n", now: Self.now) == nil)
        #expect(h.jar.importStorageState(#"{"origins":[]}"#, now: Self.now) == nil)
    }
}
