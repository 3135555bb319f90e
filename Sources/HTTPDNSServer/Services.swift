import HTTPDNSCore
import HTTPDNSPSL
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSSystem

/// Everything the methods work on, owned by the loop thread.
final class Services {
    let resolver: ResolverService
    let cookies: CookieService
    /// Acknowledges cookie changes once committed, many requests per transaction.
    let cookieCommits: CookieGroupCommit
    /// Writes the DNS cache out every minute and at shutdown.
    let dnsSaver: DNSSnapshotSaver
    private let startedAt = MonotonicClock.nowNanoseconds()

    /// Builds the services over `stored` (read at startup); their writes go to `storeThread`.
    init(
        configuration: DaemonConfiguration, rules: PublicSuffixRules, stored: StoredState, storeThread: StoreThread,
        loop: EventLoop, logger: Logger
    ) {
        resolver = ResolverService(configuration: configuration, rules: rules, loop: loop, logger: logger)
        stored.restoreDNS(into: resolver, logger: logger)
        // With Synchronous=full a commit waits for the disk: never on the loop thread.
        cookieCommits = CookieGroupCommit(
            loop: loop, storeThread: storeThread, commitsOnLoopThread: !configuration.store.synchronousFull)
        let resolver = self.resolver
        cookies = CookieService(
            rules: rules,
            limits: CookieJarLimits(
                maxPerDomain: configuration.cookies.maxPerDomain, maxTotal: configuration.cookies.maxTotal),
            persistence: cookieCommits, logger: logger,
            hostNames: { [unowned resolver] ip, uid in resolver.hostNames(of: ip, uid: uid) })
        cookies.load(stored.jars, now: WallClock.nowSeconds())
        dnsSaver = DNSSnapshotSaver(resolver: resolver, storeThread: storeThread, loop: loop, logger: logger)
    }

    func registerMethods(on server: RPCServer) {
        server.register(.discover) { _, _, done in done(.rawResult(Array(OpenRPCDocument.text.utf8))) }
        server.register(.status) { [unowned self] _, context, done in done(.result(self.status(uid: context.peer.uid)))
        }
        resolver.registerMethods(on: server)
        cookies.registerMethods(on: server)
    }

    func start() {
        resolver.startPrefetch()
        dnsSaver.start()
    }

    /// No upstream query or cookie commit is still running.
    var isQuiescent: Bool { resolver.isQuiescent && cookieCommits.unansweredCount == 0 }

    var statusSummary: String {
        "\(resolver.cache.entryCount) cached name(s), \(cookies.totalCount) cookie(s)"
    }

    func status(uid: UInt32) -> JSON {
        let cache = resolver.cache
        var o = JSONObject()
        o.append("version", .string(Daemon.version))
        o.append("uptime", .int64((MonotonicClock.nowNanoseconds() - startedAt) / 1_000_000_000))
        o.append(
            "cache",
            .object([
                "entries": .int(cache.entryCount), "hits": .int(cache.hits), "misses": .int(cache.misses),
                "staleServed": .int(cache.staleServed),
            ]))
        // Counts only: the caller's own jar, never another user's.
        o.append("cookies", .object(["count": .int(cookies.count(uid: uid))]))
        o.append("upstreams", .array(resolver.upstreamStatus.map(\.json)))
        return .object(o)
    }

    /// After the loop stopped: no more upstream work; the DNS cache is queued for saving.
    func shutdown() {
        resolver.shutdown()
        dnsSaver.save()
    }
}
