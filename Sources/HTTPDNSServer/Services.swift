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
    /// Watches the machine's addresses and routes (`OnNetworkChange=`).
    let network: NetworkChangeService
    private let clock: any DaemonClock
    private let startedAt: Int64
    private let loop: EventLoop
    /// Where long work runs a slice per turn (the server's, once registered).
    private var slices: SlicedWork?
    /// The counters and the monitors.
    let observation: Observation
    /// The server, for its connection and memory figures (`metrics`). Not `weak`: a weak
    /// reference gives the server a side table, and every retain of it on the request path
    /// then takes the runtime's slow path. The server outlives the methods it runs.
    private unowned var server: RPCServer?

    /// Builds the services over `stored` (read at startup); their writes go to `storeThread`.
    init(
        configuration: DaemonConfiguration, rules: PublicSuffixRules, stored: StoredState, storeThread: StoreThread,
        fleetSetup: FleetSetup?, loop: EventLoop, logger: Logger, stateDirectory: String? = nil
    ) {
        clock = loop.clock
        startedAt = loop.clock.nowNanoseconds()
        self.loop = loop
        observation = Observation(clock: loop.clock)
        resolver = ResolverService(
            configuration: configuration, rules: rules, loop: loop, logger: logger, stateDirectory: stateDirectory)
        resolver.observation = observation
        resolver.restoreSaved(from: storeThread)
        network = NetworkChangeService(
            policy: configuration.resolver.onNetworkChange, resolver: resolver, loop: loop, logger: logger)
        // With Synchronous=full a commit waits for the disk: never on the loop thread.
        cookieCommits = StateGroupCommit(
            loop: loop, storeThread: storeThread, commitsOnLoopThread: !configuration.store.synchronousFull)
        let resolver = self.resolver
        cookies = CookieService(
            rules: rules,
            limits: configuration.cookieLimits,
            persistence: cookieCommits, clock: loop.clock, logger: logger,
            hostNames: { [unowned resolver] ip, uid in resolver.hostNames(of: ip, uid: uid) })
        cookies.load(stored.jars, now: loop.clock.wallSeconds())
        cookies.observation = observation
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
        server.serve(methodTable)
        // The saved cache is read once the first answer is out (socket activation started the
        // daemon for it), or a moment after start when nobody asks.
        server.afterFirstAnswer = { [unowned resolver] in resolver.startRestoringSaved() }
        slices = server.slices
        self.server = server
    }

    /// How long after start the saved cache is read when no answer was sent before.
    static let savedCacheReadDelayMilliseconds: Int64 = 200

    func start() {
        loop.schedule(afterMilliseconds: Self.savedCacheReadDelayMilliseconds) { [unowned resolver] in
            resolver.startRestoringSaved()
        }
        fleet?.start()
        network.start()
        resolver.startServiceAddresses()
        resolver.startPrefetch()
        dnsSaver.start()
    }

    /// A reloaded configuration, as a value each service takes (its jars, cache and flights stay).
    func apply(_ configuration: DaemonConfiguration) {
        resolver.apply(configuration)
        network.apply(configuration)
        cookies.apply(configuration.cookieLimits)
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
            cookieCount: cookies.count(uid: uid), upstreams: resolver.upstreamStatus, fleet: fleet?.status.member,
            network: network.status)
    }

    /// `metrics`' exposition: totals since start (counters never go back, whatever
    /// `resetStatistics` does), and gauges of now. No label names a user.
    func metricsText() -> String {
        var m = MetricsExposition()
        let counts = observation.current(cache: resolver.cache)
        m.single(
            "httpdnsd_uptime_seconds", type: "gauge", help: "Seconds since the daemon started.",
            Double((clock.nowNanoseconds() - startedAt) / 1_000_000_000))
        if let server {
            var samples: [(labels: [(String, String)], value: Double)] = []
            for method in Method.allCases {
                samples.append(
                    (
                        [("method", method.rawValue), ("outcome", "ok")],
                        Double(server.requestCounts.succeeded[method.ordinal])
                    ))
            }
            for (method, codes) in server.requestCounts.failed.sorted(by: {
                ($0.key?.ordinal ?? -1) < ($1.key?.ordinal ?? -1)
            }) {
                for (code, count) in codes.sorted(by: { $0.key > $1.key }) {
                    samples.append(
                        ([("method", method?.rawValue ?? "unknown"), ("outcome", String(code))], Double(count)))
                }
            }
            m.family(
                "httpdnsd_requests_total", type: "counter",
                help: "Requests answered, by method and outcome (ok, or the JSON-RPC error code).", samples: samples)
            m.single(
                "httpdnsd_connections", type: "gauge", help: "Client connections open.", Double(server.connectionCount))
            m.single(
                "httpdnsd_connection_users", type: "gauge",
                help: "Users (uids) with a connection or a request in flight.",
                Double(server.userCount))
            m.single(
                "httpdnsd_held_bytes", type: "gauge",
                help: "Memory the connections hold (buffers, answers waiting, snapshots being streamed).",
                Double(server.memory))
        }
        let cache = resolver.cache
        m.single(
            "httpdnsd_cache_entries", type: "gauge", help: "DNS cache entries (one per name and family).",
            Double(cache.entryCount))
        m.family(
            "httpdnsd_cache_lookups_total", type: "counter", help: "Cache lookups of resolve, by result.",
            samples: [
                ([("result", "hit")], Double(counts.cacheHits)), ([("result", "miss")], Double(counts.cacheMisses)),
                ([("result", "stale")], Double(counts.cacheStaleServed)),
            ])
        let names =
            resolver.upstreamNames + counts.upstreams.keys.filter { !resolver.upstreamNames.contains($0) }.sorted()
        let upstreams = names.map { ($0, counts.upstreams[$0] ?? Observation.Counters.Upstream()) }
        m.family(
            "httpdnsd_upstream_queries_total", type: "counter", help: "Queries sent to each upstream.",
            samples: upstreams.map { ([("upstream", $0.0)], Double($0.1.queries)) })
        m.family(
            "httpdnsd_upstream_failures_total", type: "counter", help: "Queries of each upstream that failed.",
            samples: upstreams.map { ([("upstream", $0.0)], Double($0.1.failures)) })
        m.histogram(
            "httpdnsd_upstream_latency_seconds", help: "Time each upstream took to answer.",
            bounds: Observation.latencyBuckets.map { Double($0) / 1000 },
            series: upstreams.map { ([("upstream", $0.0)], $0.1.latency, Double($0.1.latencySumMs) / 1000) })
        m.family(
            "httpdnsd_upstream_healthy", type: "gauge", help: "1 while an upstream is considered healthy.",
            samples: resolver.upstreamStatus.map { ([("upstream", $0.name)], $0.healthy ? 1 : 0) })
        m.single("httpdnsd_cookies", type: "gauge", help: "Cookies in every jar together.", Double(cookies.totalCount))
        m.single("httpdnsd_cookie_jars", type: "gauge", help: "Jars (users with cookies).", Double(cookies.jarCount))
        m.family(
            "httpdnsd_cookie_operations_total", type: "counter", help: "Cookie operations of every user together.",
            samples: [
                ([("operation", "stored")], Double(counts.cookiesStored)),
                ([("operation", "rejected")], Double(counts.cookiesRejected)),
                ([("operation", "deleted")], Double(counts.cookiesDeleted)),
                ([("operation", "header")], Double(counts.cookieHeaders)),
            ])
        m.single(
            "httpdnsd_monitors", type: "gauge", help: "Open monitor subscriptions.", Double(observation.monitors.count))
        m.single(
            "httpdnsd_monitor_dropped_events_total", type: "counter",
            help: "Monitor events dropped because a subscriber read too slowly.", Double(counts.monitorDropped))
        if let fleet = fleet?.status.member {
            m.single("httpdnsd_fleet_connected", type: "gauge", help: "1 while Redis answers.", fleet.connected ? 1 : 0)
            m.single(
                "httpdnsd_fleet_lag_seconds", type: "gauge",
                help: "Seconds between a fleet change's publication and its application here, as last measured.",
                fleet.lag ?? 0)
            m.single(
                "httpdnsd_fleet_outbox", type: "gauge", help: "Local changes not yet taken by the fleet.",
                Double(fleet.outbox))
            m.single(
                "httpdnsd_fleet_rejected_total", type: "counter",
                help: "Fleet entries that failed to open or validate.",
                Double(fleet.rejected))
        }
        return m.text
    }

    /// After the loop stopped: no more upstream work; the DNS cache is queued for saving.
    func shutdown() {
        fleet?.shutdown()
        network.shutdown()
        resolver.shutdown()
        dnsSaver.save()
    }
}

