/// The health of one upstream as `status` reports it, and whether to try it now.
///
/// After a failure the upstream is skipped for a backoff that doubles with each consecutive
/// failure (1 s, 2 s, 4 s ... capped at 60 s) so a dead resolver does not cost every request a
/// timeout; one success clears it. Failures are counted per owner of the query that met them:
/// however many one uid causes, they count once, so no user can push an upstream's backoff for
/// everyone. `tryOrder` never leaves a request with nothing to try: when every upstream is
/// backing off, all of them are tried anyway.
public struct UpstreamHealth: Sendable, Equatable {
    /// The first backoff after a failure, in seconds.
    public static let initialBackoff = 1
    /// The longest backoff, in seconds: a recovered upstream is noticed within a minute.
    public static let maximumBackoff = 60
    /// Longest error text kept; status lines stay one short line.
    static let maximumErrorLength = 200

    /// Failures since the last success.
    public private(set) var consecutiveFailures = 0
    /// The most recent failure, kept after recovery so an operator can still see what went wrong.
    public private(set) var lastError: String?
    /// Smoothed request latency in milliseconds (RFC 6298's SRTT with alpha = 1/8), nil until the
    /// first success.
    public private(set) var latencyMs: Int?
    /// Until when the upstream is skipped; nil when it is not backing off.
    public private(set) var retryAt: MonotonicInstant?
    /// Queries it answered since start.
    public private(set) var answered = 0
    /// Whose failures counted since the last success.
    private var blamed: Set<FlightOwner> = []
    /// Until when the service refuses the account itself (`UpstreamError.isAccountLevel`): no
    /// query goes to it, not even when every other upstream backs off.
    public private(set) var unusableUntil: MonotonicInstant?

    /// How long an account refusal keeps an upstream unused: the SDKs cache such an answer for
    /// an hour.
    public static let accountRefusalSeconds = 3_600

    public init() {}

    /// True until a failure, and again after the next success.
    public var healthy: Bool { consecutiveFailures == 0 }

    /// The backoff after `failures` consecutive failures: 2^(failures-1) seconds, capped.
    public static func backoff(afterFailures failures: Int) -> Int {
        guard failures > 0 else { return 0 }
        // 2^6 = 64 > 60, so a shift of 6 already reaches the cap; larger ones would overflow.
        let exponent = min(failures - 1, 6)
        return min(initialBackoff << exponent, maximumBackoff)
    }

    /// Whether the upstream is outside its backoff at `now`.
    public func shouldTry(now: MonotonicInstant) -> Bool {
        guard let retryAt else { return true }
        return now >= retryAt
    }

    /// Whether the service refused the account less than `accountRefusalSeconds` ago.
    public func isUnusable(now: MonotonicInstant) -> Bool {
        guard let unusableUntil else { return false }
        return now < unusableUntil
    }

    /// The service refused the account (`error` names its code): no query for an hour, whoever
    /// asks.
    public mutating func recordAccountRefusal(_ error: String, now: MonotonicInstant) {
        lastError = Self.oneLine(error)
        consecutiveFailures += 1
        unusableUntil = now + Self.accountRefusalSeconds
        retryAt = unusableUntil
    }

    /// A request succeeded in `latencyMs` milliseconds: clears the backoff.
    public mutating func recordSuccess(latencyMs sample: Int, now: MonotonicInstant) {
        consecutiveFailures = 0
        retryAt = nil
        answered += 1
        blamed.removeAll()
        let sample = max(sample, 0)
        if let smoothed = latencyMs {
            latencyMs = smoothed + (sample - smoothed) / 8
        } else {
            latencyMs = sample
        }
    }

    /// A request of `owner`'s failed with `error` (a one-line description that must not contain
    /// a secret, such as an `UpstreamError` description): starts or lengthens the backoff, unless
    /// a failure of `owner`'s already counted since the last success.
    public mutating func recordFailure(_ error: String, by owner: FlightOwner, now: MonotonicInstant) {
        lastError = Self.oneLine(error)
        guard blamed.insert(owner).inserted else { return }
        consecutiveFailures += 1
        retryAt = now + Self.backoff(afterFailures: consecutiveFailures)
    }

    /// Indices of `upstreams` to try, in configured order: those not backing off; when that
    /// leaves none, every upstream (never refuse to try everything).
    public static func tryOrder(_ upstreams: [UpstreamHealth], now: MonotonicInstant) -> [Int] {
        tryOrder(upstreams, among: Array(upstreams.indices), now: now)
    }

    /// `tryOrder` within `candidates` (indices into `upstreams`, in their order): a name's route
    /// is never left, even when every upstream of it is backing off.
    public static func tryOrder(_ upstreams: [UpstreamHealth], among candidates: [Int], now: MonotonicInstant)
        -> [Int]
    {
        let usable = candidates.filter { !upstreams[$0].isUnusable(now: now) }
        let ready = usable.filter { upstreams[$0].shouldTry(now: now) }
        return ready.isEmpty ? usable : ready
    }

    /// Control characters become spaces and long text is cut, so the error fits a status line.
    private static func oneLine(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars.prefix(maximumErrorLength) {
            result.unicodeScalars.append(scalar.properties.generalCategory == .control ? " " : scalar)
        }
        return result
    }
}
