import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer
@testable import HTTPDNSSystem

/// The cookie service in-process: the real `RPCServer`, `CookieService`, group commit and store
/// thread (over an in-memory store), on the loop's manual clock, with clients on socketpairs and
/// the address memory filled by the test. No daemon, no sleeps: time moves when the test says.
final class CookieServiceHarness {
    let server: InProcessServer
    let memory = AddressOwnerMemory(retention: 86_400)
    let storeThread: StoreThread
    let commits: StateGroupCommit
    let service: CookieService

    var clock: ManualClock { server.clock }

    /// `capacity`: the store's room, in cookies (a full disk beyond it).
    init(capacity: Int = .max, commitsOnLoopThread: Bool = true, limits: CookieJarLimits = CookieJarLimits()) throws {
        server = try InProcessServer()
        storeThread = StoreThread(
            StateStores(jars: InMemoryJarStore(capacity: capacity), dns: InMemoryDNSSnapshotStore()))
        commits = StateGroupCommit(
            loop: server.loop, storeThread: storeThread, commitsOnLoopThread: commitsOnLoopThread)
        let memory = self.memory
        let clock = server.clock
        service = CookieService(
            rules: BasicDomainRules(), limits: limits, persistence: commits, clock: server.clock,
            logger: Logger(threshold: .error) { _, _ in },
            hostNames: { ip, uid in
                guard let address = IPAddress(ip) else { return [] }
                let now = MonotonicInstant(nanoseconds: clock.nowNanoseconds())
                return memory.normalizationCandidates(uid: uid, of: address, now: now)
            })
        server.server.serve(cookieMethods(service))
    }

    deinit { storeThread.close() }

    /// `uid` was handed `addresses` for `host` by an answer valid for `ttl` seconds, now.
    func resolved(_ host: String, to addresses: [String], ttl: Int, uid: UInt32 = 1000) {
        memory.record(
            uid: uid, host: host, addresses: addresses, ttl: ttl,
            now: MonotonicInstant(nanoseconds: clock.nowNanoseconds()))
    }

    /// `uid`'s jar as the store holds it.
    func storedJar(uid: UInt32 = 1000) throws -> [Cookie] {
        let now = clock.wallSeconds()
        return try #require(withStore { try? $0.jars.loadJar(uid: uid, now: now) } ?? nil)
    }

    /// Gives the store room again.
    func unlimitStore() { _ = withStore { ($0.jars as? InMemoryJarStore)?.capacity = .max } }

    /// `body` with the stores, once the store thread is idle (a job that posted its answer may
    /// still be finishing).
    func withStore<Result: Sendable>(_ body: (inout sending StateStores) -> Result) -> Result? {
        var result: Result?
        _ = eventually(10, every: 1) {
            result = storeThread.borrowIfIdle(body)
            return result != nil
        }
        return result
    }

    /// Moves both clocks on by whole seconds.
    func advance(seconds: Int64) { server.advance(milliseconds: seconds * 1_000) }

    func connect(uid: UInt32 = 1000) throws -> CookieClient { CookieClient(try server.connect(uid: uid)) }
}

/// The test's end of one connection, calling one method at a time and awaiting its answer.
final class CookieClient {
    let peer: Peer
    private var nextID = 0

    init(_ peer: Peer) { self.peer = peer }

    /// Sends a request without waiting; returns its id.
    @discardableResult
    func send(_ method: String, _ params: JSON) throws -> Int {
        nextID += 1
        try peer.send(peer.request(method, id: .int(nextID), params))
        return nextID
    }