/// The contract's methods, each bound to the service that owns its state.
extension Services {
    /// `rpc.discover`'s answer: the embedded document, served byte for byte.
    static let discoverResult = DiscoverResult(encodedDocument: Array(OpenRPCDocument.text.utf8))

    var methodTable: MethodTable {
        var table = MethodTable()
        table.bind(.resolve) {
            [unowned self] (params: ResolveParams, context, reply: Reply<ResolveResult>) throws(RPCError) in
            resolver.resolve(params, uid: context.peer.uid, account: context.account, done: reply)
        }
        table.bind(.reverse) {
            [unowned self] (params: ReverseParams, context, reply: Reply<ReverseResult>) throws(RPCError) in
            reply(.success(try resolver.reverse(params, uid: context.peer.uid)))
        }
        table.bind(.getCookieHeader, declared: GetCookieHeaderParams.self, reading: CookieHeaderQuery.read) {
            [unowned self] query, context, reply throws(RPCError) in
            reply(.success(try cookies.cookieHeader(query, uid: context.peer.uid)))
        }
        table.bind(
            .handleSetCookie, declared: HandleSetCookieParams.self, reading: SetCookieQuery.read,
            paramsWorkUnits: SetCookieQuery.workUnits
        ) { [unowned self] query, context, reply throws(RPCError) in
            try cookies.handleSetCookie(query, uid: context.peer.uid, done: reply)
        }
        // Each deletion is recorded and committed.
        table.bind(.deleteCookies, workUnits: { [unowned self] in cookies.count(uid: $0.peer.uid) / 8 }) {
            [unowned self] (params: DeleteCookiesParams, context, reply: Reply<DeleteCookiesResult>) throws(RPCError) in
            try cookies.deleteCookies(params, uid: context.peer.uid, done: reply)
        }
        // A snapshot streamed as the client reads it: the jar sorted (about a sixteenth of a
        // request per cookie). A notification (nobody reads it) takes no snapshot, and is charged
        // as if it did.
        table.bind(.listCookies, workUnits: { [unowned self] in cookies.count(uid: $0.peer.uid) / 16 }) {
            [unowned self] (params: ListCookiesParams, context, reply: Reply<ListCookiesResult>) throws(RPCError) in
            guard reply.isRead else { return reply(.success(ListCookiesResult(cookies: []))) }
            reply.stream(ArrayResultStream(cookies: try cookies.listCookies(params, uid: context.peer.uid).cookies))
        }
        table.bind(.importCookies) {
            [unowned self] (params: ImportCookiesParams, context, reply: Reply<ImportCookiesResult>) throws(RPCError) in
            try importCookies(params, context: context, reply: reply)
        }
        table.bind(.exportCookies, workUnits: { [unowned self] in cookies.count(uid: $0.peer.uid) / 16 }) {
            [unowned self] (params: ExportCookiesParams, context, reply: Reply<ExportCookiesResult>) throws(RPCError) in
            exportCookies(params, context: context, reply: reply)
        }
        // Forgetting all frees the caller's whole address memory.
        table.bind(.forget, workUnits: { [unowned self] in resolver.rememberedAddressCount(uid: $0.peer.uid) / 64 }) {
            [unowned self] (params: ForgetParams, context, reply: Reply<ForgetResult>) throws(RPCError) in
            reply(.success(try resolver.forget(params, uid: context.peer.uid)))
        }
        table.bind(.flushCache, workUnits: { [unowned self] _ in resolver.cachedNameCount / 32 }) {
            [unowned self] (params: FlushCacheParams, context, reply: Reply<FlushCacheResult>) throws(RPCError) in
            reply(.success(try resolver.flushCache(params, uid: context.peer.uid)))
        }
        table.bind(.status) { [unowned self] (_: StatusParams, context, reply: Reply<StatusResult>) throws(RPCError) in
            reply(.success(status(uid: context.peer.uid)))
        }
        // A walk of the cache (the caller's names only for a user, but found among all), streamed
        // from a snapshot as the client reads it.
        table.bind(.showCache, workUnits: { [unowned self] _ in resolver.cachedNameCount / 16 }) {
            [unowned self] (_: ShowCacheParams, context, reply: Reply<ShowCacheResult>) throws(RPCError) in
            guard reply.isRead else { return reply(.success(ShowCacheResult(entries: []))) }
            reply.stream(ArrayResultStream(cacheEntries: resolver.showCache(uid: context.peer.uid).entries))
        }
        // Every user may read the counters (they are totals, as `status`'s are).
        table.bind(.statistics) {
            [unowned self] (_: StatisticsParams, _, reply: Reply<StatisticsResult>) throws(RPCError) in
            reply(.success(observation.statistics(cache: resolver.cache, upstreamNames: resolver.upstreamNames)))
        }
        table.bind(.resetStatistics, access: .privileged("reset the statistics")) {
            [unowned self] (_: ResetStatisticsParams, _, reply: Reply<ResetStatisticsResult>) throws(RPCError) in
            reply(.success(ResetStatisticsResult(since: observation.resetStatistics(cache: resolver.cache))))
        }
        table.bind(.metrics, workUnits: { [unowned self] _ in cookies.jarCount / 16 + 8 }) {
            [unowned self] (_: MetricsParams, _, reply: Reply<MetricsResult>) throws(RPCError) in
            reply(.success(MetricsResult(text: metricsText())))
        }
        table.bind(.monitor) {
            [unowned self] (_: MonitorParams, context, reply: Reply<MonitorResult>) throws(RPCError) in
            try monitor(context: context, reply: reply)
        }
        table.bind(.discover) { (_: DiscoverParams, _, reply: Reply<DiscoverResult>) throws(RPCError) in
            reply(.success(Self.discoverResult))
        }
        return table
    }

