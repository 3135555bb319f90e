import HTTPDNSProtocol

/// The resolver's policy, without I/O: one cache for every process on the machine, fed by the
/// configured upstreams, and per uid the memory of which host names each address was handed out
/// for.
///
/// It takes events (a resolve, an upstream attempt's result, a timer, the fleet's answer) with
/// the time they happen at, and returns what to do as `ResolverAction`s, collected until the
/// driver takes them: the driver runs the exchanges, the timers and the replies, and reads no
/// policy of its own. Concurrent resolves of one name share one upstream query (a "flight"),
/// whose typed outcome goes to every caller waiting for it; the cache only keeps a copy for
/// later. Flights are capped per uid and in total and start in turn per owner (`FlightQueue`),
/// so one user's slow names cannot hold every worker. A flight asks the upstreams one at a time
/// in health order, each within its fair share of what is left of `Timeout=`; the callers'
/// own deadlines cut it short.
public struct ResolverMachine {
    /// The shared answer cache.
    public let cache: DNSCache
    /// Per uid, the host names each address was handed out for.
    public let owners: AddressOwnerMemory
    /// The settings in force (`apply` replaces them).
    public internal(set) var settings: ResolverSettings
    /// Whether a miss asks the fleet before the upstreams (`ShareCache=yes`).
    public var sharesCacheWithFleet = false
    /// The service addresses of upstreams that have several; the driver carries out its actions.
    public var serviceAddresses: ServiceAddressBook

    let rules: any DomainRules
    /// `Static=` answers by canonical name.
    var statics: [String: (ipv4: [String], ipv6: [String])]
    /// Upstreams a reload took off the list that running work still names, by the index
    /// `-2 - k` (see `endpoint(_:)`): they finish, without a health to record.
    var retiredUpstreams: [UpstreamEndpoint] = []
    var healths: [UpstreamHealth]
    var flights: [UInt64: Flight] = [:]
    /// The flight new callers of a name and family join (an ending one is left alone).
    var flightByKey: [FlightKey: UInt64] = [:]
    /// Waiting callers, by caller id: the flight they wait for.
    var callers: [UInt64: UInt64] = [:]
    /// Each waiting caller's place in its flight's `waiters`.
    var waiterSlots: [UInt64: Int] = [:]
    /// Running attempts, by id: their flight.
    var attempts: [UInt64: UInt64] = [:]
    /// Prefetch batches queued or running, by id.
    var batches: [UInt64: PrefetchBatch] = [:]
    /// Names prefetched together, waiting for their refresh timer.
    var batchRefreshes: [UInt64: PrefetchBatch] = [:]
    var queue: FlightQueue<UInt64>
    /// Each uid's rate of new upstream queries.
    var rate: UpstreamQueryRate
    /// Per upstream index: the names it answered last, which a probe asks again.
    var lastAnswered: [Int: RecentAnswers] = [:]
    /// Per upstream index: the owners whose flights timed out there in the last ten minutes.
    var recentTimeOuts: [Int: [FlightOwner: MonotonicInstant]] = [:]
    /// Per upstream index: the first time-out since its last answer.
    var timeOutsSince: [Int: MonotonicInstant] = [:]
    /// Per upstream index: the probe queued or running (at most one each).
    var probes: [Int: Probe] = [:]
    /// Probes by id (their queue and attempt id): the upstream each asks.
    var probeUpstreams: [UInt64: Int] = [:]
    /// Flights that were asking when the network changed: their answers come marked for refresh.
    var flightsBeforeNetworkChange: Set<UInt64> = []
    private var lastID: UInt64 = 0
    private var actions: [ResolverAction] = []

    /// A resolver over `settings`, with names canonicalised by `rules`.
    public init(settings: ResolverSettings, rules: any DomainRules) {
        self.settings = settings
        self.rules = rules
        statics = Self.staticTable(settings.staticAnswers, rules: rules)
        healths = Array(repeating: UpstreamHealth(), count: settings.upstreams.count)
        serviceAddresses = ServiceAddressBook(settings.serviceAddresses, upstreams: settings.upstreams)
        cache = DNSCache(limits: settings.limits)
        owners = AddressOwnerMemory(forCacheSize: settings.limits.capacity)
        queue = FlightQueue(limits: settings.flightLimits)
        rate = UpstreamQueryRate(perSecond: settings.queryRatePerUser, burst: settings.queryBurstPerUser)
    }

