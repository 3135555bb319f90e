import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSSystem

/// The DNS half of the daemon, on the loop thread: carries out what the `ResolverMachine` (the
/// policy) decides, with the loop's clock and timers, the upstream transport, the fleet and the
/// saved cache. It decides nothing itself.
final class ResolverService {
    /// Worker threads for upstream queries: a hung upstream holds one until `Timeout=` ends.
    static let workerThreads = 16
    /// Workers one owner's flights may hold at once: a quarter, so a uid whose names all hang
    /// leaves twelve to everyone else.
    static let workersPerOwner = 4

    private var machine: ResolverMachine
    private let loop: EventLoop
    private let logger: Logger
    private let transport: any UpstreamTransport
    /// Replies of callers waiting for a flight, by caller id.
    private var waiting: [UInt64: PendingReply] = [:]
    private var timers: [ResolverTimer: EventLoop.TimerID] = [:]
    /// The service address lists' refresh timers, by list key.
    private var serviceAddressTimers: [String: EventLoop.TimerID] = [:]
    /// Where scheduler answers are kept across restarts (nil: not kept, in tests).
    private let stateDirectory: String?
    /// With `ShareCache=yes`: asked before any upstream, and told what the upstreams answered.
    private var fleet: FleetClient?
    /// Per flight the fleet deferred to the upstreams, where their answer is reported.
    private var fleetReports: [UInt64: FleetUpstreamReport] = [:]
    /// The saved cache, until it is restored (`SavedDNSRestore`).
    private var savedDNS: SavedDNSRestore?
    private var performing = false
    /// Counts upstream queries and tells the monitors about resolves (the daemon's; nil in
    /// tests that do not look).
    var observation: Observation?
    /// The resolves a monitor watches, by caller id, until they are answered.
    private var watched: [UInt64: WatchedResolve] = [:]
    /// `RankPorts=`: orders replies and runs the connect probes.
    private let ranking: AddressRankingService
    /// The hosts map the NSS module reads (nil: none, `HostsMapSize=0` or a test clock).
    var hostsMap: HostsMapPublisher?
    /// The NSS module's resolves waiting for a flight, by caller id: their answers are published.
    private var publishing: [UInt64: MapRequest] = [:]

    /// Answers to publish once the machine is done with the request (a hit is answered while
    /// it runs, and publishing reads its cache).
    private var publications: [Publication] = []

    /// A resolve whose answer goes to the hosts map too.
    private struct MapRequest {
        let host: String
        let family: AddressFamily
        let uid: UInt32
    }

    /// What the NSS module was answered: the result, or nil for a no-data error.
    private struct Publication {
        let request: MapRequest
        let answered: ResolveResult?
    }

    /// A resolve whose answer goes to the monitors too.
    private struct WatchedResolve {
        let uid: UInt32
        let host: String
        let family: AddressFamily
    }

    /// Where a waiting caller's reply goes, and whose account its resolve is (ranking charges its
    /// probes).
    private enum PendingReply {
        case rpc(Reply<ResolveResult>, uid: UInt32)
        case closure((Result<ResolveResult, RPCError>) -> Void, uid: UInt32)
    }

    /// A resolver for `configuration` on `loop`; upstream exchanges go through `transport`
    /// (worker threads unless given).
    init(
        configuration: DaemonConfiguration, rules: any DomainRules, loop: EventLoop, logger: Logger,
        transport: (any UpstreamTransport)? = nil, stateDirectory: String? = nil
    ) {
        self.stateDirectory = stateDirectory
        machine = ResolverMachine(
            settings: ResolverSettings(
                configuration.resolver, workers: Self.workerThreads, workersPerOwner: Self.workersPerOwner,
                daemonUID: ProcessEnvironment.effectiveUserID),
            rules: rules)
        self.loop = loop
        self.logger = logger
        ranking = AddressRankingService(ports: configuration.resolver.rankPorts, loop: loop, logger: logger)
        self.transport =
            transport
            ?? WorkerUpstreamTransport(
                threads: machine.settings.flightLimits.threads, settings: UpstreamSettings(configuration.resolver),
                loop: loop)
    }

    private var now: MonotonicInstant { MonotonicInstant(nanoseconds: loop.clock.nowNanoseconds()) }

    // MARK: the saved cache

    /// Restores what `storeThread` reads of the saved cache once `startRestoringSaved()` queues
    /// the read, step by step once it is read; any request that reads the cache first finishes it
    /// (`restoreSavedDNS`).
    func restoreSaved(from storeThread: StoreThread) {
        savedDNS = SavedDNSRestore(
            storeThread: storeThread, into: machine.cache, machine.owners, loop: loop, logger: logger)
    }

