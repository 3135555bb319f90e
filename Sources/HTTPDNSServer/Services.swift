import HTTPDNSCore
import HTTPDNSPSL
import HTTPDNSProtocol
import HTTPDNSSystem

/// Everything the methods work on, owned by the loop thread.
final class Services {
    private unowned let daemon: Daemon
    let resolver: ResolverService
    let cookies: CookieService
    let state: StateStoreBridge

    init(daemon: Daemon) throws {
        self.daemon = daemon
        let rules: PublicSuffixRules
        do {
            rules = try PublicSuffixRules()
        } catch {
            throw StartupError("Failed to load the public suffix list: \(error)")
        }
        let configuration = daemon.configuration
        // State first: a startup error must come before the resolver's worker threads exist, so
        // the process never exits while they are still starting up.
        state = try StateStoreBridge(
            directory: daemon.paths.stateDirectory, options: configuration.store,
            loop: daemon.loop, logger: daemon.logger)
        let now = WallClock.nowSeconds()
        let storedCookies = try state.loadCookies(now: now)
        resolver = ResolverService(configuration: configuration, rules: rules, loop: daemon.loop, logger: daemon.logger)
        let resolver = self.resolver
        cookies = CookieService(
            rules: rules,
            limits: CookieJarLimits(
                maxPerDomain: configuration.cookies.maxPerDomain, maxTotal: configuration.cookies.maxTotal),
            hostNames: { [unowned resolver] ip, uid in resolver.hostNames(of: ip, uid: uid) })
        cookies.load(storedCookies, now: now)
        cookies.persistence = state
        state.loadDNS(into: resolver)
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
        state.scheduleDNSSaves(of: resolver)
    }

    /// No upstream query or store write is still running.
    var isQuiescent: Bool { resolver.isQuiescent && state.pendingWrites == 0 }

    var statusSummary: String {
        "\(resolver.cache.entryCount) cached name(s), \(cookies.totalCount) cookie(s)"
    }

    func status(uid: UInt32) -> JSON {
        let cache = resolver.cache
        var o = JSONObject()
        o.append("version", .string(Daemon.version))
        o.append("uptime", .int64(daemon.uptimeSeconds))
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

    /// After the loop stopped: no more upstream work, then the state goes to disk.
    func shutdown() {
        resolver.shutdown()
        state.close(saving: resolver)
    }
}
