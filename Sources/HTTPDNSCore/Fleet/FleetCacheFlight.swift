/// One daemon's way through the fleet for one host name after a local cache miss: ask the
/// fleet, else take the name's lock and query the upstreams (then publish), else wait for the
/// machine holding the lock to publish its answer.
///
/// At most one machine of the fleet queries the upstreams for a name at a time: the lock is a
/// `SET NX PX` key that expires by itself if its holder dies. Whoever takes the lock looks the
/// fleet up once more first: the previous holder may have published and released it between
/// this machine's lookup and its `SET NX`. A waiter polls the fleet entry
/// (and retries the lock, which frees when the holder gives up) until the answer appears; once
/// the time left is down to the upstream reserve it stops waiting and queries the upstreams
/// itself, so a request still gets an answer within its `Timeout=`. Any Redis failure goes
/// straight to the upstreams: the fleet never makes a resolve fail.
///
/// A value-type state machine with injected time: the caller performs each action and reports
/// the outcome with the matching method.
public struct FleetCacheFlight: Sendable {
    /// The times a flight works with.
    public struct Timing: Sendable, Equatable {
        /// The resolve's whole budget (`Timeout=`, or the request's `timeoutMs`).
        public var timeoutMs: Int
        /// Kept for querying the upstreams oneself when the lock holder's answer does not come.
        public var upstreamReserveMs: Int
        /// How long the lock lives if its holder never releases it: the holder's own upstream
        /// budget and a margin.
        public var lockLifetimeMs: Int
        /// First pause between polls while waiting, doubling up to `maximumPollMs`.
        public var firstPollMs: Int
        public var maximumPollMs: Int

        public init(
            timeoutMs: Int, upstreamReserveMs: Int? = nil, lockLifetimeMs: Int? = nil, firstPollMs: Int = 10,
            maximumPollMs: Int = 100
        ) {
            self.timeoutMs = max(1, timeoutMs)
            self.upstreamReserveMs = upstreamReserveMs ?? self.timeoutMs / 2
            self.lockLifetimeMs = lockLifetimeMs ?? self.timeoutMs + 500
            self.firstPollMs = max(1, firstPollMs)
            self.maximumPollMs = max(self.firstPollMs, maximumPollMs)
        }
    }

    /// What the caller does next.
    public enum Action: Sendable, Equatable {
        /// Nothing (an event that does not fit the state was ignored).
        case none
        /// Read the fleet entries of `families`; report `lookedUp` or `lookupFailed`.
        case lookUp
        /// `SET lock token NX PX lifetime`; report `lockAcquired`, `lockBusy` or `lockFailed`.
        case acquireLock(token: String, lifetimeMs: Int)
        /// Report `waited` after this long.
        case wait(milliseconds: Int)
        /// Serve these fleet answers (`"source":"fleet"`). The flight is over.
        case answer([FleetCacheHit])
        /// Serve these fleet answers, and release the lock this flight took (only if it still
        /// holds the token). The flight is over.
        case answerReleasingLock([FleetCacheHit], token: String)
        /// Query the upstreams; report `upstreamAnswered` or `upstreamFailed`.
        case queryUpstream
        /// Publish the answers (Redis expiry = their remaining TTL), then release the lock if a
        /// token is given (only if it still holds that token). The flight is over.
        case publish([FleetCacheRecord], releasingLock: String?)
        /// Release the lock (only if it still holds the token). The flight is over.
        case releaseLock(token: String)
        /// The flight is over.
        case finished
    }

    private enum State: Sendable, Equatable {
        case created, lookingUp, acquiring, recheckingHoldingLock, waiting, querying(holdingLock: Bool), finished
    }

    public let host: String
    /// The families the resolve needs; a fleet answer must cover all of them.
    public let families: [IPFamily]
    /// A random value naming this flight's claim on the lock.
    public let token: String
    public let timing: Timing
    private let deadline: MonotonicInstant
    private var state = State.created
    private var nextPollMs: Int

    public init(host: String, families: [IPFamily], token: String, timing: Timing, now: MonotonicInstant) {
        self.host = host
        self.families = families
        self.token = token
        self.timing = timing
        self.deadline = now.advanced(byMilliseconds: timing.timeoutMs)
        self.nextPollMs = timing.firstPollMs
    }

    /// Whether the flight is over.
    public var isFinished: Bool { state == .finished }

    /// Whether this flight holds the lock (it is looking up once more, or querying the upstreams
    /// for the fleet).
    public var holdsLock: Bool { state == .querying(holdingLock: true) || state == .recheckingHoldingLock }

    public mutating func start() -> Action {
        guard state == .created else { return .none }
        state = .lookingUp
        return .lookUp
    }

    /// The fleet entries found, by family (expired or unopenable ones left out).
    public mutating func lookedUp(_ hits: [IPFamily: FleetCacheHit], now: MonotonicInstant) -> Action {
        guard state == .lookingUp || state == .recheckingHoldingLock else { return .none }
        let covered = families.allSatisfy { hits[$0] != nil }
        if state == .recheckingHoldingLock {
            guard covered else {
                state = .querying(holdingLock: true)
                return .queryUpstream
            }
            state = .finished
            return .answerReleasingLock(families.compactMap { hits[$0] }, token: token)
        }
        if covered {
            state = .finished
            return .answer(families.compactMap { hits[$0] })
        }
        state = .acquiring
        return .acquireLock(token: token, lifetimeMs: timing.lockLifetimeMs)
    }

    public mutating func lookupFailed() -> Action {
        guard state == .lookingUp || state == .recheckingHoldingLock else { return .none }
        state = .querying(holdingLock: state == .recheckingHoldingLock)
        return .queryUpstream
    }

    /// This flight holds the lock now: one more lookup before the upstreams.
    public mutating func lockAcquired() -> Action {
        guard state == .acquiring else { return .none }
        state = .recheckingHoldingLock
        return .lookUp
    }

    /// Another machine holds the lock: wait for its answer while the budget allows.
    public mutating func lockBusy(now: MonotonicInstant) -> Action {
        guard state == .acquiring else { return .none }
        let waitUntil = deadline.advanced(byMilliseconds: -timing.upstreamReserveMs)
        let leftMs = waitUntil.nanoseconds(since: now) / 1_000_000
        guard leftMs > 0 else {
            state = .querying(holdingLock: false)
            return .queryUpstream
        }
        state = .waiting
        let pause = min(Int64(nextPollMs), leftMs)
        nextPollMs = min(nextPollMs * 2, timing.maximumPollMs)
        return .wait(milliseconds: Int(pause))
    }

    public mutating func lockFailed() -> Action {
        guard state == .acquiring else { return .none }
        state = .querying(holdingLock: false)
        return .queryUpstream
    }

    public mutating func waited() -> Action {
        guard state == .waiting else { return .none }
        state = .lookingUp
        return .lookUp
    }

    /// The upstreams answered: `records` are the answers to share (fresh, positive or negative).
    public mutating func upstreamAnswered(_ records: [FleetCacheRecord]) -> Action {
        guard case .querying(let holding) = state else { return .none }
        state = .finished
        return .publish(records, releasingLock: holding ? token : nil)
    }

    /// The upstreams failed: release the lock so another machine may try.
    public mutating func upstreamFailed() -> Action {
        guard case .querying(let holding) = state else { return .none }
        state = .finished
        return holding ? .releaseLock(token: token) : .finished
    }
}