    /// The answer to request `id`, once it came.
    func answer(_ id: Int) throws -> JSON {
        #expect(
            peer.server.run {
                peer.receive()
                return peer.response(id: .int(id)) != nil
            })
        return try #require(peer.response(id: .int(id)))
    }

    func call(_ method: String, _ params: JSON) throws -> JSON { try answer(try send(method, params)) }

    /// A method's result; records an issue when it failed.
    func result(_ method: String, _ params: JSON) throws -> JSON {
        let response = try call(method, params)
        return try #require(response["result"], "\(method): \(response.encodedString)")
    }

    func error(_ method: String, _ params: JSON) throws -> JSON {
        let response = try call(method, params)
        return try #require(response["error"], "\(method): \(response.encodedString)")
    }

    @discardableResult
    func set(_ url: String, _ values: [String], host: String? = nil) throws -> JSON {
        var params: JSONObject = ["url": .string(url), "setCookie": .array(values.map(JSON.string))]
        if let host { params["host"] = .string(host) }
        return try result("handleSetCookie", .object(params))
    }

    func header(_ url: String, host: String? = nil) throws -> String {
        var params: JSONObject = ["url": .string(url)]
        if let host { params["host"] = .string(host) }
        return try #require(try result("getCookieHeader", .object(params))["header"]?.stringValue)
    }

    func list() throws -> [JSON] { try #require(try result("listCookies", [:])["cookies"]?.arrayValue) }
}

/// The cookie methods on the service under test; the others are not served here.
private func cookieMethods(_ service: CookieService) -> MethodTable {
    var table = MethodTable()
    table.bind(.getCookieHeader, declared: GetCookieHeaderParams.self, reading: CookieHeaderQuery.read) {
        query, context, reply throws(RPCError) in
        reply(.success(try service.cookieHeader(query, uid: context.peer.uid)))
    }
    table.bind(
        .handleSetCookie, declared: HandleSetCookieParams.self, reading: SetCookieQuery.read,
        paramsWorkUnits: SetCookieQuery.workUnits
    ) { query, context, reply throws(RPCError) in
        try service.handleSetCookie(query, uid: context.peer.uid, done: reply)
    }
    table.bind(.deleteCookies) {
        (params: DeleteCookiesParams, context, reply: Reply<DeleteCookiesResult>) throws(RPCError) in
        try service.deleteCookies(params, uid: context.peer.uid, done: reply)
    }
    table.bind(.listCookies) { (params: ListCookiesParams, context, reply: Reply<ListCookiesResult>) throws(RPCError) in
        reply(.success(try service.listCookies(params, uid: context.peer.uid)))
    }
    table.bind(.importCookies) {
        (params: ImportCookiesParams, context, reply: Reply<ImportCookiesResult>) throws(RPCError) in
        service.importCookies(params, uid: context.peer.uid) { reply($0) }
    }
    table.bind(.exportCookies) {
        (params: ExportCookiesParams, context, reply: Reply<ExportCookiesResult>) throws(RPCError) in
        reply(.success(service.exportCookies(params, uid: context.peer.uid)))
    }
    return table
}

@Suite(.serialized)
struct CookieServiceTests {
    /// A method its table does not bind is one this server does not have: -32601 naming it, the
    /// connection served on.
    @Test func aMethodTheTableDoesNotBindIsNotFound() throws {
        let harness = try CookieServiceHarness()
        let client = try harness.connect()
        let error = try client.error("resolve", ["host": "a.example"])
        #expect(error["code"] == -32601 && error["data"]?["method"] == "resolve", "\(error.encodedString)")
        #expect(try client.list().isEmpty)
    }

    /// The manual clock's wall time, in seconds.
    static func wallNow(_ harness: CookieServiceHarness) -> Int64 { harness.clock.wallSeconds() }

    /// Expiry runs on the loop's wall clock: Max-Age counts from it, a cookie is gone the second it
    /// expires, and a Set-Cookie that arrives expired deletes the cookie it names.
    @Test func expiryFollowsTheLoopsClock() throws {
        let harness = try CookieServiceHarness()
        let client = try harness.connect()
        let start = Self.wallNow(harness)
        let stored = try client.set(
            "https://www.example.com/",
            ["brief=1; Max-Age=1", "hour=2; Max-Age=3600", "wins=3; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=60"])
        #expect(stored["stored"] == .int(3), "\(stored.encodedString)")
        #expect(try client.header("https://www.example.com/") == "brief=1; hour=2; wins=3")
        let hour = try #require(try client.list().first { $0["name"] == "hour" })
        #expect(hour["expires"] == .int64(start + 3600))
        #expect(hour["created"] == .int64(start))

        harness.advance(seconds: 1)
        #expect(try client.header("https://www.example.com/") == "hour=2; wins=3")
        #expect(try client.list().map { $0["name"]?.stringValue ?? "" } == ["hour", "wins"])
        harness.advance(seconds: 59)
        #expect(try client.header("https://www.example.com/") == "hour=2")

        try client.set("https://www.example.com/", ["hour=; Max-Age=0"])
        #expect(try client.header("https://www.example.com/") == "")
        #expect(try harness.storedJar().isEmpty)
    }

