import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSIDNA
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSSystem

/// Where acknowledged cookie changes (and fleet records) go before the client hears "done".
protocol StatePersistence: AnyObject {
    /// Makes `batch` durable, then calls `completion` on the loop thread; a failure carries the
    /// jar as committed (memory is rolled back to it).
    func commit(_ batch: consuming StateBatch, completion: @escaping (Result<Void, StateCommitFailure>) -> Void)
}

extension StateGroupCommit: StatePersistence {}

/// Where the local changes of a shared jar go on their way to the fleet (`FleetService`).
protocol CookieReplication: AnyObject {
    /// The fleet records to commit with `changes` of `uid`'s jar; nil when that jar is not shared.
    func recordLocal(_ changes: CookieJarChanges, uid: UInt32) -> FleetLocalChanges?
    /// The transaction holding them committed.
    func localCommitted(_ changes: FleetLocalChanges)
    /// The transaction holding them failed.
    func localCommitFailed(_ changes: FleetLocalChanges)
}

/// The cookie methods: one jar per peer uid (SO_PEERCRED), so no user ever reads, changes or
/// deletes another user's cookies. It carries out what Core decides: the site of a request through
/// an IP (`CookieRequest`), the jar's answer, and what that answer waits for (`StateBatch`, ordered
/// by the group commit). Time is the loop's wall clock.
final class CookieService {
    /// More Set-Cookie values than a browser would take from one response (-32003 beyond).
    static let maxCookiesPerRequest = 256

    /// All jars together hold at most this many times `MaxTotal=` cookies (about 16 MiB each):
    /// past it, a user holding more than an equal share stores no more than it holds.
    static let sharesOfAllJars = 32

    private let rules: any DomainRules
    private var limits: CookieJarLimits
    private var jars: [UInt32: CookieJar] = [:]
    /// The uid whose share each jar counts against (`CallContext.account`): `MaxTotal=` is one
    /// user's, however many subordinate uids its cookies are spread over.
    var accountOf: (UInt32) -> UInt32 = { $0 }
    private var accountOfJar: [UInt32: UInt32] = [:]
    /// Cookies held per account and in all, kept with every change a method makes.
    private var heldByAccount: [UInt32: Int] = [:]
    private var held = 0
    /// The host names the resolver handed an IP out for to a uid, most recent first (its
    /// per-uid memory: another user's resolves never appear here).
    private let hostNames: (_ ip: String, _ uid: UInt32) -> [String]
    private let persistence: any StatePersistence
    private let clock: any DaemonClock
    private let logger: Logger
    /// Replicates the jars of the users in `ShareCookiesOf=` (nil without a fleet).
    weak var replication: (any CookieReplication)?
    /// Counts cookie operations and tells the monitors (nil in tests that do not look).
    var observation: Observation?

    init(
        rules: any DomainRules, limits: CookieJarLimits, persistence: any StatePersistence, clock: any DaemonClock,
        logger: Logger, hostNames: @escaping (String, UInt32) -> [String]
    ) {
        self.rules = rules
        self.limits = limits
        self.persistence = persistence
        self.clock = clock
        self.logger = logger
        self.hostNames = hostNames
    }

    /// Fills the jars from storage at startup.
    func load(_ cookiesByUser: [UInt32: [Cookie]], now: Int64) {
        for (uid, cookies) in cookiesByUser {
            let jar = CookieJar(rules: rules, limits: limits)
            jar.load(cookies, now: now)
            jars[uid] = jar
            settle(uid, jar, heldBefore: 0)
        }
    }

    /// A reloaded configuration's `[Cookies]` limits, for every jar: a jar over a lower limit
    /// evicts (as RFC 6265bis section 5.7 orders) at its next change, which stores the evictions.
    func apply(_ limits: CookieJarLimits) {
        self.limits = limits
        for jar in jars.values { jar.limits = limits }
    }

    var totalCount: Int { jars.values.reduce(0) { $0 + $1.count } }

    func count(uid: UInt32) -> Int { jars[uid]?.count ?? 0 }

    /// Jars held (users with a jar, empty or not).
    var jarCount: Int { jars.count }

    private func jar(for uid: UInt32) -> CookieJar {
        if let jar = jars[uid] { return jar }
        let jar = CookieJar(rules: rules, limits: limits)
        jars[uid] = jar
        return jar
    }

