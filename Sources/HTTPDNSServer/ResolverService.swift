import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSSystem

/// The DNS half: one cache for every process on the machine, fed by the configured upstreams, and
/// per uid the memory of which host names each address was handed out for.
///
/// Runs on the loop thread; upstream queries run on worker threads. Concurrent resolves of one
/// name share one upstream query (a "flight"), whose typed outcome goes to every caller waiting
/// for it; the cache only keeps a copy for later. Flights are capped per uid and in total and
/// start in turn per owner (`FlightQueue`), so one user's slow names cannot hold every worker.
final class ResolverService {
    /// Worker threads for upstream queries: a hung upstream holds one until `Timeout=` ends.
    static let workerThreads = 16
    /// Workers one owner's flights may hold at once: a quarter, so a uid whose names all hang
    /// leaves twelve to everyone else.
    static let workersPerOwner = 4
    /// Prefetched hosts are refreshed at this fraction of their TTL (Tencent's keep-alive uses 75 %).
    static let prefetchRefreshFraction = 0.75

    /// The cache and the IP-to-host memory; either access first puts the saved ones back if that
    /// is still to do.
    var cache: DNSCache {
        finishRestore()
        return liveCache
    }
    var owners: AddressOwnerMemory {
        finishRestore()
        return liveOwners
    }
    private let liveCache: DNSCache
    private let liveOwners: AddressOwnerMemory
    /// The saved cache, until it is restored (`SavedDNSRestore`).
    private var savedDNS: SavedDNSRestore?
    private var configuration: DaemonConfiguration.Resolver
    private var limits: DNSCacheLimits
    private var endpoints: [UpstreamEndpoint]
    private var healths: [UpstreamHealth]
    private var settings: UpstreamSettings
    private var statics: [String: (ipv4: [String], ipv6: [String])]
    private let rules: any DomainRules
    private let loop: EventLoop
    private let logger: Logger
    private let pool: WorkerPool<UpstreamWorker>
    private var flights: [FlightKey: Flight] = [:]
    private var queue: FlightQueue<UInt64>
    /// What to run when the queue gives a flight (or a prefetch batch) its worker, by id.
    private var starts: [UInt64: () -> Void] = [:]
    private var lastID: UInt64 = 0
    /// With `ShareCache=yes`: asked before any upstream, and told what the upstreams answered.
    var fleet: FleetClient?

    private struct FlightKey: Hashable {
        var host: String
        var family: AddressFamily
    }

    /// What a flight brings back to everyone waiting for it.
    private enum FlightOutcome {
        case answered(UpstreamAnswer, upstream: String, source: ResolveResult.Source)
        /// Another machine's answer, through the fleet: every family the flight asked for.
        case fleet([FleetCacheHit])
        case failed(ResolutionFailure)
        /// Every caller had stopped waiting before an upstream could answer.
        case abandoned
    }

    /// One caller waiting for a flight, until its own deadline (monotonic nanoseconds).
    private struct Waiter {
        let id: UInt64
        let deadline: Int64
        let deliver: (FlightOutcome) -> Void
    }

    /// One upstream query and everyone waiting for it.
    private final class Flight {
        let id: UInt64
        let key: FlightKey
        var waiters: [Waiter] = []
        /// A stale refresh or a prefetch: it runs its whole budget for the cache, waited for or not.
        var background: Bool
        /// When its callers stop waiting; set once it runs.
        var deadline: FlightDeadline?
        var budgetEnd: Int64 = 0
        /// Through the fleet: the flight holds (or gave up waiting for) the name's fleet lock and
        /// reports its upstream answer here.
        var fleetReport: FleetUpstreamReport?
        /// The upstreams it asked, by their index when it started (a reload may change the list).
        var candidates: [(index: Int, endpoint: UpstreamEndpoint)] = []

        init(id: UInt64, key: FlightKey, background: Bool) {
            self.id = id
            self.key = key
            self.background = background
        }
    }

    init(configuration: DaemonConfiguration, rules: any DomainRules, loop: EventLoop, logger: Logger) {
        self.configuration = configuration.resolver
        endpoints = configuration.resolver.upstreams
        healths = Array(repeating: UpstreamHealth(), count: endpoints.count)
        settings = UpstreamSettings(configuration.resolver)
        statics = Self.staticTable(configuration.resolver.staticAnswers, rules: rules)
        self.rules = rules
        self.loop = loop
        self.logger = logger
        liveOwners = AddressOwnerMemory()
        limits = DNSCacheLimits(configuration.resolver)
        liveCache = DNSCache(limits: limits)
        queue = FlightQueue(limits: Self.flightLimits(configuration.resolver))
        pool = WorkerPool(threads: Self.workerThreads, named: "upstream") { UpstreamWorker() }
    }