    /// A set is acknowledged once its batch is committed, and only then: the store holds what the
    /// answer acknowledged, under the caller's uid.
    @Test func aSetIsAnsweredOnceStored() throws {
        let harness = try CookieServiceHarness(commitsOnLoopThread: false)
        let client = try harness.connect()
        let id = try client.send("handleSetCookie", ["url": "https://a.example.com/", "setCookie": ["k=v"]])
        // The turn that reads the request hands its batch to the store thread; the answer can only
        // follow the commit's completion, in a later turn.
        harness.server.loop.runTurn(maxWaitMilliseconds: 1_000)
        client.peer.receive()
        #expect(client.peer.responses.isEmpty, "answered before the commit")
        let answer = try client.answer(id)
        #expect(answer["result"]?["stored"] == .int(1), "\(answer.encodedString)")
        #expect(try harness.storedJar().map(\.name) == ["k"])
        #expect(try harness.storedJar(uid: 0).isEmpty)
    }

    /// A commit that fails is answered -32603 and memory goes back to what the store holds; a renewal
    /// that has nothing to write, sent behind it, fails with it (it may acknowledge its state).
    @Test func aFailedCommitRollsTheJarBackAndFailsWhatReliedOnIt() throws {
        let harness = try CookieServiceHarness(capacity: 2, commitsOnLoopThread: false)
        let client = try harness.connect()
        try client.set("https://a.example.com/", ["one=1", "two=2"])
        // One request too many for the store, and behind it a renewal of `one` as stored.
        let overflowing = try client.send(
            "handleSetCookie", ["url": "https://a.example.com/", "setCookie": ["three=3"]])
        let renewal = try client.send("handleSetCookie", ["url": "https://a.example.com/", "setCookie": ["one=1"]])
        let failed = try client.answer(overflowing)
        #expect(failed["error"]?["code"] == .int(-32603), "\(failed.encodedString)")
        let relied = try client.answer(renewal)
        #expect(relied["error"]?["code"] == .int(-32603), "\(relied.encodedString)")
        #expect(try client.header("https://a.example.com/") == "one=1; two=2")
        #expect(try client.list().count == 2)
        // With room again, the same set is stored.
        harness.unlimitStore()
        try client.set("https://a.example.com/", ["three=3"])
        #expect(try client.header("https://a.example.com/") == "one=1; two=2; three=3")
    }