    // MARK: actions

    /// Whether actions wait for the driver.
    public var hasActions: Bool { !actions.isEmpty }

    /// The actions collected since the last call, oldest first.
    public mutating func takeActions() -> [ResolverAction] {
        guard !actions.isEmpty else { return [] }
        defer { actions.removeAll(keepingCapacity: true) }
        return actions
    }

    mutating func emit(_ action: ResolverAction) { actions.append(action) }

    mutating func makeID() -> UInt64 {
        lastID += 1
        return lastID
    }

    /// No upstream query is queued or running.
    public var isQuiescent: Bool { queue.count == 0 }

    // MARK: resolve

    /// `data.reason` of a name that `billedRoutesOnly` leaves to the machine's resolver.
    public static let notRouted = "not-routed"

    /// A `resolve` request of `uid`: answered from the cache (or as a literal or `Static=` name)
    /// at once, through `answer` before this returns (nil), or made to wait for the flight of
    /// its name, for at most its own `timeoutMs`: then its caller id is returned and its reply
    /// comes as one `ResolverAction.answer`. Every address handed out is remembered for `uid`
    /// only. Of two families, only the one the cache lacks is asked. The bounds (query caps, rate,
    /// the cache's fair share) are `account`'s: the owner of a subordinate uid, else `uid`.
    ///
    /// The reply is handed to `answer` rather than returned: returned in an enum, it was copied
    /// out of it (a retain and a release of each of its strings and arrays) on every cache hit.
    public mutating func resolve(
        _ params: ResolveParams, uid: UInt32, account: UInt32? = nil, now: MonotonicInstant,
        answer: (consuming Result<ResolveResult, RPCError>) -> Void
    ) -> UInt64? {
        let account = account ?? uid
        if let literal = IPLiteral.address(params.host) {
            answer(.success(literalResult(params.host, literal, family: params.family)))
            return nil
        }
        let host: String
        do throws(RPCError) {
            host = try canonicalName(params.host)
        } catch {
            answer(.failure(error))
            return nil
        }
        // Looking up an empty dictionary still hashes the key.
        if !statics.isEmpty, let fixed = statics[host] {
            let result = staticResult(host, fixed, family: params.family)
            remember(result, uid: uid, now: now)
            answer(.success(result))
            return nil
        }
        if params.billedRoutesOnly, settings.routing.sendsOnlyToBilled(host, upstreams: settings.upstreams) {
            answer(.failure(.resolutionUnavailable(host, reason: Self.notRouted)))
            return nil
        }
        if let (stored, parts, upstream) = cache.freshReplyParts(
            host: host, families: params.family, now: now, user: account)
        {
            answerFresh(
                stored, parts, upstream: upstream, requested: params.family, uid: uid, account: account, now: now,
                answer: answer)
            return nil
        }
        let allowStale = params.allowStale && settings.serveStale
        var cached: [DNSCacheEntry] = []
        var asked = params.family
        var timeoutMs = params.timeoutMs ?? settings.timeoutMs
        var refreshesInBackground = false
        /// The expired answer a `staleAfterMs` caller falls back to.
        var staleEntries: [DNSCacheEntry]?
        switch cache.answer(
            host: host, families: params.family.families, now: now, allowStale: allowStale, user: account)
        {
        case .fresh(let entries, _):
            // Unreachable: `freshReplyParts` found every family fresh under the same test, and
            // nothing changes the cache between the two looks. Answered the same way all the same.
            answerFresh(
                host, ReplyParts(entries, now: now), upstream: Self.upstreamOf(entries), requested: params.family,
                uid: uid, account: account, now: now,
                answer: answer)
            return nil
        case .stale(let entries) where params.staleAfterMs != nil:
            // RFC 8767: the caller waits for the refresh as for a miss, up to its client response
            // timer; then (or when the upstreams fail) `fallback` serves the stale answer, and the
            // refresh goes on for the next caller.
            timeoutMs = min(timeoutMs, params.staleAfterMs ?? timeoutMs)
            refreshesInBackground = true
            staleEntries = entries
        case .stale(let entries):
            // A stale answer always holds a positive entry: negative ones are never served stale.
            let result = Self.reply(host, cached: entries, requested: params.family, now: now, stale: true)
            if case .success(let answered) = result {
                cache.noteStaleServed()
                remember(answered, uid: uid, now: now)
            }
            answer(result)
            // The refresh counts against the uid whose request found the answer stale; when that
            // uid is at its cap or rate, the next request refreshes instead.
            _ = join(FlightKey(host: host, family: params.family), owner: .user(account), background: true, now: now)
            return nil
        case .partial(let entries, let missing):
            cached = entries
            asked = missing == .ipv4 ? .ipv4 : .ipv6
        case .miss:
            break
        }
        let caller = makeID()
        let waiter = Waiter(
            caller: caller, uid: uid, account: account, deadline: now.advanced(byMilliseconds: timeoutMs),
            timeoutMs: timeoutMs,
            allowStale: allowStale, requested: params.family, cached: cached)
        // Marked waiting before joining: a flight that ended within the join took it out.
        callers[caller] = 0
        switch join(
            FlightKey(host: host, family: asked), owner: .user(account), background: refreshesInBackground,
            waiter: waiter, now: now)
        {
        case .failure(let refusal):
            callers[caller] = nil
            // A refresh it may not start (its caps, its rate) leaves the expired answer, as
            // without `staleAfterMs`.
            if let staleEntries,
                case .success(let result) = Self.reply(
                    host, cached: staleEntries, requested: params.family, now: now, stale: true)
            {
                cache.noteStaleServed()
                remember(result, uid: uid, now: now)
                answer(.success(result))
                return nil
            }
            answer(.failure(refusal))
            return nil
        case .success(let flight):
            if callers[caller] != nil {
                callers[caller] = flight
                emit(.armTimer(.caller(caller), at: waiter.deadline))
            }
            return caller
        }
    }