    /// `Static=` answers by canonical host name.
    private static func staticTable(
        _ answers: [StaticAnswer], rules: any DomainRules
    ) -> [String: (ipv4: [String], ipv6: [String])] {
        var statics: [String: (ipv4: [String], ipv6: [String])] = [:]
        for answer in answers {
            let host = rules.canonicalHost(answer.host) ?? answer.host
            var entry = statics[host] ?? ([], [])
            for address in answer.addresses.compactMap({ IPAddress($0) }) {
                if address.family == .ipv4 {
                    entry.ipv4.append(address.description)
                } else {
                    entry.ipv6.append(address.description)
                }
            }
            statics[host] = entry
        }
        return statics
    }

    /// A reloaded configuration's `[Resolver]`: the upstreams (one still listed keeps its
    /// health), `Static=` (answered from its table, so a changed name's answer is the new one at
    /// once), `Timeout=` and the upstream settings for queries started from now on, the cache
    /// policy for answers inserted from now on, and the query caps. The cache, every uid's
    /// address memory and the running flights stay; `Prefetch=` waits for a restart.
    func apply(_ configuration: DaemonConfiguration) {
        let resolver = configuration.resolver
        healths = resolver.upstreams.map { endpoint in
            endpoints.firstIndex(of: endpoint).map { healths[$0] } ?? UpstreamHealth()
        }
        endpoints = resolver.upstreams
        settings = UpstreamSettings(resolver)
        statics = Self.staticTable(resolver.staticAnswers, rules: rules)
        limits = DNSCacheLimits(resolver)
        liveCache.limits = limits
        queue.limits = Self.flightLimits(resolver)
        self.configuration = resolver
    }

    private static func flightLimits(_ resolver: DaemonConfiguration.Resolver) -> FlightLimits {
        FlightLimits(
            maxTotal: resolver.maxUpstreamQueries, maxPerUser: resolver.maxUpstreamQueriesPerUser,
            workers: workerThreads, workersPerOwner: workersPerOwner)
    }

    /// Restores what `storeThread` reads of the saved cache, step by step once it is read, and
    /// at once when first needed.
    func restoreSaved(from storeThread: StoreThread) {
        savedDNS = SavedDNSRestore(storeThread: storeThread, into: liveCache, liveOwners, loop: loop, logger: logger)
    }

    private func finishRestore() {
        guard let saved = savedDNS else { return }
        saved.finish()
        savedDNS = nil
    }

    /// Names in the cache, without waiting for the saved ones (for the status line).
    var cachedNameCount: Int { liveCache.entryCount }

    /// No upstream query is queued or running.
    var isQuiescent: Bool { queue.count == 0 }

    func shutdown() { pool.shutdown() }

    /// `uid`'s host names for the address `ip`, most recent first: what cookie normalization reads.
    func hostNames(of ip: String, uid: UInt32) -> [String] {
        guard let address = IPAddress(ip) else { return [] }
        return owners.normalizationCandidates(uid: uid, of: address, now: Self.now())
    }

    /// `flushCache`: the cache is shared by every user, so only root and the daemon's own user
    /// may empty it.
    func flushCache(_ params: FlushCacheParams, uid: UInt32) throws(RPCError) -> FlushCacheResult {
        guard uid == 0 || uid == ProcessEnvironment.effectiveUserID else {
            throw .permissionDenied("only root or the daemon's user may flush the shared cache")
        }
        let host = try params.host.map { (h) throws(RPCError) in try canonicalName(h) }
        return FlushCacheResult(flushed: cache.flush(host: host))
    }

    // MARK: resolve

