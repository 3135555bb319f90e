import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// The DNS half: one cache for every process on the machine, fed by the configured upstreams.
///
/// Runs on the loop thread; upstream queries run on worker threads. Concurrent resolves of one
/// name share one upstream query (a "flight"), so no thundering herd reaches the upstreams.
final class ResolverService {
    /// Worker threads for upstream queries: a hung upstream holds one, coalescing bounds the rest.
    static let workerThreads = 16
    /// Prefetched hosts are refreshed at this fraction of their TTL (Tencent's keep-alive uses 75 %).
    static let prefetchRefreshFraction = 0.75

    let cache: DNSCache
    let owners: AddressOwnerMemory
    private let configuration: DaemonConfiguration.Resolver
    private let endpoints: [UpstreamEndpoint]
    private var healths: [UpstreamHealth]
    private let settings: UpstreamSettings
    private let statics: [String: (ipv4: [String], ipv6: [String])]
    private let rules: any DomainRules
    private let loop: EventLoop
    private let logger: Logger
    private let pool: WorkerPool<UpstreamWorker>
    private var flights: [FlightKey: Flight] = [:]

    private struct FlightKey: Hashable {
        var host: String
        var family: ResolveFamily
    }

    /// One upstream query and everyone waiting for it.
    private final class Flight {
        var waiters: [(Result<Void, RPCError>) -> Void] = []
    }

    init(configuration: DaemonConfiguration, rules: any DomainRules, loop: EventLoop, logger: Logger) {
        self.configuration = configuration.resolver
        endpoints = configuration.resolver.upstreams
        healths = Array(repeating: UpstreamHealth(), count: endpoints.count)
        settings = UpstreamSettings(
            secretKey: configuration.resolver.secretKey?.revealed, caFile: configuration.resolver.caFile,
            tlsName: configuration.resolver.tlsName, dohPost: configuration.resolver.dohPost)
        var statics: [String: (ipv4: [String], ipv6: [String])] = [:]
        for answer in configuration.resolver.staticAnswers {
            let host = rules.canonicalHost(answer.host) ?? answer.host
            var entry = statics[host] ?? ([], [])
            for address in answer.addresses.compactMap({ IPAddress($0) }) {
                if address.family == .v4 {
                    entry.ipv4.append(address.description)
                } else {
                    entry.ipv6.append(address.description)
                }
            }
            statics[host] = entry
        }
        self.statics = statics
        self.rules = rules
        self.loop = loop
        self.logger = logger
        owners = AddressOwnerMemory()
        cache = DNSCache(limits: DNSCacheLimits(configuration.resolver), owners: owners)
        pool = WorkerPool(threads: Self.workerThreads) { UpstreamWorker() }
    }

    /// No upstream query is running.
    var isQuiescent: Bool { flights.isEmpty }

    func shutdown() { pool.shutdown() }

    func ownerOfAddress(_ ip: String) -> String? {
        owners.owner(of: ip, now: Self.now())
    }

    func registerMethods(on server: RPCServer) {
        server.register(.resolve) { [unowned self] params, _, done throws(RPCError) in
            try self.resolve(ResolveParams(params)) { done(MethodOutcome($0.map(\.json))) }
        }
        server.register(.reverse) { [unowned self] params, context, done throws(RPCError) in
            done(.result(try self.reverse(ReverseParams(params), uid: context.peer.uid).json))
        }
        server.register(.flushCache) { [unowned self] params, context, done throws(RPCError) in
            // The cache is shared by every user: only root and the daemon's own user may empty it.
            let uid = context.peer.uid
            guard uid == 0 || uid == ProcessEnvironment.effectiveUserID else {
                throw .permissionDenied("only root or the daemon's user may flush the shared cache")
            }
            let host = try params.optionalString("host").map { (h) throws(RPCError) in try self.canonicalName(h) }
            done(.result(.object(["flushed": .int(self.cache.flush(host: host))])))
        }
    }

    // MARK: resolve

