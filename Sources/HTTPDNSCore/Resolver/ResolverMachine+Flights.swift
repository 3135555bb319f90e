import HTTPDNSProtocol

/// The name and families one flight asks for.
struct FlightKey: Hashable {
    var host: String
    var family: AddressFamily
}

/// What a flight brings back to everyone waiting for it.
enum FlightOutcome {
    case answered(UpstreamAnswer, upstream: String, source: ResolveResult.Source)
    /// Another machine's answer, through the fleet: every family the flight asked for.
    case fleet([FleetCacheHit])
    case failed(ResolutionFailure)
    /// Every caller had stopped waiting before an upstream could answer.
    case abandoned
}

/// One caller waiting for a flight, until its own deadline.
struct Waiter {
    let caller: UInt64
    /// Whose address memory learns the answer.
    let uid: UInt32
    /// Whose bounds and cache share it counts against (`ResolverMachine.resolve`).
    let account: UInt32
    let deadline: MonotonicInstant
    let timeoutMs: Int
    let allowStale: Bool
    /// The families the caller asked for; the flight may ask fewer.
    let requested: AddressFamily
    /// Fresh cache entries of the requested families the flight does not ask for.
    let cached: [DNSCacheEntry]
}

/// A name an upstream answered, and for whom: what a probe asks it when a time-out makes its
/// health doubtful.
struct RecentAnswer {
    var host: String
    var family: AddressFamily
    var owner: FlightOwner
    var at: MonotonicInstant
}

/// The newest name an upstream answered for each of its last owners, newest first.
///
/// A probe checks a time-out only with a name of an owner who had no time-out of that upstream
/// lately: a name of a failing owner's own zone, made to hang after it was answered, would let
/// that owner (or another failing owner it colludes with) confirm its own time-outs.
struct RecentAnswers {
    /// At most `ownersKept`, one per owner.
    private(set) var answers: [RecentAnswer]
    static let ownersKept = 64

    init(_ answer: RecentAnswer) {
        answers = [answer]
    }

    var latest: RecentAnswer { answers[0] }

    mutating func record(_ answer: RecentAnswer) {
        answers.removeAll { $0.owner == answer.owner }
        answers.insert(answer, at: 0)
        if answers.count > Self.ownersKept { answers.removeLast() }
    }

    /// The newest name answered within `seconds` of `now` for an owner not in `failing`.
    func vouching(excluding failing: Set<FlightOwner>, withinSeconds seconds: Int, now: MonotonicInstant)
        -> RecentAnswer?
    {
        answers.first { !failing.contains($0.owner) && $0.at.advanced(bySeconds: seconds) >= now }
    }
}

/// A query of a name an upstream answered recently, to tell whether a time-out was the name's
/// or the upstream's.
struct Probe {
    let id: UInt64
    /// What it asks.
    let name: RecentAnswer
    /// Owners of the flights whose time-outs it would confirm: each counts once if it fails.
    var blamed: Set<FlightOwner>
    /// Owners whose names the probes before it in the same check asked, and which failed too.
    var failedNames: Set<FlightOwner> = []
    /// Whether one of those was a name no user chose: the daemon's (`Prefetch=`) or root's.
    var aTrustedNameFailed = false
    var startedAt = MonotonicInstant(nanoseconds: 0)
    /// The service address whose time-out it checks (nil: the upstream's URL as configured).
    var address: String?
}

/// One upstream query and everyone waiting for it.
struct Flight {
    /// Where a flight is in its life.
    enum Phase {
        /// Waiting in the queue for a worker.
        case queued
        /// Asking the fleet (`ShareCache=`).
        case askingFleet
        /// Asking the upstreams, one attempt at a time.
        case querying
    }

    /// Candidate positions already asked again at another service address in this flight.
    var retriedElsewhere: Set<Int> = []

    /// The attempt running now.
    struct Attempt {
        var id: UInt64
        /// Index into the candidates.
        var position: Int
        var timeoutMs: Int
        /// The upstream's fair share of what was left of the budget when the attempt started:
        /// a time-out shorter than it was the callers' deadline, no verdict on the upstream.
        var shareMs: Int
        var startedAt: MonotonicInstant
        /// The service address asked (nil: the upstream's URL as configured).
        var address: String? = nil
    }