    /// Answers from the cache, or from the flight this caller waits for, for at most its own
    /// `timeoutMs`. Every address handed out is remembered for `uid` only.
    func resolve(
        _ params: ResolveParams, uid: UInt32, done: Reply<ResolveResult>
    ) throws(RPCError) {
        if let literal = IPLiteral.address(params.host) {
            done(.success(literalResult(params.host, literal)))
            return
        }
        let host = try canonicalName(params.host)
        // Looking up an empty dictionary still hashes the key.
        if !statics.isEmpty, let fixed = statics[host] {
            let result = staticResult(host, fixed, family: params.family)
            remember(result, uid: uid)
            done(.success(result))
            return
        }
        let key = FlightKey(host: host, family: params.family)
        let allowStale = params.allowStale && configuration.serveStale
        switch cache.answer(host: host, families: params.family.families, now: Self.now(), allowStale: allowStale) {
        case .fresh(let entries, let ttlLeft):
            guard let result = Self.result(host, entries, ttl: ttlLeft, stale: false) else {
                done(.failure(.hostNotFound(host)))
                return
            }
            remember(result, uid: uid)
            done(.success(result))
        case .stale(let entries):
            // A stale answer always holds a positive entry: negative ones are never served stale.
            guard let result = Self.result(host, entries, ttl: 0, stale: true) else {
                done(.failure(.hostNotFound(host)))
                return
            }
            cache.noteStaleServed()
            remember(result, uid: uid)
            done(.success(result))
            // The refresh counts against the uid whose request found the answer stale; when that
            // uid is at its cap, the next request refreshes instead.
            try? join(key, owner: .user(uid), background: true, waiter: nil)
        case .miss:
            let timeoutMs = params.timeoutMs ?? configuration.timeoutMs
            try wait(for: key, uid: uid, timeoutMs: timeoutMs, allowStale: allowStale, done: done)
        }
    }

    /// Joins (or starts) the flight for `key` and answers from its outcome, or from the fallback
    /// once this caller's own `timeoutMs` is over, whichever comes first.
    private func wait(
        for key: FlightKey, uid: UInt32, timeoutMs: Int, allowStale: Bool,
        done: Reply<ResolveResult>
    ) throws(RPCError) {
        var answered = false
        var timer: EventLoop.TimerID?
        let id = makeID()
        let waiter = Waiter(
            id: id, deadline: MonotonicClock.nowNanoseconds() + Int64(timeoutMs) * 1_000_000
        ) { [unowned self] outcome in
            guard !answered else { return }
            answered = true
            if let timer { self.loop.cancel(timer) }
            done(self.reply(outcome, key, uid: uid, timeoutMs: timeoutMs, allowStale: allowStale))
        }
        try join(key, owner: .user(uid), background: false, waiter: waiter)
        timer = loop.schedule(afterMilliseconds: Int64(timeoutMs)) { [unowned self] in
            guard !answered else { return }
            answered = true
            self.leave(key, waiter: id)
            done(self.fallback(key, uid: uid, allowStale: allowStale, .timedOut(milliseconds: timeoutMs)))
        }
    }

    /// One caller's reply from its flight's outcome.
    private func reply(
        _ outcome: FlightOutcome, _ key: FlightKey, uid: UInt32, timeoutMs: Int, allowStale: Bool
    ) -> Result<ResolveResult, RPCError> {
        switch outcome {
        case .answered(let answer, let upstream, let source):
            var result = ResolveResult(
                host: key.host, ipv4: [], ipv6: [], ttl: limits.clamp(ttl: answer.ttl), stale: false, source: source,
                upstream: upstream)
            if key.family.includes(.ipv4) { result.ipv4 = answer.ipv4.map(\.description) }
            if key.family.includes(.ipv6) { result.ipv6 = answer.ipv6.map(\.description) }
            guard answer.nameExists, !(result.ipv4.isEmpty && result.ipv6.isEmpty) else {
                return .failure(.hostNotFound(key.host))
            }
            remember(result, uid: uid)
            return .success(result)
        case .fleet(let hits):
            // The publisher's expiry keeps counting down: the TTL is never extended here.
            var result = ResolveResult(
                host: key.host, ipv4: [], ipv6: [], ttl: min(hits.map(\.ttlSeconds).min() ?? 0, limits.maxTTL),
                stale: false, source: .fleet)
            for hit in hits where !hit.record.negative {
                if hit.record.family == .ipv4 {
                    result.ipv4 = hit.record.addresses
                } else {
                    result.ipv6 = hit.record.addresses
                }
            }
            guard !(result.ipv4.isEmpty && result.ipv6.isEmpty) else { return .failure(.hostNotFound(key.host)) }
            remember(result, uid: uid)
            return .success(result)
        case .failed(let failure):
            return fallback(key, uid: uid, allowStale: allowStale, failure)
        case .abandoned:
            return fallback(key, uid: uid, allowStale: allowStale, .timedOut(milliseconds: timeoutMs))
        }
    }

