/// Exponential backoff with jitter, for retrying Redis: 100 ms doubling up to 30 s, each
/// delay drawn uniformly from its upper half so that a fleet of daemons that lost Redis at the
/// same moment does not come back in lockstep.
public struct FleetBackoff: Sendable, Equatable {
    public let initialMilliseconds: Int
    public let maximumMilliseconds: Int
    private var attempts = 0

    public init(initialMilliseconds: Int = 100, maximumMilliseconds: Int = 30_000) {
        self.initialMilliseconds = max(1, initialMilliseconds)
        self.maximumMilliseconds = max(self.initialMilliseconds, maximumMilliseconds)
    }

    /// The delay before the next attempt; `random` is in [0, 1).
    public mutating func nextDelayMilliseconds(random: Double) -> Int {
        let shift = min(attempts, 30)
        attempts += 1
        let ceiling = min(maximumMilliseconds, initialMilliseconds << shift)
        let half = ceiling / 2
        return half + Int(Double(ceiling - half) * min(max(random, 0), 0.999_999))
    }

    /// After a success: the next failure starts again from the initial delay.
    public mutating func reset() { attempts = 0 }

    /// Failed attempts since the last success.
    public var failures: Int { attempts }
}