    let id: UInt64
    let key: FlightKey
    /// Who started it: its failures are counted against upstreams in this owner's name.
    let owner: FlightOwner
    /// Who asked for its answer (the cache's fair shares).
    var use: CacheUse
    /// Everyone who joined, in order; a caller whose own wait ended stays here (no longer in
    /// `ResolverMachine.callers`), so leaving costs no search nor shift of the list.
    var waiters: [Waiter] = []
    /// Callers still waiting, and how many of them each account has.
    var liveWaiters = 0
    var waitersByAccount: [UInt32: Int] = [:]
    /// A stale refresh or a prefetch: it runs its whole budget for the cache, waited for or not.
    var background: Bool
    /// A prefetched name: refreshed again before its answer expires.
    var prefetch = false
    /// A refresh after a network change: asks this machine's upstreams, never the fleet.
    var localOnly = false
    var phase = Phase.queued
    /// `Timeout=` from the start: the upstreams' fair shares are cut from it.
    var budgetEnd = MonotonicInstant(nanoseconds: 0)
    /// When the callers stop waiting (never after the budget's end); moved later when a caller
    /// with more time joins.
    var deadline = MonotonicInstant(nanoseconds: 0)
    /// The fleet handed the query to the upstreams: it waits for a report of their answer.
    var reportsToFleet = false
    /// Upstream indices in the order to try (-1: the system resolver, for localhost names).
    var candidates: [Int] = []
    var attempt: Attempt?
    /// What the attempts so far came to; the last one counts.
    var outcome: FlightOutcome?

    init(id: UInt64, key: FlightKey, owner: FlightOwner, background: Bool) {
        self.id = id
        self.key = key
        self.owner = owner
        if case .user(let uid) = owner { use = .one(uid) } else { use = .nobody }
        self.background = background
    }
}

/// Names to prefetch through one upstream's batch endpoint.
struct PrefetchBatch {
    var hosts: [String]
    /// Index of the upstream.
    var upstream: Int
    /// The service address asked, once running.
    var address: String? = nil
}

extension ResolverMachine {
    // MARK: joining

    /// Joins the flight for `key`, or starts one owned by `owner` (-32003 over its caps or its
    /// rate). A background join (stale refresh, prefetch) makes the flight run its whole budget.
    mutating func join(
        _ key: FlightKey, owner: FlightOwner, background: Bool, prefetch: Bool = false, waiter: Waiter? = nil,
        localOnly: Bool = false, now: MonotonicInstant
    ) -> Result<UInt64, RPCError> {
        if let id = flightByKey[key], flights[id].map({ !isEnding($0, now: now) }) == true {
            // Changed in place: a copy of the flight would copy its waiter list at every join.
            if let waiter {
                guard flights[id]!.waitersByAccount[waiter.account, default: 0] < Self.maxWaitersPerUser else {
                    return .failure(
                        .limitExceeded("callers of one user waiting for one name", limit: Self.maxWaitersPerUser))
                }
                addWaiter(waiter, to: id)
            }
            if background { flights[id]!.background = true }
            if prefetch { flights[id]!.prefetch = true }
            let queued = flights[id]!.phase == .queued
            if !queued {
                // Running: a caller with more time keeps it going longer, never past its budget.
                let budgetEnd = flights[id]!.budgetEnd
                let wanted = background ? budgetEnd : waiter?.deadline ?? flights[id]!.deadline
                flights[id]!.deadline = max(flights[id]!.deadline, min(wanted, budgetEnd))
            }
            if queued {
                queue.sponsor(id, by: owner)
                pump(now: now)
            }
            return .success(id)
        }
        if case .user(let uid) = owner, let retryAfterMs = rate.take(uid: uid, now: now) {
            return .failure(
                .rateExceeded("new upstream queries of one user", limit: rate.perSecond, retryAfterMs: retryAfterMs))
        }
        let id = makeID()
        let refusal = queue.admit(id, owner: owner)
        if refusal != nil, case .user(let uid) = owner { rate.refund(uid: uid) }
        switch refusal {
        case .perUser(let limit)?: return .failure(.limitExceeded("upstream queries of one user", limit: limit))
        case .total(let limit)?: return .failure(.limitExceeded("upstream queries", limit: limit))
        case nil: break
        }
        var flight = Flight(id: id, key: key, owner: owner, background: background)
        flight.prefetch = prefetch
        flight.localOnly = localOnly
        flights[id] = flight
        if let waiter { addWaiter(waiter, to: id) }
        flightByKey[key] = id
        pump(now: now)
        return .success(id)
    }