    /// After a failure or timeout: a stale answer when allowed (RFC 8767), else -32002 with the
    /// failure as its reason.
    private func fallback(
        _ key: FlightKey, uid: UInt32, allowStale: Bool, _ failure: ResolutionFailure
    ) -> Result<ResolveResult, RPCError> {
        if allowStale,
            case .stale(let entries) = cache.answer(
                host: key.host, families: key.family.families, now: Self.now(), allowStale: true, counted: false),
            let result = Self.result(key.host, entries, ttl: 0, stale: true)
        {
            cache.noteStaleServed()
            remember(result, uid: uid)
            return .success(result)
        }
        return .failure(.resolutionUnavailable(key.host, reason: failure.description))
    }

    /// Cookie normalization and `reverse` for `uid` learn the addresses this uid was handed out,
    /// from upstream, cache or `Static=` alike.
    private func remember(_ result: ResolveResult, uid: UInt32) {
        let now = Self.now()
        owners.record(uid: uid, host: result.host, addresses: result.ipv4, ttl: result.ttl, now: now)
        owners.record(uid: uid, host: result.host, addresses: result.ipv6, ttl: result.ttl, now: now)
    }

    /// A reply from cached entries; nil when every one is negative (no address).
    private static func result(_ host: String, _ entries: [DNSCacheEntry], ttl: Int, stale: Bool) -> ResolveResult? {
        var result = ResolveResult(host: host, ipv4: [], ipv6: [], ttl: ttl, stale: stale, source: .cache)
        var anyAddress = false
        for entry in entries where !entry.negative {
            anyAddress = true
            if entry.family == .ipv4 { result.ipv4 = entry.addresses } else { result.ipv6 = entry.addresses }
            if let upstream = entry.upstream { result.upstream = upstream }
        }
        return anyAddress ? result : nil
    }

    // MARK: reverse

    /// The host names `address` was handed out for to `uid`, most recent first.
    func reverse(_ params: ReverseParams, uid: UInt32) throws(RPCError) -> ReverseResult {
        guard let address = IPAddress(params.address) else {
            throw .invalidParams(field: "address", "\"\(params.address)\" is not an IPv4 or IPv6 literal")
        }
        let now = Self.now()
        let attributions = owners.attributions(uid: uid, of: address, now: now)
        guard let latest = attributions.first else { throw .addressNotFound(address.description) }
        return ReverseResult(
            address: address.description, hosts: attributions.map(\.host),
            ttl: Int(now.secondsRoundedUp(until: latest.answerExpiresAt)))
    }

    // MARK: flights

    /// Joins the flight for `key`, or starts one owned by `owner` (-32003 over its caps). A
    /// background join (stale refresh, prefetch) makes the flight run its whole budget.
    private func join(_ key: FlightKey, owner: FlightOwner, background: Bool, waiter: Waiter?) throws(RPCError) {
        if let flight = flights[key], !Self.isEnding(flight) {
            if let waiter { flight.waiters.append(waiter) }
            if background { flight.background = true }
            if let deadline = flight.deadline {
                // Running: a caller with more time keeps it going longer, never past its budget.
                deadline.extend(to: min(background ? flight.budgetEnd : waiter?.deadline ?? 0, flight.budgetEnd))
            } else {
                queue.sponsor(flight.id, by: owner)
                pump()
            }
            return
        }
        let id = makeID()
        switch queue.admit(id, owner: owner) {
        case .perUser(let limit)?: throw .limitExceeded("upstream queries of one user", limit: limit)
        case .total(let limit)?: throw .limitExceeded("upstream queries", limit: limit)
        case nil: break
        }
        let flight = Flight(id: id, key: key, background: background)
        if let waiter { flight.waiters.append(waiter) }
        flights[key] = flight
        starts[id] = { [unowned self] in self.launch(flight) }
        pump()
    }

    /// Whether a running flight's callers' deadline is over or within 2 ms of it. The worker gives
    /// an attempt up only once less than 1 ms is left, so a deadline moved later before this says
    /// true is always seen; a flight past it gets no new callers (they start another).
    private static func isEnding(_ flight: Flight) -> Bool {
        guard let deadline = flight.deadline else { return false }
        return deadline.value <= MonotonicClock.nowNanoseconds() + 2_000_000
    }