    /// Runs a slice of at most `ImportSlices.linesPerSlice` lines per turn, each committed on
    /// its own; answered once the last slice's commit is.
    private func importCookies(
        _ params: ImportCookiesParams, context: CallContext, reply: Reply<ImportCookiesResult>
    ) throws(RPCError) {
        let uid = context.peer.uid
        if params.format == .storageState {
            // One JSON value, parsed whole: charged by its bytes, as a line of that size is.
            reply.charge(WorkCost.line(bytes: params.data.utf8.count))
            return try cookies.importStorageState(params, uid: uid) { reply($0) }
        }
        guard let slices else { return cookies.importCookies(params, uid: uid) { reply($0) } }
        let run = ImportSlices(text: params.data) { reply($0) }
        slices.run(for: context.account) { [unowned self] in
            run.next { chunk, done in
                let held = self.cookies.count(uid: uid)
                self.cookies.importCookies(ImportCookiesParams(data: chunk), uid: uid, done: done)
                return ImportSlices.cost(lines: ImportSlices.linesPerSlice, bytes: chunk.utf8.count, jarCount: held)
            }
        }
    }

    /// Streamed from a snapshot of the jar as the client reads it (a notification's: as for
    /// `listCookies`).
    private func exportCookies(_ params: ExportCookiesParams, context: CallContext, reply: Reply<ExportCookiesResult>) {
        guard reply.isRead else { return reply(.success(ExportCookiesResult(data: ""))) }
        let snapshot = cookies.allCookies(uid: context.peer.uid, now: clock.wallSeconds())
        switch params.format {
        case .netscape: reply.stream(NetscapeExportStream(snapshot))
        case .storageState: reply.stream(StorageStateExportStream(snapshot))
        }
    }

    /// Answers with the subscription's scope, then writes the events the caller may see until
    /// the connection closes.
    private func monitor(context: CallContext, reply: Reply<MonitorResult>) throws(RPCError) {
        let uid = context.peer.uid
        guard observation.monitors.count(account: context.account) < MonitorHub.maxPerUser else {
            throw .limitExceeded("monitor subscriptions of one user", limit: MonitorHub.maxPerUser)
        }
        let seesAll = ResolverService.isPrivileged(uid)
        let result = MonitorResult(scope: seesAll ? "all" : "own", queueLimit: MonitorSubscription.queueLimit)
        guard let id = reply.responder.id else { return reply(.success(result)) }
        var answer = JSONOutput()
        RPCEncoder.writeResult(result, id: id, to: &answer)
        answer.append(0x0A)
        let subscription = MonitorSubscription(
            uid: uid, account: context.account, seesAll: seesAll, answer: answer.bytes, clock: clock,
            hub: observation.monitors)
        observation.monitors.add(subscription)
        reply.open(subscription)
    }
}