    /// Callers of one account that may wait for one flight: a thousand joins of one name are no
    /// more use than this many, and each one waiting is a reply in the turn the flight ends.
    public static let maxWaitersPerUser = 256

    private mutating func addWaiter(_ waiter: Waiter, to id: UInt64) {
        waiterSlots[waiter.caller] = flights[id]!.waiters.count
        flights[id]!.waiters.append(waiter)
        flights[id]!.liveWaiters += 1
        flights[id]!.waitersByAccount[waiter.account, default: 0] += 1
        flights[id]!.use = flights[id]!.use.adding(waiter.account)
    }

    /// Whether a running flight's callers' deadline is over or within 2 ms of it. An attempt is
    /// given up only once less than 1 ms is left, so a deadline moved later before this says true
    /// is always seen; a flight past it gets no new callers (they start another).
    func isEnding(_ flight: Flight, now: MonotonicInstant) -> Bool {
        flight.phase != .queued && flight.deadline <= now.advanced(byMilliseconds: 2)
    }

    /// Starts whatever the queue lets run on the free workers.
    mutating func pump(now: MonotonicInstant) {
        while let id = queue.next() {
            if flights[id] != nil {
                launch(id, now: now)
            } else if let upstream = probeUpstreams[id] {
                launchProbe(id, upstream: upstream, now: now)
            } else if let batch = batches[id] {
                let (endpoint, address) = serviceEndpoint(batch.upstream, now: now)
                batches[id]?.address = address
                emit(
                    .queryBatch(
                        UpstreamBatchRequest(
                            id: id, hosts: batch.hosts, endpoint: endpoint, timeoutMs: settings.timeoutMs)))
            }
        }
    }

    /// Gives a flight its worker: `Timeout=` from now, cut at its callers' longest deadline.
    private mutating func launch(_ id: UInt64, now: MonotonicInstant) {
        guard var flight = flights[id] else { return }
        flight.budgetEnd = now.advanced(byMilliseconds: settings.timeoutMs)
        let waitEnd = flight.background ? flight.budgetEnd : flight.waiters.map(\.deadline).max() ?? now
        flight.deadline = min(waitEnd, flight.budgetEnd)
        // localhost names never leave the machine, not even to the fleet; the fleet holds
        // HTTPDNS answers only, so names routed to the system resolver alone are not asked of it.
        if sharesCacheWithFleet, !flight.localOnly, !Self.isLocalhost(flight.key.host),
            settings.routing.upstreams(for: flight.key.host).contains(where: {
                settings.upstreams[$0].descriptor.answerSource != .system
            })
        {
            flight.phase = .askingFleet
            flights[id] = flight
            let timeoutMs = Int(max(1, flight.deadline.nanoseconds(since: now) / 1_000_000))
            emit(
                .askFleet(flight: id, host: flight.key.host, families: flight.key.family.families, timeoutMs: timeoutMs)
            )
            return
        }
        flights[id] = flight
        beginQuerying(id, now: now)
    }

    /// Asks the upstreams of the name's route in health order, or the system resolver alone for
    /// localhost names (RFC 6761: they never leave the machine).
    mutating func beginQuerying(_ id: UInt64, now: MonotonicInstant) {
        guard var flight = flights[id] else { return }
        flight.phase = .querying
        flight.candidates =
            Self.isLocalhost(flight.key.host)
            ? [-1]
            : UpstreamHealth.tryOrder(healths, among: settings.routing.upstreams(for: flight.key.host), now: now)
        flights[id] = flight
        nextAttempt(id, position: 0, now: now)
    }

