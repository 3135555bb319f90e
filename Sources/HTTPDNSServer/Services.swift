import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSPSL
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSSystem

/// Everything the methods work on, owned by the loop thread.
final class Services {
    let resolver: ResolverService
    let cookies: CookieService
    /// Acknowledges cookie changes (and stores fleet records) once committed, many requests per
    /// transaction.
    let cookieCommits: StateGroupCommit
    /// Writes the DNS cache out every minute and at shutdown.
    let dnsSaver: DNSSnapshotSaver
    /// The fleet tier, with `[Fleet]`.
    let fleet: FleetService?
    private let clock: any DaemonClock
    private let startedAt: Int64

    /// Builds the services over `stored` (read at startup); their writes go to `storeThread`.
    init(
        configuration: DaemonConfiguration, rules: PublicSuffixRules, stored: StoredState, storeThread: StoreThread,
        fleetSetup: FleetSetup?, loop: EventLoop, logger: Logger
    ) {
        clock = loop.clock
        startedAt = loop.clock.nowNanoseconds()
        resolver = ResolverService(configuration: configuration, rules: rules, loop: loop, logger: logger)
        resolver.restoreSaved(from: storeThread)
        // With Synchronous=full a commit waits for the disk: never on the loop thread.
        cookieCommits = StateGroupCommit(
            loop: loop, storeThread: storeThread, commitsOnLoopThread: !configuration.store.synchronousFull)
        let resolver = self.resolver
        cookies = CookieService(
            rules: rules,
            limits: CookieJarLimits(
                maxPerDomain: configuration.cookies.maxPerDomain, maxTotal: configuration.cookies.maxTotal),
            persistence: cookieCommits, clock: loop.clock, logger: logger,
            hostNames: { [unowned resolver] ip, uid in resolver.hostNames(of: ip, uid: uid) })
        cookies.load(stored.jars, now: loop.clock.wallSeconds())
        dnsSaver = DNSSnapshotSaver(resolver: resolver, storeThread: storeThread, loop: loop, logger: logger)
        if let fleetSetup, let (machine, state) = stored.fleet {
            let fleet = FleetService(
                setup: fleetSetup, machine: machine, stored: state, cookies: cookies, persistence: cookieCommits,
                loop: loop, logger: logger)
            if fleet.sharesCache { resolver.share(with: fleet.client) }
            cookies.replication = fleet
            self.fleet = fleet
        } else {
            fleet = nil
        }
    }

    /// The server runs its methods on these services.
    func registerMethods(on server: RPCServer) {
        server.serve(self)
    }

    func start() {
        fleet?.start()
        resolver.startPrefetch()
        dnsSaver.start()
    }

    /// No upstream query or cookie commit is still running.
    var isQuiescent: Bool { resolver.isQuiescent && cookieCommits.unansweredCount == 0 }

    var statusSummary: String {
        "\(resolver.cachedNameCount) cached name(s), \(cookies.totalCount) cookie(s)"
    }

    func status(uid: UInt32) -> StatusResult {
        StatusResult(
            version: Daemon.version, uptime: Double((clock.nowNanoseconds() - startedAt) / 1_000_000_000),
            cache: resolver.cacheStatus,
            // Counts only: the caller's own jar, never another user's.
            cookieCount: cookies.count(uid: uid), upstreams: resolver.upstreamStatus, fleet: fleet?.status.member)
    }

    /// After the loop stopped: no more upstream work; the DNS cache is queued for saving.
    func shutdown() {
        fleet?.shutdown()
        resolver.shutdown()
        dnsSaver.save()
    }
}

/// The contract's methods, each on the service that owns its state.
extension Services: MethodTable {
    /// `rpc.discover`'s answer: the embedded document, served byte for byte.
    static let discoverResult = DiscoverResult(encodedDocument: Array(OpenRPCDocument.text.utf8))

    func resolve(_ params: ResolveParams, context: CallContext, reply: Reply<ResolveResult>)
        throws(RPCError)
    {
        resolver.resolve(params, uid: context.peer.uid, done: reply)
    }

    func reverse(_ params: ReverseParams, context: CallContext, reply: Reply<ReverseResult>)
        throws(RPCError)
    {
        reply(.success(try resolver.reverse(params, uid: context.peer.uid)))
    }

    func getCookieHeader(_ params: CookieHeaderQuery, context: CallContext, reply: Reply<CookieHeaderResult>)
        throws(RPCError)
    {
        reply(.success(try cookies.cookieHeader(params, uid: context.peer.uid)))
    }

    func handleSetCookie(_ params: SetCookieQuery, context: CallContext, reply: Reply<SetCookieResult>)
        throws(RPCError)
    {
        try cookies.handleSetCookie(params, uid: context.peer.uid, done: reply)
    }

    func deleteCookies(
        _ params: DeleteCookiesParams, context: CallContext, reply: Reply<DeleteCookiesResult>
    ) throws(RPCError) {
        try cookies.deleteCookies(params, uid: context.peer.uid, done: reply)
    }

    func listCookies(_ params: ListCookiesParams, context: CallContext, reply: Reply<ListCookiesResult>)
        throws(RPCError)
    {
        reply(.success(try cookies.listCookies(params, uid: context.peer.uid)))
    }

    func importCookies(
        _ params: ImportCookiesParams, context: CallContext, reply: Reply<ImportCookiesResult>
    ) throws(RPCError) {
        cookies.importCookies(params, uid: context.peer.uid, done: reply)
    }

    func exportCookies(
        _ params: ExportCookiesParams, context: CallContext, reply: Reply<ExportCookiesResult>
    ) throws(RPCError) {
        reply(.success(cookies.exportCookies(params, uid: context.peer.uid)))
    }

    func flushCache(_ params: FlushCacheParams, context: CallContext, reply: Reply<FlushCacheResult>)
        throws(RPCError)
    {
        reply(.success(try resolver.flushCache(params, uid: context.peer.uid)))
    }

    func status(_ params: StatusParams, context: CallContext, reply: Reply<StatusResult>) throws(RPCError) {
        reply(.success(status(uid: context.peer.uid)))
    }

    func discover(_ params: DiscoverParams, context: CallContext, reply: Reply<DiscoverResult>)
        throws(RPCError)
    {
        reply(.success(Self.discoverResult))
    }
}