    // MARK: shares

    /// `uid`'s jar with room for what its user may still store: `MaxTotal=` for all the jars of
    /// its account, and past `sharesOfAllJars` of them in all, an equal share of that. The room
    /// never goes below what the jar holds: another user's cookies never evict its own (its own
    /// new ones do, as in a full jar). Call `settle` after the change.
    private func jarWithRoom(for uid: UInt32) -> (jar: CookieJar, held: Int) {
        let jar = jar(for: uid)
        let account = account(ofJar: uid)
        let others = (heldByAccount[account] ?? 0) - jar.count
        var room = limits.maxTotal - others
        // A huge MaxTotal= must not overflow: then the total is no bound.
        let (product, overflow) = limits.maxTotal.multipliedReportingOverflow(by: Self.sharesOfAllJars)
        let allJars = overflow ? Int.max : product
        if held >= allJars {
            let users = heldByAccount.count + (heldByAccount[account] == nil ? 1 : 0)
            room = min(room, allJars / users - others)
        }
        jar.limits.maxTotal = max(jar.count, min(room, limits.maxTotal))
        return (jar, jar.count)
    }

    /// Counts what a change did to `uid`'s jar, and gives the jar its own limit back.
    private func settle(_ uid: UInt32, _ jar: CookieJar, heldBefore: Int) {
        jar.limits.maxTotal = limits.maxTotal
        let delta = jar.count - heldBefore
        guard delta != 0 else { return }
        let account = account(ofJar: uid)
        let now = (heldByAccount[account] ?? 0) + delta
        heldByAccount[account] = now > 0 ? now : nil
        held += delta
    }

    /// The account a jar counts against, moved with its cookies when /etc/subuid changed.
    private func account(ofJar uid: UInt32) -> UInt32 {
        let current = accountOf(uid)
        guard let previous = accountOfJar[uid] else {
            accountOfJar[uid] = current
            return current
        }
        if previous != current, let count = jars[uid]?.count, count > 0 {
            let left = (heldByAccount[previous] ?? 0) - count
            heldByAccount[previous] = left > 0 ? left : nil
            heldByAccount[current, default: 0] += count
        }
        accountOfJar[uid] = current
        return current
    }

    /// Charges the jars to the accounts `accountOf` gives from now on (the loaded jars too).
    func chargeJars(to accountOf: @escaping (UInt32) -> UInt32) {
        self.accountOf = accountOf
        accountOfJar = [:]
        heldByAccount = [:]
        held = 0
        for (uid, jar) in jars { settle(uid, jar, heldBefore: 0) }
    }

    /// Cookies the jars of `uid`'s account hold.
    func accountCount(uid: UInt32) -> Int { heldByAccount[account(ofJar: uid)] ?? 0 }

    // MARK: methods

    func cookieHeader(_ params: consuming CookieHeaderQuery, uid: UInt32) throws(RPCError) -> CookieHeaderResult {
        let (parsed, members) = params.parts()
        let url = try Self.requestURL(parsed, field: "url")
        let site = try members.siteForCookies.map { (s) throws(RPCError) in
            try Self.parseURL(s, field: "siteForCookies")
        }
        let request = try normalized(url, host: members.host, uid: uid)
        let jar = jar(for: uid)
        let before = jar.count
        let header = jar.cookieHeader(
            for: request, forScript: members.forScript, siteForCookies: site,
            topLevelNavigation: members.topLevelNavigation, now: clock.wallSeconds())
        // A lookup may purge expired cookies.
        if jar.count != before { settle(uid, jar, heldBefore: before) }
        observation?.cookieHeaderBuilt()
        return CookieHeaderResult(header)
    }