    // MARK: attempts

    /// Asks the candidate at `position` within its fair share of what is left of `Timeout=` (the
    /// last one gets whatever is left), never past the callers' deadline; past the last
    /// candidate the flight ends with what the attempts came to.
    private mutating func nextAttempt(
        _ id: UInt64, position: Int, at serviceAddress: String? = nil, now: MonotonicInstant
    ) {
        guard var flight = flights[id] else { return }
        guard position < flight.candidates.count else {
            finish(id, flight.outcome ?? .failed(.noUpstreamAsked), now: now)
            return
        }
        let waitMs = min(flight.deadline, flight.budgetEnd).nanoseconds(since: now) / 1_000_000
        guard waitMs >= 1 else {
            finish(id, .abandoned, now: now)
            return
        }
        let shareMs = max(
            1, flight.budgetEnd.nanoseconds(since: now) / 1_000_000 / Int64(flight.candidates.count - position))
        let timeoutMs = Int(min(shareMs, waitMs))
        let (endpoint, address) =
            serviceAddress.map { (self.endpoint(flight.candidates[position], at: $0), $0) }
            ?? serviceEndpoint(flight.candidates[position], now: now)
        let attempt = Flight.Attempt(
            id: makeID(), position: position, timeoutMs: timeoutMs, shareMs: Int(shareMs), startedAt: now,
            address: address)
        flight.attempt = attempt
        flights[id] = flight
        attempts[attempt.id] = id
        emit(
            .query(
                UpstreamAttemptRequest(
                    id: attempt.id, host: flight.key.host, family: flight.key.family, endpoint: endpoint,
                    timeoutMs: timeoutMs)))
    }

    /// The endpoint of a candidate index: -1 is the system resolver, -2 and below an upstream a
    /// reload took off the list.
    func endpoint(_ index: Int) -> UpstreamEndpoint {
        index >= 0 ? settings.upstreams[index] : index == -1 ? .system : retiredUpstreams[-2 - index]
    }