    /// `MaxTotal=` is one user's across the jars of its subordinate uids: once they hold it, a
    /// sibling's new cookie is refused (`limit`) and nothing of the full jar is evicted; another
    /// user has its own.
    @Test func subordinateUidsShareTheirOwnersMaxTotal() throws {
        let harness = try CookieServiceHarness(limits: CookieJarLimits(maxPerDomain: 180, maxTotal: 10))
        harness.service.chargeJars { $0 >= 100_000 ? 1000 : $0 }
        let full = try harness.connect(uid: 100_000)
        try full.set("https://a.example.com/", (0..<10).map { "c\($0)=1" })
        let sibling = try harness.connect(uid: 100_001)
        let refused = try sibling.set("https://b.example.com/", ["s=1"])
        #expect(
            refused["stored"] == 0 && refused["rejected"]?.arrayValue?.first?["reason"] == "limit",
            "\(refused.encodedString)")
        #expect(try full.list().count == 10, "the full jar keeps every cookie")
        let other = try harness.connect(uid: 2000)
        #expect(try other.set("https://c.example.com/", (0..<10).map { "o\($0)=1" })["stored"] == 10)
        #expect(harness.service.accountCount(uid: 100_001) == 10)
        try full.set("https://a.example.com/", ["new=1"])
        #expect(try full.list().count == 10, "the full account's own new cookie evicts its own oldest")
    }

    /// Past 32 users' worth of cookies in all, a user holding more than an equal share stores no
    /// more than it holds, and one holding less still stores up to that share: a few users
    /// cannot take all the memory of the jars, and nobody's cookies are evicted by another's.
    @Test func allJarsTogetherAreSharedEqually() throws {
        let harness = try CookieServiceHarness(limits: CookieJarLimits(maxPerDomain: 180, maxTotal: 10))
        for uid in 0..<32 {
            let client = try harness.connect(uid: 3000 + UInt32(uid))
            #expect(try client.set("https://u\(uid).example/", (0..<10).map { "c\($0)=1" })["stored"] == 10)
        }
        let late = try harness.connect(uid: 2000)
        _ = try late.set("https://late.example/", (0..<10).map { "l\($0)=1" })
        #expect(try late.list().count == 9, "an equal share of 320 among 33 users")
        let first = try harness.connect(uid: 3000)
        try first.set("https://u0.example/", ["more=1"])
        #expect(try first.list().count == 10, "over its share, a user does not grow")
    }

    /// Every path that purges expired cookies keeps the shares right: a streamed export (as
    /// listCookies) of a jar whose cookies all expired leaves its user room for new ones (the
    /// count stayed at the expired ones, and later imports were refused).
    @Test func sharesFollowPurgesOfExpiredCookies() throws {
        let harness = try CookieServiceHarness(limits: CookieJarLimits(maxPerDomain: 180, maxTotal: 10))
        let client = try harness.connect(uid: 3000)
        try client.set("https://a.example.com/", (0..<10).map { "c\($0)=1; Max-Age=1" })
        #expect(harness.service.accountCount(uid: 3000) == 10)
        harness.advance(seconds: 2)
        #expect(harness.service.allCookies(uid: 3000, now: Self.wallNow(harness)).isEmpty)
        #expect(harness.service.accountCount(uid: 3000) == 0)
        try client.set("https://a.example.com/", (0..<10).map { "n\($0)=1" })
        #expect(try client.list().count == 10)
    }

    /// A `MaxTotal=` so large that 32 of it overflows is no bound at all, not a trap.
    @Test func aHugeMaxTotalIsNoOverflow() throws {
        let harness = try CookieServiceHarness(limits: CookieJarLimits(maxPerDomain: 180, maxTotal: Int.max / 4))
        let client = try harness.connect(uid: 3000)
        #expect(try client.set("https://a.example.com/", ["a=1"])["stored"] == 1)
    }

    /// Two users' sets in one loop turn (one transaction) are each stored in that user's jar.
    @Test func setsOfTwoUsersInOneTurnGoToTheirOwnJars() throws {
        let harness = try CookieServiceHarness(commitsOnLoopThread: false)
        let first = try harness.connect()
        let second = try harness.connect(uid: 1001)
        let a = try first.send("handleSetCookie", ["url": "https://a.example.com/", "setCookie": ["a=1"]])
        let b = try second.send("handleSetCookie", ["url": "https://b.example.com/", "setCookie": ["b=1"]])
        #expect(try first.answer(a)["result"]?["stored"] == .int(1))
        #expect(try second.answer(b)["result"]?["stored"] == .int(1))
        #expect(try harness.storedJar().map(\.name) == ["a"])
        #expect(try harness.storedJar(uid: 1001).map(\.name) == ["b"])
        #expect(harness.commits.unansweredCount == 0)
    }

    /// The TTL-expiry takeover: bank.example.com's answer for an address is past its TTL but still
    /// remembered, and another name was resolved to the address since. Calls through the address
    /// without `host` are ambiguous; none files a cookie under, or sends one to, the newer name.
    @Test func aNameResolvedAfterAnotherExpiredDoesNotTakeTheAddressOver() throws {
        let harness = try CookieServiceHarness()
        let client = try harness.connect()
        harness.resolved("bank.example.com", to: ["203.0.113.10"], ttl: 60)
        #expect(try client.set("https://203.0.113.10/login", ["bank_sid=1"])["host"] == "bank.example.com")
        harness.advance(seconds: 61)
        harness.resolved("cdn.example.net", to: ["203.0.113.10"], ttl: 300)
        let calls: [(String, JSON)] = [
            ("handleSetCookie", ["url": "https://203.0.113.10/", "setCookie": ["sid=ATTACKER-FIXED"]]),
            ("getCookieHeader", ["url": "https://203.0.113.10/"]),
            ("deleteCookies", ["url": "https://203.0.113.10/"]),
        ]
        for (method, params) in calls {
            let error = try client.error(method, params)
            #expect(error["code"] == .int(-32602), "\(method): \(error.encodedString)")
            #expect(error["data"]?["reason"] == "ambiguous-address", "\(method)")
            #expect(error["data"]?["candidates"] == ["cdn.example.net", "bank.example.com"], "\(method)")
        }
        #expect(try client.header("https://bank.example.com/") == "bank_sid=1")
        #expect(try client.header("https://cdn.example.net/") == "")
        #expect(
            try client.set("https://203.0.113.10/", ["x=1"], host: "bank.example.com")["host"] == "bank.example.com")
        #expect(try client.header("https://bank.example.com/") == "bank_sid=1; x=1")
    }

    /// Names and values keep the Unicode whitespace at their edges through the wire, whether the
    /// request's JSON holds it as UTF-8 or as an escape: U+0085, U+00A0, U+2028 and U+3000 are not
    /// the SP and HTAB that RFC 6265bis trims.
    @Test func unicodeWhitespaceAtTheEdgesSurvivesTheWire() throws {
        let harness = try CookieServiceHarness()
        let client = try harness.connect()
        let raw = "\u{85}\u{A0}r\u{2028}=\u{85}\u{3000}v\u{85}"
        try client.peer.send(
            #"{"jsonrpc":"2.0","id":"raw","method":"handleSetCookie","params":{"url":"https://a.example.com/","setCookie":[""#
                + raw + "; Path=/r\"]}}\n")
        try client.peer.send(
            #"{"jsonrpc":"2.0","id":"escaped","method":"handleSetCookie","params":{"url":"https://a.example.com/","#
                + #""setCookie":["\u0085e\u2028=\u0085x\u00a0; Path=/e"]}}"# + "\n")
        #expect(
            harness.server.run {
                client.peer.receive()
                return client.peer.response(id: "raw") != nil && client.peer.response(id: "escaped") != nil
            })
        #expect(client.peer.response(id: "raw")?["result"]?["stored"] == .int(1))
        #expect(client.peer.response(id: "escaped")?["result"]?["stored"] == .int(1))
        let cookies = try client.list()
        func scalars(_ json: JSON?) -> [UInt32] { (json?.stringValue ?? "").unicodeScalars.map(\.value) }
        let byPath = Dictionary(uniqueKeysWithValues: cookies.map { ($0["path"]?.stringValue ?? "", $0) })
        #expect(scalars(byPath["/r"]?["name"]) == [0x85, 0xA0, 0x72, 0x2028])
        #expect(scalars(byPath["/r"]?["value"]) == [0x85, 0x3000, 0x76, 0x85])
        #expect(scalars(byPath["/e"]?["name"]) == [0x85, 0x65, 0x2028])
        #expect(scalars(byPath["/e"]?["value"]) == [0x85, 0x78, 0xA0])
        #expect(
            try client.header("https://a.example.com/r").unicodeScalars.map(\.value) == [
                0x85, 0xA0, 0x72, 0x2028, 0x3D, 0x85, 0x3000, 0x76, 0x85,
            ])
    }

    /// A cookie set through an IP literal is filed under the one name the caller's memory holds for
    /// it, with `Domain=<that IP>` made host-only for the name; with no name, under the IP.
    @Test func anIPURLIsFiledUnderTheNameTheCallerResolvedIt() throws {
        let harness = try CookieServiceHarness()
        let client = try harness.connect()
        harness.resolved("bank.example.com", to: ["203.0.113.10"], ttl: 60)
        let stored = try client.set("https://203.0.113.10/login", ["sid=1; Domain=203.0.113.10"])
        #expect(stored["host"] == "bank.example.com", "\(stored.encodedString)")
        #expect(try client.header("https://bank.example.com/") == "sid=1")
        let sid = try #require(try client.list().first)
        #expect(sid["domain"] == "bank.example.com" && sid["hostOnly"] == true)
        // Another uid's memory does not count for this one.
        let other = try harness.connect(uid: 1001)
        #expect(try other.set("https://203.0.113.10/", ["x=1"])["host"] == "203.0.113.10")
    }
}