    func handleSetCookie(
        _ params: consuming SetCookieQuery, uid: UInt32, done: Reply<SetCookieResult>
    ) throws(RPCError) {
        let (parsed, members) = params.parts()
        guard members.setCookie.count <= Self.maxCookiesPerRequest else {
            throw .limitExceeded("cookies in one request", limit: Self.maxCookiesPerRequest)
        }
        let url = try Self.requestURL(parsed, field: "url")
        let request = try normalized(url, host: members.host, uid: uid)
        let (jar, before) = jarWithRoom(for: uid)
        let outcome = jar.setCookies(members.setCookie, for: request, now: clock.wallSeconds())
        settle(uid, jar, heldBefore: before)
        if !outcome.rejected.isEmpty {
            observation?.cookiesRejected(
                uid: uid, host: outcome.host, reasons: outcome.rejected.map(\.reason.rawValue))
        }
        persist(uid: uid, jar: jar) { done($0.map { _ in SetCookieResult(outcome) }) }
    }

    func deleteCookies(_ params: DeleteCookiesParams, uid: UInt32, done: Reply<DeleteCookiesResult>)
        throws(RPCError)
    {
        let scope: CookieDeletionScope
        switch params.target {
        case .url(let text, let host):
            scope = .request(try normalized(try Self.parseURL(text, field: "url"), host: host, uid: uid))
        case .domain(let domain):
            scope = .domain(domain)
        case .all:
            scope = .all
        }
        let jar = jar(for: uid)
        let before = jar.count
        defer { settle(uid, jar, heldBefore: before) }
        let deleted = try mapHostError { () throws(CookieHostError) in
            try jar.delete(scope, name: params.name, now: clock.wallSeconds())
        }
        persist(uid: uid, jar: jar) { done($0.map { _ in DeleteCookiesResult(deleted: deleted) }) }
    }

    func listCookies(_ params: ListCookiesParams, uid: UInt32) throws(RPCError) -> ListCookiesResult {
        let jar = jar(for: uid)
        let before = jar.count
        defer { if jar.count != before { settle(uid, jar, heldBefore: before) } }
        let cookies = try mapHostError { () throws(CookieHostError) in
            try jar.list(domain: params.domain, now: clock.wallSeconds())
        }
        return ListCookiesResult(cookies: cookies)
    }

    func importCookies(
        _ params: ImportCookiesParams, uid: UInt32, done: @escaping (Result<ImportCookiesResult, RPCError>) -> Void
    ) {
        let (jar, before) = jarWithRoom(for: uid)
        let result = jar.importNetscape(params.data, now: clock.wallSeconds())
        settle(uid, jar, heldBefore: before)
        persist(uid: uid, jar: jar) { done($0.map { _ in ImportCookiesResult(imported: result.imported) }) }
    }

    /// `importCookies` of a storageState text, whole (it is one JSON value): -32602 when it is
    /// no storageState object.
    func importStorageState(
        _ params: ImportCookiesParams, uid: UInt32, done: @escaping (Result<ImportCookiesResult, RPCError>) -> Void
    ) throws(RPCError) {
        let (jar, before) = jarWithRoom(for: uid)
        let imported = jar.importStorageState(params.data, now: clock.wallSeconds())
        settle(uid, jar, heldBefore: before)
        guard let imported else {
            throw .invalidParams(field: "data", "not a storageState JSON object with a \"cookies\" array")
        }
        persist(uid: uid, jar: jar) { done($0.map { _ in ImportCookiesResult(imported: imported.imported) }) }
    }

    func exportCookies(_ params: ExportCookiesParams, uid: UInt32) -> ExportCookiesResult {
        let jar = jar(for: uid)
        let before = jar.count
        let export = jar.exportNetscape(now: clock.wallSeconds())
        if jar.count != before { settle(uid, jar, heldBefore: before) }
        return ExportCookiesResult(data: export.text, leftOut: export.leftOut)
    }

    // MARK: helpers

    /// Acknowledges only after the store committed; on failure the jar goes back to what is on disk.
    /// A shared jar's changes also go to the fleet's outbox, in the same transaction; the reply
    /// never waits for the fleet.
    private func persist(uid: UInt32, jar: CookieJar, then reply: @escaping (Result<Void, RPCError>) -> Void) {
        let changes = jar.takeChanges()
        guard changes.waitForTheStore else {
            reply(.success(()))
            return
        }
        let shared = changes.changes.isEmpty ? nil : replication?.recordLocal(changes, uid: uid)
        let batch = StateBatch(uid: uid, changes: changes.changes, fleet: shared?.storeWrite ?? FleetStoreWrite())
        // unowned: the service lives as long as the daemon (weak would give it a side table,
        // which slows every retain of it on the request path).
        persistence.commit(batch) { [unowned self] result in
            guard case .failure(let failure) = result else {
                if let shared { self.replication?.localCommitted(shared) }
                self.observation?.cookiesChanged(uid: uid, changes.changes)
                reply(.success(()))
                return
            }
            self.logger.error("Failed to store cookie changes: \(failure.error)")
            if let shared { self.replication?.localCommitFailed(shared) }
            self.restore(uid: uid, committed: failure.committedJar)
            reply(
                .failure(.internalError("the change could not be stored (\(failure.error.code)); nothing was changed")))
        }
    }