    /// A cache hit's reply, remembered for `uid`; a background refresh follows if the network
    /// changed since the answer came.
    private mutating func answerFresh(
        _ host: String, _ parts: consuming ReplyParts, upstream: String?, requested: AddressFamily, uid: UInt32,
        account: UInt32, now: MonotonicInstant, answer: (consuming Result<ResolveResult, RPCError>) -> Void
    ) {
        // Remembered after answering, so that a server can send the answer first (nothing reads
        // the memory in between), and from the parts, each family for its own TTL as in the reply.
        let kept = copy parts
        answer(Self.reply(host, parts, requested: requested, stale: false, source: .cache, upstream: upstream))
        remember(host, kept, uid: uid, now: now)
        refreshIfNetworkChanged(host, family: requested, uid: account, now: now)
    }

    // MARK: timers

    /// A timer the machine armed has fired.
    public mutating func timerFired(_ timer: ResolverTimer, now: MonotonicInstant) {
        switch timer {
        case .caller(let caller): callerTimedOut(caller, now: now)
        case .prefetch(let host): prefetch(host, now: now)
        case .prefetchBatch(let id):
            guard let batch = batchRefreshes.removeValue(forKey: id) else { return }
            guard batch.upstream >= 0 else {
                // Its upstream was taken off the list: the names go the normal way.
                for host in batch.hosts { prefetch(host, now: now) }
                return
            }
            prefetchBatch(batch.hosts, upstream: batch.upstream, now: now)
        }
    }

    /// A caller's own wait is over before its flight's: it gets the fallback, and a queued
    /// flight nobody waits for any more is dropped.
    private mutating func callerTimedOut(_ caller: UInt64, now: MonotonicInstant) {
        guard let id = callers.removeValue(forKey: caller), let slot = waiterSlots.removeValue(forKey: caller),
            let waiter = flights[id]?.waiters[slot], waiter.caller == caller
        else { return }
        // It stays in the list, left out when the flight ends (no search, no shift, no copy).
        flights[id]!.liveWaiters -= 1
        flights[id]!.waitersByAccount[waiter.account, default: 1] -= 1
        let key = flights[id]!.key
        if flights[id]!.liveWaiters == 0, !flights[id]!.background, queue.isQueued(id) {
            queue.cancel(id)
            flights[id] = nil
            if flightByKey[key] == id { flightByKey[key] = nil }
        }
        emit(.answer(caller: caller, fallback(key.host, waiter, .timedOut(milliseconds: waiter.timeoutMs), now: now)))
    }
}

@available(*, unavailable, message: "the resolver belongs to one thread (the I/O loop)")
extension ResolverMachine: Sendable {}