    /// A caller stopped waiting: a queued flight nobody waits for any more is dropped.
    private func leave(_ key: FlightKey, waiter id: UInt64) {
        guard let flight = flights[key] else { return }
        flight.waiters.removeAll { $0.id == id }
        guard flight.waiters.isEmpty, !flight.background, queue.isQueued(flight.id) else { return }
        queue.cancel(flight.id)
        starts[flight.id] = nil
        flights[key] = nil
    }

    /// Starts whatever the queue lets run on the free workers.
    private func pump() {
        while let id = queue.next() { starts.removeValue(forKey: id)?() }
    }

    private func makeID() -> UInt64 {
        lastID += 1
        return lastID
    }

    /// Gives a flight its worker: `Timeout=` from now, cut at its callers' longest deadline.
    private func launch(_ flight: Flight) {
        let now = MonotonicClock.nowNanoseconds()
        flight.budgetEnd = now + Int64(configuration.timeoutMs) * 1_000_000
        let waitEnd = flight.background ? flight.budgetEnd : flight.waiters.map(\.deadline).max() ?? now
        let deadline = FlightDeadline(nanoseconds: min(waitEnd, flight.budgetEnd))
        flight.deadline = deadline
        // localhost names never leave the machine, not even to the fleet.
        guard let fleet, !Self.isLocalhost(flight.key.host) else {
            query(flight)
            return
        }
        let timeoutMs = Int(max(1, (deadline.value - now) / 1_000_000))
        fleet.resolve(
            host: flight.key.host, families: flight.key.family.families, timeoutMs: timeoutMs,
            answer: { [unowned self] hits in self.finish(flight, fleetHits: hits) },
            queryUpstream: { [unowned self] report in
                flight.fleetReport = report
                self.query(flight)
            })
    }

    /// Queries the upstreams on a worker, within the flight's budget.
    private func query(_ flight: Flight) {
        let deadline = flight.deadline ?? FlightDeadline(nanoseconds: flight.budgetEnd)
        let candidates: [(index: Int, endpoint: UpstreamEndpoint)]
        if Self.isLocalhost(flight.key.host) {
            // RFC 6761: localhost names never leave the machine.
            candidates = [(-1, .system)]
        } else {
            candidates = UpstreamHealth.tryOrder(healths, now: Self.now()).map { ($0, endpoints[$0]) }
        }
        flight.candidates = candidates
        let query = UpstreamQuery(
            host: flight.key.host, family: flight.key.family, candidates: candidates,
            budgetEndNanoseconds: flight.budgetEnd, deadline: deadline, settings: settings)
        let token = loop.expectCompletion([UpstreamAttempt].self) { [unowned self] attempts in
            self.finish(flight, attempts: attempts)
        }
        let poster = loop.poster
        pool.submit { worker in poster.post(token: token, value: worker.run(query)) }
    }

    private func finish(_ flight: Flight, attempts: [UpstreamAttempt]) {
        queue.finish(flight.id)
        let key = flight.key
        let now = Self.now()
        var outcome = FlightOutcome.failed(.noUpstreamAsked)
        for attempt in attempts {
            let endpoint = flight.candidates.first { $0.index == attempt.index }?.endpoint ?? .system
            // The upstream's place in the list now: a reload may have moved or removed it.
            let health = attempt.index >= 0 ? endpoints.firstIndex(of: endpoint) : nil
            switch attempt.outcome {
            case .answered(let answer):
                if let health { healths[health].recordSuccess(latencyMs: attempt.latencyMs, now: now) }
                let parts = key.family.families.map { family in
                    (family, answer.nameExists ? answer.addresses(family).map(\.description) : [])
                }
                cache.insert(host: key.host, parts: parts, ttl: answer.ttl, upstream: endpoint.name, now: now)
                outcome = .answered(
                    answer, upstream: endpoint.name, source: endpoint.kind == .system ? .system : .upstream)
            case .failed(let error):
                if let health { healths[health].recordFailure(error.description, now: now) }
                logger.warning("Upstream \(endpoint.name) failed for \(key.host): \(error)")
                outcome = .failed(.upstreamFailed(upstream: endpoint.name, error))
            case .abandoned:
                outcome = .abandoned
            }
        }
        if let report = flight.fleetReport { reportToFleet(report, outcome, key: key, now: now) }
        if flights[key] === flight { flights[key] = nil }
        for waiter in flight.waiters { waiter.deliver(outcome) }
        pump()
    }