    /// An upstream exchange ended.
    ///
    /// An answer (which may be "no such name") ends the flight. A time-out shorter than the
    /// upstream's share was the callers' deadline: no verdict on the upstream; if a caller with
    /// more time joined meanwhile the same upstream is asked again, else the flight is
    /// abandoned. A failure of the name (SERVFAIL, REFUSED, a name the service refuses, a
    /// time-out of the whole share) moves no health, though a time-out has a probe ask the
    /// upstream a name it answered recently; any other failure counts against the upstream,
    /// once per owner. Either way the next upstream is asked for this name alone.
    public mutating func attemptFinished(
        _ attemptID: UInt64, _ result: Result<UpstreamAnswer, UpstreamError>, now: MonotonicInstant
    ) {
        if let upstream = probeUpstreams[attemptID] {
            probeFinished(attemptID, upstream: upstream, result, now: now)
            return
        }
        guard let id = attempts.removeValue(forKey: attemptID), var flight = flights[id],
            let attempt = flight.attempt
        else { return }
        flight.attempt = nil
        let index = flight.candidates[attempt.position]
        let endpoint = endpoint(index)
        let latencyMs = Int(now.nanoseconds(since: attempt.startedAt) / 1_000_000)
        switch result {
        case .success(let answer):
            if index >= 0 {
                healths[index].recordSuccess(latencyMs: latencyMs, now: now)
                rememberAnswered(
                    index, RecentAnswer(host: flight.key.host, family: flight.key.family, owner: flight.owner, at: now))
                serviceAnswered(index, address: attempt.address, now: now)
            }
            cache.insert(
                host: flight.key.host, parts: flight.key.family.families.map { CachePart(answer, family: $0) },
                upstream: endpoint.name, now: now, use: flight.use)
            flights[id] = flight
            finish(
                id, .answered(answer, upstream: endpoint.name, source: endpoint.descriptor.answerSource),
                now: now)
            return
        case .failure(let error) where error.code == .timeout && attempt.timeoutMs < attempt.shareMs:
            flights[id] = flight
            if flight.deadline > now.advanced(byMilliseconds: 1) {
                nextAttempt(id, position: attempt.position, now: now)
            } else {
                finish(id, .abandoned, now: now)
            }
            return
        case .failure(let error) where error.code == .timeout:
            if index >= 0 {
                serviceTimedOut(index, address: attempt.address, now: now)
                probeIfDoubtful(
                    upstream: index, since: attempt.startedAt, for: flight.owner, address: attempt.address, now: now)
            }
            flight.outcome = .failed(.upstreamFailed(upstream: endpoint.name, error))
        case .failure(let error) where error.isNameLevel:
            flight.outcome = .failed(.upstreamFailed(upstream: endpoint.name, error))
        case .failure(let error) where error.isAccountLevel && index >= 0:
            if !healths[index].isUnusable(now: now) {
                emit(
                    .log(
                        .warning,
                        "Upstream \(endpoint.name) refuses the account (\(error)): no query goes to it for "
                            + "\(UpstreamHealth.accountRefusalSeconds / 60) minutes"))
            }
            healths[index].recordAccountRefusal(error.description, now: now)
            flight.outcome = .failed(.upstreamFailed(upstream: endpoint.name, error))
        case .failure(let error):
            if index >= 0 {
                healths[index].recordFailure(error.description, by: flight.owner, now: now)
                serviceFailed(index, address: attempt.address, error, now: now)
            }
            emit(.log(.warning, "Upstream \(endpoint.name) failed for \(flight.key.host): \(error)"))
            flight.outcome = .failed(.upstreamFailed(upstream: endpoint.name, error))
            // No connection at that service address: the same upstream at its next address, at
            // once and once, within the flight's time (the SDKs retry so).
            if case .transport = error.code, index >= 0, let failed = attempt.address,
                !flight.retriedElsewhere.contains(attempt.position),
                let next = serviceAddresses.alternative(for: settings.upstreams[index], after: failed, now: now)
            {
                flight.retriedElsewhere.insert(attempt.position)
                flights[id] = flight
                nextAttempt(id, position: attempt.position, at: next, now: now)
                return
            }
        }
        flights[id] = flight
        nextAttempt(id, position: attempt.position + 1, now: now)
    }

    // MARK: probes

    /// How recent an answer must be for its name to probe the upstream with: a name answered
    /// ten minutes ago is very likely answered now too, if the upstream works.
    static let probeRecencySeconds = 600

    /// After a time-out of `upstream` in a flight of `owner`'s: unless the upstream answered
    /// something since the attempt began (it works), a probe asks it again for a name it answered
    /// recently for an owner with no time-out of it in the last ten minutes (a `Prefetch=` name
    /// is the daemon's). When a probe fails, the next probe asks the next such owner's name: the
    /// time-out counts (once per owner) only once every such name failed and one of them was a
    /// name no user chose (root's, or the daemon's), so colluding owners whose zones hang (each one's name answered,
    /// then made to hang) only lead the probes to a name of somebody else, which answers. Without
    /// any such name there is no probe: the time-out counts only once the upstream has answered
    /// nothing for ten minutes while time-outs went on. One probe per upstream at a time.
    mutating func probeIfDoubtful(
        upstream index: Int, since startedAt: MonotonicInstant, for owner: FlightOwner, address: String? = nil,
        now: MonotonicInstant
    ) {
        let failing = noteTimeOut(upstream: index, by: owner, now: now)
        if var probe = probes[index] {
            probe.blamed.insert(owner)
            probes[index] = probe
            return
        }
        if let recent = lastAnswered[index], recent.latest.at >= startedAt { return }
        if startProbe(upstream: index, blamed: [owner], excluding: failing, address: address, now: now) { return }
        // Reset by every answer: time-outs since then, and nothing answered.
        if let silentSince = timeOutsSince[index], silentSince.advanced(bySeconds: Self.probeRecencySeconds) <= now {
            healths[index].recordFailure(UpstreamError(.timeout).description, by: owner, now: now)
        }
    }