    /// After a failed commit: the jar goes back to what the store holds (when it could be read).
    func restore(uid: UInt32, committed: [Cookie]?) {
        guard let committed else { return }
        let restored = CookieJar(rules: rules, limits: limits)
        restored.load(committed, now: clock.wallSeconds())
        let before = jars[uid]?.count ?? 0
        jars[uid] = restored
        settle(uid, restored, heldBefore: before)
    }

    // MARK: fleet replication

    /// The cookie with `key` in `uid`'s jar, unless expired.
    func cookie(uid: UInt32, key: CookieKey, now: Int64) -> Cookie? {
        guard let cookie = jars[uid]?.cookie(for: key), !cookie.isExpired(at: now) else { return nil }
        return cookie
    }

    /// Every unexpired cookie of `uid`'s jar.
    func allCookies(uid: UInt32, now: Int64) -> [Cookie] {
        guard let jar = jars[uid] else { return [] }
        // Listing purges the expired cookies: the shares count what is left.
        let before = jar.count
        defer { if jar.count != before { settle(uid, jar, heldBefore: before) } }
        return (try? jar.list(now: now)) ?? []
    }

    /// Applies a change another machine made to a shared jar: memory only, without recording it
    /// as a local change; returns what the store must write.
    func applyRemote(uid: UInt32, _ outcome: FleetCookieReplica.Outcome, now: Int64) -> [CookieChange] {
        switch outcome {
        case .store(let address, let value):
            let (jar, before) = jarWithRoom(for: uid)
            defer { settle(uid, jar, heldBefore: before) }
            return jar.applyRemote(value.cookie(address.key, creationIndex: 0, lastAccess: now), now: now)
        case .remove(let address):
            guard let jar = jars[uid] else { return [] }
            let before = jar.count
            defer { settle(uid, jar, heldBefore: before) }
            return jar.applyRemoteRemoval(address.key)
        case .ignored:
            return []
        }
    }

    /// The request after domain normalization, with this uid's own address memory.
    @inline(__always)
    private func normalized(_ url: consuming RequestURL, host: String?, uid: UInt32) throws(RPCError) -> CookieRequest {
        do {
            return try CookieRequest.normalizing(consume url, host: host, rules: rules) { hostNames($0, uid) }
        } catch {
            switch error {
            case .emptyHost: throw .invalidParams(field: "host", "must not be empty")
            case .ambiguousAddress(let address, let candidates):
                throw .ambiguousAddress(address, candidates: candidates)
            case .invalidHost(let invalid): throw Self.invalidHost(invalid)
            }
        }
    }

    private static func parseURL(_ text: String, field: String) throws(RPCError) -> RequestURL {
        try requestURL(RequestURL.parse(text, toASCII: IDNA.urlDomainToASCII), field: field)
    }

    private static func requestURL(
        _ parsed: consuming Result<RequestURL, RequestURL.Refusal>, field: String
    ) throws(RPCError) -> RequestURL {
        switch consume parsed {
        case .success(let url): return url
        case .failure(.notAURL): throw .invalidParams(field: field, "not an absolute http(s) or ws(s) URL with a host")
        case .failure(.ambiguous): throw .ambiguousURL(field: field)
        }
    }

    private func mapHostError<T>(_ body: () throws(CookieHostError) -> T) throws(RPCError) -> T {
        do {
            return try body()
        } catch {
            throw Self.invalidHost(error)
        }
    }

    private static func invalidHost(_ error: CookieHostError) -> RPCError {
        .invalidParams(field: error.field, "\(RPCError.quoted(error.host)) is not a valid host name")
    }
}

@available(*, unavailable)
extension CookieService: Sendable {}