    /// A flight answered by the fleet: the answer is cached with the time it has left.
    private func finish(_ flight: Flight, fleetHits hits: [FleetCacheHit]) {
        queue.finish(flight.id)
        let now = Self.now()
        cache.insertShared(hits.map { $0.record.cacheEntry(now: now, millisecondsLeft: $0.millisecondsLeft) }, now: now)
        if flights[flight.key] === flight { flights[flight.key] = nil }
        for waiter in flight.waiters { waiter.deliver(.fleet(hits)) }
        pump()
    }

    /// Publishes what the upstreams answered (each family with the time its cache entry has
    /// left, so the fleet never extends a TTL), or releases the name's lock after a failure.
    /// Answers of the system resolver stay here: they reflect this machine's own configuration
    /// (`/etc/hosts`, its DNS servers), not the HTTPDNS service the fleet shares.
    private func reportToFleet(
        _ report: FleetUpstreamReport, _ outcome: FlightOutcome, key: FlightKey, now: MonotonicInstant
    ) {
        guard case .answered(_, _, let source) = outcome else {
            report.failed()
            return
        }
        guard source == .upstream else {
            report.answered([])
            return
        }
        let nowUnixMs = WallClock.nowMilliseconds()
        report.answered(
            key.family.families.compactMap { family in
                cache.peek(host: key.host, family: family).flatMap {
                    FleetCacheRecord(entry: $0, now: now, nowUnixMs: nowUnixMs)
                }
            })
    }

    // MARK: prefetch

    /// Resolves the `Prefetch=` hosts now and again before each answer expires, through Alibaba's
    /// batch endpoint (5 names a request) when the preferred upstream is Alibaba. Prefetched
    /// answers fill the cache only: no uid was handed them, so nobody's IP -> host memory learns
    /// from them.
    func startPrefetch() {
        var hosts: [String] = []
        for raw in configuration.prefetch {
            guard let host = try? canonicalName(raw) else {
                logger.warning("Prefetch=\(raw) is not a valid host name; skipped")
                continue
            }
            if !hosts.contains(host) { hosts.append(host) }
        }
        let preferred = UpstreamHealth.tryOrder(healths, now: Self.now()).first
        if let index = preferred, endpoints[index].kind == .alibaba {
            for group in AlibabaV1.batches(hosts) { prefetchBatch(group, upstream: endpoints[index]) }
        } else {
            for host in hosts { prefetch(host) }
        }
    }

    private func prefetch(_ host: String) {
        let waiter = Waiter(id: makeID(), deadline: .max) { [unowned self] _ in
            self.scheduleRefresh(after: self.secondsToExpiry(of: [host])) { [unowned self] in self.prefetch(host) }
        }
        // The daemon's own flights are never refused.
        try? join(FlightKey(host: host, family: .both), owner: .daemon, background: true, waiter: waiter)
    }

    private func prefetchBatch(_ hosts: [String], upstream endpoint: UpstreamEndpoint) {
        // An upstream a reload took off the list: the names go the normal way.
        guard endpoints.contains(endpoint) else {
            for host in hosts { prefetch(host) }
            return
        }
        let id = makeID()
        _ = queue.admit(id, owner: .daemon)
        starts[id] = { [unowned self] in self.launchBatch(id, hosts, upstream: endpoint) }
        pump()
    }