    func resolve(_ params: ResolveParams, done: @escaping (Result<ResolveResult, RPCError>) -> Void) throws(RPCError) {
        if let literal = IPLiteral.address(params.host) {
            done(.success(literalResult(params.host, literal)))
            return
        }
        let host = try canonicalName(params.host)
        if let fixed = statics[host] {
            done(.success(staticResult(host, fixed, family: params.family)))
            return
        }
        let family = Self.resolveFamily(params.family)
        let allowStale = params.allowStale && configuration.serveStale
        switch answerFromCache(host, family: family, allowStale: allowStale) {
        case .answer(let result):
            rememberOwner(of: result)
            done(.success(result))
        case .notFound:
            done(.failure(.hostNotFound(host)))
        case .stale(let result):
            cache.noteStaleServed()
            rememberOwner(of: result)
            done(.success(result))
            startFlight(host: host, family: family, timeoutMs: configuration.timeoutMs) { _ in }
        case .missing:
            let timeoutMs = params.timeoutMs ?? configuration.timeoutMs
            var answered = false
            let timer = loop.schedule(afterMilliseconds: Int64(timeoutMs)) { [unowned self] in
                guard !answered else { return }
                answered = true
                done(
                    self.fallback(
                        host, family: family, allowStale: allowStale, reason: "timed out after \(timeoutMs) ms"))
            }
            startFlight(host: host, family: family, timeoutMs: timeoutMs) { [unowned self] outcome in
                guard !answered else { return }
                answered = true
                self.loop.cancel(timer)
                switch outcome {
                case .success:
                    switch self.answerFromCache(host, family: family, allowStale: false, source: .upstream) {
                    case .answer(let result): done(.success(result))
                    case .notFound: done(.failure(.hostNotFound(host)))
                    case .stale, .missing:
                        // The answer was not cacheable (TTL 0): nothing more to say than "no address now".
                        done(self.fallback(host, family: family, allowStale: allowStale, reason: "uncacheable answer"))
                    }
                case .failure(let error):
                    let reason = error.data["reason"]?.stringValue ?? error.message
                    done(self.fallback(host, family: family, allowStale: allowStale, reason: reason))
                }
            }
        }
    }

    /// Cookie normalization keys an IP by the name this daemon most recently handed it out for,
    /// whether that answer came from upstream or from the cache.
    private func rememberOwner(of result: ResolveResult) {
        owners.record(host: result.host, addresses: result.ipv4 + result.ipv6, ttl: result.ttl, now: Self.now())
    }

    private enum CacheAnswer {
        case answer(ResolveResult)
        case notFound
        case stale(ResolveResult)
        case missing
    }

    /// Assembles an answer for every wanted family from the cache, or says what is missing.
    private func answerFromCache(
        _ host: String, family: ResolveFamily, allowStale: Bool, source: ResolveResult.Source = .cache
    ) -> CacheAnswer {
        let now = Self.now()
        var result = ResolveResult(host: host, ipv4: [], ipv6: [], ttl: Int.max, stale: false, source: source)
        var anyStale = false
        var allNegative = true
        for dnsFamily in Self.families(family) {
            switch cache.lookup(host: host, family: dnsFamily, now: now, allowStale: allowStale) {
            case .miss:
                return .missing
            case .fresh(let entry, let ttlLeft):
                result.ttl = min(result.ttl, ttlLeft)
                add(entry, to: &result)
                if !entry.negative { allNegative = false }
            case .stale(let entry):
                anyStale = true
                add(entry, to: &result)
                allNegative = false
            }
        }
        if allNegative { return .notFound }
        if anyStale {
            result.ttl = 0
            result.stale = true
            result.source = .cache
            return .stale(result)
        }
        return .answer(result)
    }

    private func add(_ entry: DNSCacheEntry, to result: inout ResolveResult) {
        if entry.family == .ipv4 { result.ipv4 = entry.addresses } else { result.ipv6 = entry.addresses }
        if let upstream = entry.upstream {
            result.upstream = upstream
            let kind =
                endpoints.first(where: { $0.name == upstream })?.kind ?? UpstreamEndpoint.Kind(rawValue: upstream)
            if result.source == .upstream, kind == .system { result.source = .system }
        }
    }