    /// Queues a probe of the newest name answered for an owner not in `failing`; false when
    /// there is none.
    private mutating func startProbe(
        upstream index: Int, blamed: Set<FlightOwner>, excluding failing: Set<FlightOwner>, address: String?,
        failedNames: Set<FlightOwner> = [], now: MonotonicInstant
    ) -> Bool {
        guard
            let name = lastAnswered[index]?.vouching(
                excluding: failing, withinSeconds: Self.probeRecencySeconds, now: now)
        else { return false }
        let id = makeID()
        _ = queue.admit(id, owner: .daemon)
        probes[index] = Probe(id: id, name: name, blamed: blamed, failedNames: failedNames, address: address)
        probeUpstreams[id] = index
        pump(now: now)
        return true
    }

    /// A name no user chose: prefetched by the daemon, or asked by root.
    static func isTrusted(_ owner: FlightOwner) -> Bool {
        switch owner {
        case .daemon, .user(0): return true
        case .user: return false
        }
    }

    /// Records `owner`'s time-out of `upstream` and returns the owners with one in the last ten
    /// minutes.
    private mutating func noteTimeOut(upstream index: Int, by owner: FlightOwner, now: MonotonicInstant)
        -> Set<FlightOwner>
    {
        if timeOutsSince[index] == nil { timeOutsSince[index] = now }
        var owners = recentTimeOuts[index] ?? [:]
        owners[owner] = now
        owners = owners.filter { $0.value.advanced(bySeconds: Self.probeRecencySeconds) > now }
        recentTimeOuts[index] = owners
        return Set(owners.keys)
    }

    /// Gives a probe its worker: the recent name, within the whole `Timeout=`.
    private mutating func launchProbe(_ id: UInt64, upstream index: Int, now: MonotonicInstant) {
        guard var probe = probes[index] else { return }
        probe.startedAt = now
        probes[index] = probe
        emit(
            .query(
                UpstreamAttemptRequest(
                    id: id, host: probe.name.host, family: probe.name.family,
                    endpoint: endpoint(index, at: probe.address), timeoutMs: settings.timeoutMs)))
    }

    /// Upstream `index` answered `answer`.
    mutating func rememberAnswered(_ index: Int, _ answer: RecentAnswer) {
        timeOutsSince[index] = nil
        if lastAnswered[index] == nil {
            lastAnswered[index] = RecentAnswers(answer)
        } else {
            lastAnswered[index]?.record(answer)
        }
    }

    /// A probe ended: an answer clears the doubt (and counts as a success); a failure that is not
    /// the probed name's counts against the upstream for every owner whose time-out it confirms.
    private mutating func probeFinished(
        _ id: UInt64, upstream index: Int, _ result: Result<UpstreamAnswer, UpstreamError>, now: MonotonicInstant
    ) {
        probeUpstreams[id] = nil
        queue.finish(id)
        guard let probe = probes.removeValue(forKey: index) else { return }
        let name = endpoint(index).name
        guard index >= 0 else {
            pump(now: now)
            return
        }
        switch result {
        case .success:
            let latencyMs = Int(now.nanoseconds(since: probe.startedAt) / 1_000_000)
            healths[index].recordSuccess(latencyMs: latencyMs, now: now)
            serviceAnswered(index, address: probe.address, now: now)
            var answered = probe.name
            answered.at = now
            rememberAnswered(index, answered)
        case .failure(let error) where error.isNameLevel:
            break
        case .failure(let error):
            // Its name's owner may be a colluder whose zone hangs: the next owner's name is asked,
            // and only when none is left does the time-out count.
            let failedNames = probe.failedNames.union([probe.name.owner])
            let trusted = probe.aTrustedNameFailed || Self.isTrusted(probe.name.owner)
            let failing = failedNames.union(recentTimeOuts[index]?.keys ?? [:].keys)
            if startProbe(
                upstream: index, blamed: probe.blamed, excluding: failing, address: probe.address,
                failedNames: failedNames, now: now)
            {
                probes[index]?.aTrustedNameFailed = trusted
                return
            }
            // Every name failed, but all were users' own: colluders whose zones hang can be all of
            // them. Only a name no user chose confirms; else the ten minutes of silence do.
            guard trusted else {
                if let since = timeOutsSince[index], since.advanced(bySeconds: Self.probeRecencySeconds) <= now {
                    for owner in probe.blamed { healths[index].recordFailure(error.description, by: owner, now: now) }
                }
                pump(now: now)
                return
            }
            for owner in probe.blamed { healths[index].recordFailure(error.description, by: owner, now: now) }
            serviceFailed(index, address: probe.address, error, now: now)
            emit(.log(.warning, "Upstream \(name) failed a probe after a time-out: \(error)"))
        }
        pump(now: now)
    }