    private func launchBatch(_ id: UInt64, _ hosts: [String], upstream endpoint: UpstreamEndpoint) {
        let settings = self.settings
        let timeoutMs = configuration.timeoutMs
        let token = loop.expectCompletion(Result<[String: UpstreamAnswer], UpstreamError>.self) {
            [unowned self] result in
            self.queue.finish(id)
            let now = Self.now()
            var missing = hosts
            switch result {
            case .success(let answers):
                if let index = self.endpoints.firstIndex(of: endpoint) {
                    self.healths[index].recordSuccess(latencyMs: 0, now: now)
                }
                for (host, answer) in answers where hosts.contains(host) {
                    let parts = AddressFamily.both.families.map { family in
                        (family, answer.nameExists ? answer.addresses(family).map(\.description) : [])
                    }
                    self.cache.insert(host: host, parts: parts, ttl: answer.ttl, upstream: endpoint.name, now: now)
                }
                missing = hosts.filter { answers[$0] == nil }
            case .failure(let error):
                if let index = self.endpoints.firstIndex(of: endpoint) {
                    self.healths[index].recordFailure(error.description, now: now)
                }
                self.logger.warning("Prefetch through \(endpoint.name) failed: \(error)")
            }
            // Names the batch did not answer go through the normal path (with failover).
            for host in missing { self.prefetch(host) }
            // Each name is refreshed when its own answer nears expiry; names due together share a batch.
            var due: [Int: [String]] = [:]
            for host in hosts where !missing.contains(host) {
                due[Int(self.refreshDelay(after: self.secondsToExpiry(of: [host]))), default: []].append(host)
            }
            for (seconds, group) in due {
                self.loop.schedule(afterMilliseconds: Int64(seconds) * 1000) { [unowned self] in
                    self.prefetchBatch(group, upstream: endpoint)
                }
            }
            self.pump()
        }
        let poster = loop.poster
        pool.submit { worker in
            poster.post(
                token: token, value: worker.batch(hosts, via: endpoint, timeoutMs: timeoutMs, settings: settings))
        }
    }

    /// Seconds until the first of these names' cached answers expires (nil when none is cached).
    private func secondsToExpiry(of hosts: [String]) -> Double? {
        let now = Self.now()
        let remaining = hosts.flatMap { host in
            IPFamily.allCases.compactMap { self.cache.peek(host: host, family: $0) }
        }
        .filter { !$0.negative }.map { Double($0.expiresAt.nanoseconds(since: now)) / 1e9 }
        return remaining.min()
    }

    /// Refreshes before expiry; without an answer, retries after the negative TTL.
    private func scheduleRefresh(after seconds: Double?, _ refresh: @escaping () -> Void) {
        loop.schedule(afterMilliseconds: Int64(refreshDelay(after: seconds) * 1000), refresh)
    }

    private func refreshDelay(after seconds: Double?) -> Double {
        seconds.map { max(1, $0 * Self.prefetchRefreshFraction) } ?? Double(max(1, configuration.negativeTTLMs / 1000))
    }

    // MARK: status

    var upstreamStatus: [UpstreamStatus] {
        zip(endpoints, healths).map { endpoint, health in
            UpstreamStatus(
                name: endpoint.name, kind: endpoint.kind.rawValue, healthy: health.healthy, lastError: health.lastError,
                latencyMs: health.latencyMs.map(Double.init))
        }
    }

    // MARK: names

    /// IDNA to A-labels, lowercase, syntax-checked: the cache key of a name.
    func canonicalName(_ raw: String) throws(RPCError) -> String {
        // Already canonical (nearly every request): the checks below would return it unchanged.
        if HostNameSyntax.isCanonical(raw) { return raw }
        guard !raw.isEmpty else { throw .invalidParams(field: "host", "must not be empty") }
        guard let ascii = rules.canonicalHost(raw) else {
            throw .invalidParams(field: "host", "\"\(raw)\" is not a valid host name")
        }
        switch HostName.validate(ascii) {
        case .success(let name): return name
        case .failure(let error): throw .invalidParams(field: "host", "\"\(raw)\": \(error)")
        }
    }

    /// Literal and `Static=` answers never expire; they claim the longest TTL the cache would give.
    private func literalResult(_ host: String, _ address: IPAddress) -> ResolveResult {
        ResolveResult(
            host: host, ipv4: address.family == .ipv4 ? [address.description] : [],
            ipv6: address.family == .ipv6 ? [address.description] : [], ttl: limits.maxTTL, stale: false,
            source: .literal)
    }

    private func staticResult(
        _ host: String, _ fixed: (ipv4: [String], ipv6: [String]), family: AddressFamily
    ) -> ResolveResult {
        ResolveResult(
            host: host, ipv4: family.includes(.ipv4) ? fixed.ipv4 : [], ipv6: family.includes(.ipv6) ? fixed.ipv6 : [],
            ttl: limits.maxTTL, stale: false, source: .static)
    }

    static func isLocalhost(_ host: String) -> Bool { host == "localhost" || host.hasSuffix(".localhost") }

    static func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: MonotonicClock.nowNanoseconds()) }
}

@available(*, unavailable)
extension ResolverService: Sendable {}