    /// After a failure or timeout: a stale answer when allowed (RFC 8767), else -32002.
    private func fallback(
        _ host: String, family: ResolveFamily, allowStale: Bool, reason: String
    ) -> Result<ResolveResult, RPCError> {
        if allowStale, case .stale(let result) = answerFromCache(host, family: family, allowStale: true) {
            cache.noteStaleServed()
            rememberOwner(of: result)
            return .success(result)
        }
        return .failure(.resolutionUnavailable(host, reason: reason))
    }

    // MARK: reverse

    /// The host names `address` was handed out for. The memory keeps one owner per address until
    /// it becomes per uid; `uid` is where that will be read.
    func reverse(_ params: ReverseParams, uid: UInt32) throws(RPCError) -> ReverseResult {
        guard let address = IPAddress(params.address) else {
            throw .invalidParams(field: "address", "\"\(params.address)\" is not an IPv4 or IPv6 literal")
        }
        let canonical = address.description
        guard let host = owners.owner(of: canonical, now: Self.now()) else { throw .addressNotFound(canonical) }
        return ReverseResult(address: canonical, hosts: [host], ttl: 0)
    }

    // MARK: flights

    /// Joins the running query for this name and family, or starts one.
    private func startFlight(
        host: String, family: ResolveFamily, timeoutMs: Int, completion: @escaping (Result<Void, RPCError>) -> Void
    ) {
        let key = FlightKey(host: host, family: family)
        if let flight = flights[key] {
            flight.waiters.append(completion)
            return
        }
        let flight = Flight()
        flight.waiters.append(completion)
        flights[key] = flight

        let now = Self.now()
        let candidates: [(index: Int, endpoint: UpstreamEndpoint)]
        if Self.isLocalhost(host) {
            // RFC 6761: localhost names never leave the machine.
            candidates = [(-1, .system)]
        } else {
            candidates = UpstreamHealth.tryOrder(healths, now: now).map { ($0, endpoints[$0]) }
        }
        let query = UpstreamQuery(
            host: host, family: family, candidates: candidates,
            deadlineNanoseconds: MonotonicClock.nowNanoseconds() + Int64(timeoutMs) * 1_000_000, settings: settings)
        let token = loop.expectCompletion([UpstreamAttempt].self) { [unowned self] attempts in
            self.finishFlight(key, attempts: attempts)
        }
        let poster = loop.poster
        pool.submit { worker in poster.post(token: token, value: worker.run(query)) }
    }

    private func finishFlight(_ key: FlightKey, attempts: [UpstreamAttempt]) {
        let now = Self.now()
        var outcome: Result<Void, RPCError> = .failure(
            .resolutionUnavailable(key.host, reason: "no upstream could be tried within the timeout"))
        for attempt in attempts {
            let name = attempt.index >= 0 ? endpoints[attempt.index].name : UpstreamEndpoint.system.name
            switch attempt.result {
            case .success(let answer):
                if attempt.index >= 0 { healths[attempt.index].recordSuccess(latencyMs: attempt.latencyMs, now: now) }
                store(answer, for: key, upstream: name, now: now)
                outcome = .success(())
            case .failure(let error):
                if attempt.index >= 0 { healths[attempt.index].recordFailure(error.description, now: now) }
                logger.warning("Upstream \(name) failed for \(key.host): \(error)")
                outcome = .failure(.resolutionUnavailable(key.host, reason: "\(name): \(error)"))
            }
        }
        guard let flight = flights.removeValue(forKey: key) else { return }
        for waiter in flight.waiters { waiter(outcome) }
    }