    // MARK: the fleet

    /// The fleet answered a flight's name (every family it asked for): the answer is cached with
    /// the time it has left.
    public mutating func fleetAnswered(flight id: UInt64, _ hits: [FleetCacheHit], now: MonotonicInstant) {
        guard let flight = flights[id], flight.phase == .askingFleet else { return }
        cache.insertShared(
            hits.map { $0.record.cacheEntry(now: now, millisecondsLeft: $0.millisecondsLeft) }, now: now,
            use: flight.use)
        finish(id, .fleet(hits), now: now)
    }

    /// The fleet handed a flight's name to this machine's upstreams: their answer is reported
    /// back (`reportToFleet`).
    public mutating func fleetDeferredToUpstreams(flight id: UInt64, now: MonotonicInstant) {
        guard var flight = flights[id], flight.phase == .askingFleet else { return }
        flight.reportsToFleet = true
        flights[id] = flight
        beginQuerying(id, now: now)
    }

    // MARK: the end

    /// Ends a flight: its worker is free, every caller gets its reply, the fleet its report.
    mutating func finish(_ id: UInt64, _ outcome: FlightOutcome, now: MonotonicInstant) {
        guard let flight = flights.removeValue(forKey: id) else { return }
        queue.finish(id)
        if flightsBeforeNetworkChange.remove(id) != nil { cache.markForRefresh(host: flight.key.host) }
        if flight.reportsToFleet { emit(.reportToFleet(flight: id, answered: fleetReport(outcome, flight.key))) }
        if flightByKey[flight.key] == id { flightByKey[flight.key] = nil }
        for waiter in flight.waiters where callers.removeValue(forKey: waiter.caller) != nil {
            waiterSlots[waiter.caller] = nil
            emit(.cancelTimer(.caller(waiter.caller)))
            emit(.answer(caller: waiter.caller, reply(outcome, flight.key, waiter, now: now)))
        }
        if flight.prefetch { schedulePrefetch(flight.key.host, now: now) }
        pump(now: now)
    }

    /// What the upstreams answered, to publish (each family's fresh cache entry, so the fleet
    /// never extends a TTL), or nil after a failure. Answers of the system resolver stay here
    /// (none published): they reflect this machine's own configuration (`/etc/hosts`, its DNS
    /// servers), not the HTTPDNS service the fleet shares.
    private func fleetReport(_ outcome: FlightOutcome, _ key: FlightKey) -> [DNSCacheEntry]? {
        guard case .answered(_, _, let source) = outcome else { return nil }
        guard source == .upstream else { return [] }
        return key.family.families.compactMap { cache.peek(host: key.host, family: $0) }
    }

    // MARK: upstream status

    /// Each upstream's health, the queries it answered, with routes its domains, and what is
    /// wrong with its configuration, for `status`.
    public var upstreamStatus: [UpstreamStatus] {
        settings.upstreams.indices.map { index in
            let (endpoint, health) = (settings.upstreams[index], healths[index])
            return UpstreamStatus(
                name: endpoint.name, kind: endpoint.kind.rawValue, healthy: health.healthy, lastError: health.lastError,
                latencyMs: health.latencyMs.map(Double.init), answered: health.answered,
                domains: settings.routing.domains(of: index),
                warning: settings.routing.billedDefaultWarning(index, upstreams: settings.upstreams))
        }
    }
}