    /// Queues the saved cache's read (after the daemon's first answer, or a moment after start).
    func startRestoringSaved() { savedDNS?.start() }

    /// Puts the rest of the saved cache back now, if that is still to do: every entry point that
    /// reads or changes the cache or the address memory calls it first, so no request sees a
    /// cache the restore changes later and no save writes a snapshot without the saved one.
    private func restoreSavedDNS() {
        guard let saved = savedDNS else { return }
        saved.finish()
        savedDNS = nil
    }

    /// The cache and the address memory as they are now, with expiries in Unix seconds.
    func snapshot() -> DNSSnapshot {
        restoreSavedDNS()
        let now = self.now
        let wallNow = loop.clock.wallSeconds()
        return DNSSnapshot(
            entries: machine.cache.snapshot(now: now, wallNow: wallNow),
            owners: machine.owners.snapshot(now: now, wallNow: wallNow))
    }

    // MARK: the fleet

    /// Asks `fleet` on every miss from now on (`ShareCache=yes`).
    func share(with fleet: FleetClient) {
        self.fleet = fleet
        machine.sharesCacheWithFleet = true
    }

    // MARK: requests

    /// `resolve` for `uid`: answered now or once its flight ends (see `ResolverMachine`); its
    /// bounds and probes are `account`'s (the owner of a subordinate uid, else `uid`).
    func resolve(_ params: ResolveParams, uid: UInt32, account: UInt32? = nil, done: borrowing Reply<ResolveResult>) {
        restoreSavedDNS()
        let account = account ?? uid
        // Borrowed: the closure reaches the reply where it is (a copy was a retain and a release
        // of its request's id on every cache hit).
        // The NSS module's requests: it reads their answers from the map, as billedRoutesOnly answers.
        // A hit is published before its reply leaves (the module's next lookup may read the map
        // at once), from the cache object itself: the machine is busy answering.
        let mapped = hostsMap != nil && params.hostsMap && params.billedRoutesOnly
        let cache = machine.cache
        guard let observation, observation.monitors.isWatching(uid: uid) else {
            let caller = machine.resolve(params, uid: uid, account: account, now: now) {
                (outcome: consuming Result<ResolveResult, RPCError>) in
                self.ranking.rank(&outcome, uid: account)
                if mapped {
                    self.prepare(&outcome, MapRequest(host: params.host, family: params.family, uid: uid))
                    self.publishPrepared(in: cache)
                }
                done(consume outcome)
            }
            if let caller {
                waiting[caller] = .rpc(copy done, uid: account)
                if mapped { publishing[caller] = MapRequest(host: params.host, family: params.family, uid: uid) }
            }
            if machine.hasActions { performActions() }
            return
        }
        let caller = machine.resolve(params, uid: uid, account: account, now: now) {
            (outcome: consuming Result<ResolveResult, RPCError>) in
            self.ranking.rank(&outcome, uid: account)
            observation.resolved(uid: uid, host: params.host, family: params.family, outcome)
            if mapped {
                self.prepare(&outcome, MapRequest(host: params.host, family: params.family, uid: uid))
                self.publishPrepared(in: cache)
            }
            done(consume outcome)
        }
        if let caller {
            waiting[caller] = .rpc(copy done, uid: account)
            watched[caller] = WatchedResolve(uid: uid, host: params.host, family: params.family)
            if mapped { publishing[caller] = MapRequest(host: params.host, family: params.family, uid: uid) }
        }
        if machine.hasActions { performActions() }
    }

    /// `resolve` with a completion instead of a reply (in-process callers and tests).
    func resolve(
        _ params: ResolveParams, uid: UInt32, account: UInt32? = nil,
        completion: @escaping (Result<ResolveResult, RPCError>) -> Void
    ) {
        restoreSavedDNS()
        let account = account ?? uid
        let caller = machine.resolve(params, uid: uid, account: account, now: now) {
            (outcome: consuming Result<ResolveResult, RPCError>) in
            self.ranking.rank(&outcome, uid: account)
            completion(outcome)
        }
        if let caller { waiting[caller] = .closure(completion, uid: account) }
        performActions()
    }

    /// Counts the address memory of each uid against the account `accountOf` gives (the owner
    /// of a subordinate uid), for its caps.
    func chargeAddressMemory(to accountOf: @escaping (UInt32) -> UInt32) {
        machine.owners.accountOf = accountOf
    }

