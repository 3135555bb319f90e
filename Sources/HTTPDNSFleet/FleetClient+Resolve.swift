import HTTPDNSCore
import HTTPDNSRedis
import HTTPDNSSodium
import HTTPDNSSystem

/// How the resolver reports its upstream query back to a fleet flight (on the loop thread).
public final class FleetUpstreamReport {
    private let finish: (FleetCacheFlight.Event) -> Void
    private var reported = false

    init(_ finish: @escaping (FleetCacheFlight.Event) -> Void) {
        self.finish = finish
    }

    /// The upstreams answered; `records` are the answers to share (`FleetCacheRecord(entry:...)`
    /// of each fresh cache entry the answer produced).
    public func answered(_ records: [FleetCacheRecord]) {
        guard !reported else { return }
        reported = true
        finish(.upstreamAnswered(records))
    }

    /// The upstreams failed: the lock is released so another machine may try.
    public func failed() {
        guard !reported else { return }
        reported = true
        finish(.upstreamFailed)
    }
}

@available(*, unavailable)
extension FleetUpstreamReport: Sendable {}

extension FleetCacheFlight {
    /// The outcomes a driver reports, as one type.
    public enum Event: Sendable, Equatable {
        case lookedUp([IPFamily: FleetCacheHit])
        case lookupFailed
        case lockAcquired
        case lockBusy
        case lockFailed
        case waited
        case upstreamAnswered([FleetCacheRecord])
        case upstreamFailed
    }

    /// Feeds one event.
    public mutating func handle(_ event: Event, now: MonotonicInstant) -> Action {
        switch event {
        case .lookedUp(let hits): return lookedUp(hits, now: now)
        case .lookupFailed: return lookupFailed()
        case .lockAcquired: return lockAcquired()
        case .lockBusy: return lockBusy(now: now)
        case .lockFailed: return lockFailed()
        case .waited: return waited()
        case .upstreamAnswered(let records): return upstreamAnswered(records)
        case .upstreamFailed: return upstreamFailed()
        }
    }
}

extension FleetClient {
    /// Resolves `host` through the fleet after a local cache miss: exactly one of `answer`
    /// (fleet answers covering every family, to serve with `"source":"fleet"` and to cache
    /// locally with `FleetCacheRecord.cacheEntry`) or `queryUpstream` (query the upstreams as
    /// without a fleet, then report on the `FleetUpstreamReport`) is called, on the loop.
    ///
    /// Only one machine of the fleet queries the upstreams for a name at a time; the others
    /// wait for its answer, at most until half of `timeoutMs` is left (see `FleetCacheFlight`).
    public func resolve(
        host: String, families: [IPFamily], timeoutMs: Int, answer: @escaping ([FleetCacheHit]) -> Void,
        queryUpstream: @escaping (FleetUpstreamReport) -> Void
    ) {
        let token = Sodium.randomHex(byteCount: 16)
        let flight = FleetCacheFlight(
            host: host, families: families, token: token, timing: FleetCacheFlight.Timing(timeoutMs: timeoutMs),
            now: now())
        let driver = FleetFlightDriver(
            client: self, flight: flight, answer: answer, queryUpstream: queryUpstream)
        driver.start()
    }

    /// The loop's time, which the flight's timers run on too.
    func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: clock.nowNanoseconds()) }
}

/// Carries out a `FleetCacheFlight`'s actions with the client and the loop's timers.
final class FleetFlightDriver {
    private let client: FleetClient
    private var flight: FleetCacheFlight
    private let answer: ([FleetCacheHit]) -> Void
    private let queryUpstream: (FleetUpstreamReport) -> Void

    init(
        client: FleetClient, flight: FleetCacheFlight, answer: @escaping ([FleetCacheHit]) -> Void,
        queryUpstream: @escaping (FleetUpstreamReport) -> Void
    ) {
        self.client = client
        self.flight = flight
        self.answer = answer
        self.queryUpstream = queryUpstream
    }

    func start() { perform(flight.start()) }

    private func handle(_ event: FleetCacheFlight.Event) {
        perform(flight.handle(event, now: client.now()))
    }

    /// The event of a Redis call, or `timedOut` once `milliseconds` passed on the loop without
    /// it, whichever comes first: the resolve goes on to the upstreams in time whatever the
    /// Redis thread is stuck on (a late result is dropped).
    private func settleWithin(_ milliseconds: Int, orElse timedOut: FleetCacheFlight.Event)
        -> (FleetCacheFlight.Event) -> Void
    {
        var settled = false
        let loop = client.loop
        let timer = loop.schedule(afterMilliseconds: Int64(milliseconds)) {
            guard !settled else { return }
            settled = true
            self.handle(timedOut)
        }
        return { event in
            guard !settled else { return }
            settled = true
            loop.cancel(timer)
            self.handle(event)
        }
    }

    /// The driver keeps itself alive through the closures it hands out until the flight ends.
    private func perform(_ action: FleetCacheFlight.Action) {
        let lock = FleetLock(host: flight.host, token: flight.token)
        // Redis work must leave time for the upstreams: a call still queued after a quarter of
        // the budget fails without I/O.
        let budget = max(1, flight.timing.timeoutMs / 4)
        switch action {
        case .none, .finished:
            break
        case .lookUp:
            let settle = settleWithin(budget, orElse: .lookupFailed)
            client.lookUp(host: flight.host, families: flight.families, deadlineMilliseconds: budget) { result in
                switch result {
                case .success(let hits): settle(.lookedUp(hits))
                case .failure: settle(.lookupFailed)
                }
            }
        case .acquireLock(_, let lifetimeMs):
            let settle = settleWithin(budget, orElse: .lockFailed)
            client.acquireLock(lock, lifetimeMs: lifetimeMs, deadlineMilliseconds: budget) { result in
                switch result {
                case .success(true): settle(.lockAcquired)
                case .success(false): settle(.lockBusy)
                case .failure: settle(.lockFailed)
                }
            }
        case .wait(let milliseconds):
            client.loop.schedule(afterMilliseconds: Int64(milliseconds)) { self.handle(.waited) }
        case .answer(let hits):
            answer(hits)
        case .answerReleasingLock(let hits, _):
            answer(hits)
            client.releaseLock(lock)
        case .queryUpstream:
            queryUpstream(FleetUpstreamReport { event in self.handle(event) })
        case .publish(let records, let releasing):
            client.publish(records, releasingLock: releasing.map { FleetLock(host: flight.host, token: $0) })
        case .releaseLock:
            client.releaseLock(lock)
        }
    }
}