    private func store(_ answer: UpstreamAnswer, for key: FlightKey, upstream: String, now: MonotonicInstant) {
        for family in Self.families(key.family) {
            if !answer.nameExists {
                cache.insertNegative(host: key.host, family: family, upstream: upstream, now: now)
                continue
            }
            let addresses = (family == .ipv4 ? answer.ipv4 : answer.ipv6).map(\.description)
            cache.insert(
                host: key.host, family: family, addresses: addresses, ttl: answer.ttl, upstream: upstream, now: now)
        }
    }

    // MARK: prefetch

    /// Resolves the `Prefetch=` hosts now and again before each answer expires, through Alibaba's
    /// batch endpoint (5 names a request) when the preferred upstream is Alibaba.
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
            for group in AlibabaV1.batches(hosts) { prefetchBatch(group, upstream: index) }
        } else {
            for host in hosts { prefetch(host) }
        }
    }

    private func prefetch(_ host: String) {
        startFlight(host: host, family: .both, timeoutMs: configuration.timeoutMs) { [unowned self] _ in
            self.scheduleRefresh(after: self.secondsToExpiry(of: [host])) { [unowned self] in self.prefetch(host) }
        }
    }

    private func prefetchBatch(_ hosts: [String], upstream index: Int) {
        let endpoint = endpoints[index]
        let settings = self.settings
        let timeoutMs = configuration.timeoutMs
        let token = loop.expectCompletion(Result<[String: UpstreamAnswer], UpstreamError>.self) {
            [unowned self] result in
            let now = Self.now()
            var missing = hosts
            switch result {
            case .success(let answers):
                self.healths[index].recordSuccess(latencyMs: 0, now: now)
                for (host, answer) in answers where hosts.contains(host) {
                    self.store(answer, for: FlightKey(host: host, family: .both), upstream: endpoint.name, now: now)
                }
                missing = hosts.filter { answers[$0] == nil }
            case .failure(let error):
                self.healths[index].recordFailure(error.description, now: now)
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
                    self.prefetchBatch(group, upstream: index)
                }
            }
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
            Self.families(.both).compactMap { self.cache.peek(host: host, family: $0) }
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
        guard !raw.isEmpty else { throw .invalidParams(field: "host", "must not be empty") }
        guard let ascii = rules.canonicalHost(raw) else {
            throw .invalidParams(field: "host", "\"\(raw)\" is not a valid host name")
        }
        switch HostName.validate(ascii) {
        case .success(let name): return name
        case .failure(let error): throw .invalidParams(field: "host", "\"\(raw)\": \(error)")
        }
    }

    private func literalResult(_ host: String, _ address: IPAddress) -> ResolveResult {
        ResolveResult(
            host: host, ipv4: address.family == .v4 ? [address.description] : [],
            ipv6: address.family == .v6 ? [address.description] : [], ttl: configuration.maxTTLMs / 1000,
            stale: false, source: .literal)
    }

    private func staticResult(
        _ host: String, _ fixed: (ipv4: [String], ipv6: [String]), family: AddressFamily
    ) -> ResolveResult {
        let result = ResolveResult(
            host: host, ipv4: family == .ipv6 ? [] : fixed.ipv4, ipv6: family == .ipv4 ? [] : fixed.ipv6,
            ttl: configuration.maxTTLMs / 1000, stale: false, source: .static)
        owners.record(host: host, addresses: result.ipv4 + result.ipv6, ttl: result.ttl, now: Self.now())
        return result
    }

    static func isLocalhost(_ host: String) -> Bool { host == "localhost" || host.hasSuffix(".localhost") }

    static func resolveFamily(_ family: AddressFamily) -> ResolveFamily {
        switch family {
        case .ipv4: return .ipv4
        case .ipv6: return .ipv6
        case .both: return .both
        }
    }

    static func families(_ family: ResolveFamily) -> [DNSFamily] {
        switch family {
        case .ipv4: return [.ipv4]
        case .ipv6: return [.ipv6]
        case .both: return [.ipv4, .ipv6]
        }
    }

    static func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: MonotonicClock.nowNanoseconds()) }
}

@available(*, unavailable)
extension ResolverService: Sendable {}