    /// `reverse`: the host names `address` was handed out for to `uid`.
    func reverse(_ params: ReverseParams, uid: UInt32) throws(RPCError) -> ReverseResult {
        restoreSavedDNS()
        return try machine.reverse(params, uid: uid, now: now)
    }

    /// `forget`: the caller's own address memory.
    func forget(_ params: ForgetParams, uid: UInt32) throws(RPCError) -> ForgetResult {
        restoreSavedDNS()
        return try machine.forget(params, uid: uid)
    }

    /// Addresses `uid`'s memory holds (what forgetting all of it frees).
    func rememberedAddressCount(uid: UInt32) -> Int { machine.rememberedAddressCount(uid: uid) }

    /// `uid`'s host names for the address `ip`, most recent first: what cookie normalization reads.
    func hostNames(of ip: String, uid: UInt32) -> [String] {
        restoreSavedDNS()
        return machine.hostNames(of: ip, uid: uid, now: now)
    }

    /// `flushCache` (root and the daemon's own user only).
    func flushCache(_ params: FlushCacheParams, uid: UInt32) throws(RPCError) -> FlushCacheResult {
        restoreSavedDNS()
        let result = try machine.flushCache(params, uid: uid)
        hostsMap?.flush()
        return result
    }

    /// The network changed: `policy` on the cached host answers (`ResolverMachine.networkChanged`);
    /// how many entries it marked or dropped.
    func networkChanged(_ policy: NetworkChangePolicy) -> Int {
        restoreSavedDNS()
        let touched = machine.networkChanged(policy, now: now)
        if policy != .ignore {
            ranking.networkChanged()
            // Marked or dropped entries are asked again at their next use, which must reach the daemon.
            hostsMap?.flush()
        }
        performActions()
        return touched
    }

    /// Resolves the `Prefetch=` hosts now and before each answer expires.
    func startPrefetch() {
        machine.startPrefetch(now: now)
        performActions()
    }

    /// Starts the service address lists: from the answers saved in the state directory (a file
    /// that cannot be read or is not this daemon's is ignored, with a warning), then the
    /// schedulers as they are due.
    func startServiceAddresses() {
        var saved: [PersistedServiceAddresses] = []
        if let path = serviceAddressFile, Files.exists(path) {
            do {
                let bytes = try Files.read(path, limit: ServiceAddressFile.maxBytes)
                if let lists = ServiceAddressFile.decode(bytes) {
                    saved = lists
                } else {
                    logger.warning("Ignoring \(path): it is not a list of service addresses this daemon wrote")
                }
            } catch {
                logger.warning("Ignoring \(path): \(error)")
            }
        }
        machine.serviceAddresses.start(persisted: saved, now: now, wallNow: loop.clock.wallSeconds())
        performActions()
    }

    private var serviceAddressFile: String? { stateDirectory.map { $0 + "/" + ServiceAddressFile.name } }

    /// Whether `uid` may see and steer what every user shares (the cache, the counters).
    static func isPrivileged(_ uid: UInt32) -> Bool { uid == 0 || uid == ProcessEnvironment.effectiveUserID }

    /// `showCache`: every entry for root and the daemon's user; for others the entries of the
    /// names they were handed addresses for (what another user asks is not theirs to see).
    func showCache(uid: UInt32) -> ShowCacheResult {
        restoreSavedDNS()
        let now = self.now
        let entries: [DNSCacheEntry]
        if Self.isPrivileged(uid) {
            entries = machine.cache.entries(now: now)
        } else {
            let names = machine.owners.hostNames(uid: uid, now: now)
            entries = machine.cache.entries(now: now) { names.contains($0) }
        }
        return ShowCacheResult(
            entries: entries.map { entry in
                let left = entry.expiresAt.nanoseconds(since: now)
                return ShowCacheResult.Entry(
                    host: entry.host, family: entry.family.rawValue, addresses: entry.addresses,
                    ttl: left > 0 ? Int((left + 999_999_999) / 1_000_000_000) : 0, stale: left <= 0,
                    upstream: entry.upstream)
            })
    }

    /// The cache, with the saved entries back (its counters: `statistics`, `metrics`).
    var cache: DNSCache {
        restoreSavedDNS()
        return machine.cache
    }

    /// The configured upstreams' names, in order.
    var upstreamNames: [String] { machine.upstreamStatus.map(\.name) }

    // MARK: status

