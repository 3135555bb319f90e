/// Each uid's rate of new upstream queries: a token bucket per uid, `burst` deep, refilled at
/// `perSecond`. A resolve that needs a query past it is refused with the time until the next
/// token, so one user's flood of distinct names can neither burn a billed HTTPDNS quota nor
/// churn the cache for everyone. Joining a query already running, and cache hits, cost nothing.
///
/// Time is given; one thread owns an instance. Memory is bounded: buckets that have refilled
/// are forgotten (a full bucket is what a new uid starts with).
public struct UpstreamQueryRate: Sendable, Equatable {
    /// Tokens a uid gains per second.
    public var perSecond: Int
    /// Tokens a uid may hold (its burst).
    public var burst: Int

    private struct Bucket: Sendable, Equatable {
        /// Tokens, in millionths, at `updatedAt`.
        var micros: Int64
        var updatedAt: MonotonicInstant
    }

    private var buckets: [UInt32: Bucket] = [:]
    /// Above this many buckets the full ones are dropped before adding another.
    private static let pruneThreshold = 1_024

    /// At most a million a second and a million deep: beyond, no bound is meant (and the
    /// arithmetic in millionths stays far from overflowing).
    public init(perSecond: Int, burst: Int) {
        precondition(perSecond > 0 && burst > 0, "a rate needs room for at least one query")
        self.perSecond = min(perSecond, 1_000_000)
        self.burst = min(burst, 1_000_000)
    }

    /// Takes one token of `uid`'s at `now`: nil when taken, else the milliseconds until one is
    /// there (at least 1).
    public mutating func take(uid: UInt32, now: MonotonicInstant) -> Int? {
        var bucket = refilled(buckets[uid], now: now)
        guard bucket.micros >= 1_000_000 else {
            let missing = 1_000_000 - bucket.micros
            // Micro-tokens accrue at perSecond per microsecond: missing / perSecond microseconds.
            let waitMicros = (missing + Int64(perSecond) - 1) / Int64(perSecond)
            return Int(max(1, (waitMicros + 999) / 1_000))
        }
        bucket.micros -= 1_000_000
        if buckets[uid] == nil, buckets.count >= Self.pruneThreshold { dropFull(now: now) }
        buckets[uid] = bucket
        return nil
    }

    /// Gives back a token taken for a query that was not made after all.
    public mutating func refund(uid: UInt32) {
        guard var bucket = buckets[uid] else { return }
        bucket.micros = min(bucket.micros + 1_000_000, capacityMicros)
        buckets[uid] = bucket
    }

    /// Buckets held (uids that used tokens recently).
    public var trackedUsers: Int { buckets.count }

    private var capacityMicros: Int64 { Int64(burst) * 1_000_000 }

    private func refilled(_ bucket: Bucket?, now: MonotonicInstant) -> Bucket {
        guard let bucket else { return Bucket(micros: capacityMicros, updatedAt: now) }
        let elapsed = max(0, now.nanoseconds(since: bucket.updatedAt)) / 1_000
        let (gained, overflow) = elapsed.multipliedReportingOverflow(by: Int64(perSecond))
        let micros = overflow || gained >= capacityMicros - bucket.micros ? capacityMicros : bucket.micros + gained
        return Bucket(micros: micros, updatedAt: now)
    }

    private mutating func dropFull(now: MonotonicInstant) {
        let capacity = capacityMicros
        buckets = buckets.filter { refilled($0.value, now: now).micros < capacity }
    }
}