    /// The cache's counters, for `status`.
    var cacheStatus: StatusResult.Cache {
        restoreSavedDNS()
        let cache = machine.cache
        return .init(entries: cache.entryCount, hits: cache.hits, misses: cache.misses, staleServed: cache.staleServed)
    }

    /// Names in the cache, without waiting for the saved ones (for the status line).
    var cachedNameCount: Int { machine.cache.entryCount }

    /// Each upstream's status, with its service addresses where it has several.
    var upstreamStatus: [UpstreamStatus] {
        var statuses = machine.upstreamStatus
        let now = self.now
        for index in statuses.indices where index < machine.settings.upstreams.count {
            statuses[index].serviceAddresses = machine.serviceAddresses.status(
                for: machine.settings.upstreams[index], now: now)
        }
        return statuses
    }

    /// No upstream query is queued or running.
    var isQuiescent: Bool { machine.isQuiescent }

    func shutdown() {
        transport.shutdown()
        ranking.shutdown()
    }

    /// A reloaded configuration's `[Resolver]` section (`ResolverMachine.apply` says what changes
    /// and what stays); the transport signs and trusts with its settings from now on.
    func apply(_ configuration: DaemonConfiguration) {
        // Any answer may change (routes, Static=, TTL bounds, upstreams): the module asks again.
        hostsMap?.flush()
        machine.apply(
            ResolverSettings(
                configuration.resolver, workers: Self.workerThreads, workersPerOwner: Self.workersPerOwner,
                daemonUID: machine.settings.daemonUID))
        machine.serviceAddresses.apply(
            machine.settings.serviceAddresses, upstreams: machine.settings.upstreams, now: now,
            wallNow: loop.clock.wallSeconds())
        transport.apply(UpstreamSettings(configuration.resolver))
        ranking.apply(ports: configuration.resolver.rankPorts)
        performActions()
    }

    // MARK: the hosts map

    /// Gives the NSS module's answer its uid's key, and queues it to be published
    /// (`publishPrepared`): a fresh answer from the cache, an upstream (the system one too) or the
    /// fleet, or a no-data error. Never a stale answer, a literal, a `Static=` answer, a name that
    /// does not exist or a not-routed refusal. Touches nothing of the machine's (it may be running).
    private func prepare(_ outcome: inout Result<ResolveResult, RPCError>, _ request: MapRequest) {
        guard let hostsMap else { return }
        switch outcome {
        case .success(var result):
            result.hostsMapKey = hostsMap.userKey(uid: request.uid)
            outcome = .success(result)
            // Answers the cache holds (a literal or a Static= answer is none).
            let cached =
                result.source == .cache || result.source == .upstream || result.source == .system
                || result.source == .fleet
            guard result.host == request.host, !result.stale, cached else { return }
            publications.append(Publication(request: request, answered: result))
        case .failure(let error):
            guard error.code == .hostNotFound,
                error.data["reason"]?.stringValue == RPCError.NotFoundReason.noData.rawValue
            else { return }
            publications.append(Publication(request: request, answered: nil))
        }
    }

    /// Publishes each queued answer's families whose cache entry is fresh, not marked for refresh
    /// and what the answer said (its addresses in the answer's order, or NO_DATA), until the
    /// entry's expiry.
    private func publishPrepared(in cache: DNSCache) {
        let queued = publications
        publications.removeAll()
        guard let hostsMap else { return }
        let now = self.now
        for publication in queued {
            let host = publication.request.host
            let family = publication.request.family
            let families: [IPFamily] = family == .ipv4 ? [.ipv4] : family == .ipv6 ? [.ipv6] : [.ipv4, .ipv6]
            guard !cache.needsRefresh(host: host, families: families) else { continue }
            for part in families {
                guard let entry = cache.peek(host: host, family: part), entry.expiresAt > now, !entry.noSuchName else {
                    continue
                }
                let addresses = publication.answered.map { part == .ipv4 ? $0.ipv4 : $0.ipv6 } ?? []
                guard entry.negative ? addresses.isEmpty : Set(addresses) == Set(entry.addresses) else { continue }
                hostsMap.publish(
                    host: host, family: part, uid: publication.request.uid, addresses: addresses,
                    expiresAt: entry.expiresAt)
            }
        }
    }

    // MARK: carrying actions out

    /// Does what the machine asked for; what that feeds back in (a transport or fleet that
    /// answers at once) is done in the same loop, in order.
    private func performActions() {
        guard !performing else { return }
        performing = true
        defer { performing = false }
        while machine.hasActions || machine.serviceAddresses.hasActions {
            for action in machine.takeActions() { perform(action) }
            for action in machine.serviceAddresses.takeActions() { perform(action) }
        }
    }

    private func perform(_ action: ServiceAddressAction) {
        switch action {
        case .fetch(let request):
            transport.send(request) { [unowned self] result in
                self.machine.serviceAddresses.fetchFinished(
                    request.id, result, now: self.now, wallNow: self.loop.clock.wallSeconds())
                self.performActions()
            }
        case .persist(let lists):
            guard let path = serviceAddressFile else { return }
            do {
                try Files.replaceAtomically(path, with: ServiceAddressFile.encode(lists))
            } catch {
                logger.warning("Failed to save the service addresses to \(path): \(error)", cause: "service addresses")
            }
        case .armTimer(let key, let at):
            if let old = serviceAddressTimers[key] { loop.cancel(old) }
            let milliseconds = max(0, (at.nanoseconds(since: now) + 999_999) / 1_000_000)
            serviceAddressTimers[key] = loop.schedule(afterMilliseconds: milliseconds) { [unowned self] in
                self.serviceAddressTimers[key] = nil
                self.machine.serviceAddresses.timerFired(key: key, now: self.now)
                self.performActions()
            }
        case .log(.info, let line):
            logger.info(line)
        case .log(.warning, let line):
            logger.warning(line)
        }
    }

    private func perform(_ action: ResolverAction) {
        switch action {
        case .answer(let caller, var outcome):
            let pending = waiting.removeValue(forKey: caller)
            switch pending {
            case .rpc(_, let uid)?, .closure(_, let uid)?: ranking.rank(&outcome, uid: uid)
            case nil: break
            }
            if let watch = watched.removeValue(forKey: caller) {
                observation?.resolved(uid: watch.uid, host: watch.host, family: watch.family, outcome)
            }
            if let request = publishing.removeValue(forKey: caller) {
                prepare(&outcome, request)
                publishPrepared(in: machine.cache)
            }
            switch pending {
            case .rpc(let reply, _)?: reply(outcome)
            case .closure(let completion, _)?: completion(outcome)
            case nil: break
            }
        case .query(let request):
            let started = now
            transport.send(request) { [unowned self] result in
                self.observation?.upstreamQueried(
                    request.endpoint.name, failed: (try? result.get()) == nil,
                    latencyMs: Int(self.now.nanoseconds(since: started) / 1_000_000))
                self.machine.attemptFinished(request.id, result, now: self.now)
                self.performActions()
            }
        case .queryBatch(let request):
            let started = now
            transport.send(request) { [unowned self] result in
                self.observation?.upstreamQueried(
                    request.endpoint.name, failed: (try? result.get()) == nil,
                    latencyMs: Int(self.now.nanoseconds(since: started) / 1_000_000))
                self.machine.batchFinished(request.id, result, now: self.now)
                self.performActions()
            }
        case .armTimer(let timer, let at):
            if let old = timers[timer] { loop.cancel(old) }
            let milliseconds = max(0, (at.nanoseconds(since: now) + 999_999) / 1_000_000)
            timers[timer] = loop.schedule(afterMilliseconds: milliseconds) { [unowned self] in
                self.timers[timer] = nil
                self.machine.timerFired(timer, now: self.now)
                self.performActions()
            }
        case .cancelTimer(let timer):
            if let id = timers.removeValue(forKey: timer) { loop.cancel(id) }
        case .askFleet(let flight, let host, let families, let timeoutMs):
            guard let fleet else {
                machine.fleetDeferredToUpstreams(flight: flight, now: now)
                return
            }
            fleet.resolve(
                host: host, families: families, timeoutMs: timeoutMs,
                answer: { [unowned self] hits in
                    self.machine.fleetAnswered(flight: flight, hits, now: self.now)
                    self.performActions()
                },
                queryUpstream: { [unowned self] report in
                    self.fleetReports[flight] = report
                    self.machine.fleetDeferredToUpstreams(flight: flight, now: self.now)
                    self.performActions()
                })
        case .reportToFleet(let flight, let answered):
            guard let report = fleetReports.removeValue(forKey: flight) else { return }
            guard let answered else {
                report.failed()
                return
            }
            let now = self.now
            let nowUnixMs = loop.clock.wallMilliseconds()
            report.answered(answered.compactMap { FleetCacheRecord(entry: $0, now: now, nowUnixMs: nowUnixMs) })
        case .log(.info, let line):
            logger.info(line)
        case .log(.warning, let line):
            logger.warning(line)
        }
    }
}

@available(*, unavailable)
extension ResolverService: Sendable {}
