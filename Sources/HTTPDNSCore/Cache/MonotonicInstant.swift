/// A point on the monotonic clock (CLOCK_MONOTONIC), in nanoseconds since an arbitrary origin.
///
/// TTL arithmetic uses this instead of wall-clock time so that a clock step (NTP, a user setting
/// the date) never makes a cached answer live longer or die early. The daemon reads the clock and
/// passes the instant in; tests pass a manual one. Arithmetic saturates instead of trapping, so an
/// "infinite" duration from the configuration is safe to add.
public struct MonotonicInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Nanoseconds since the clock's origin (boot for CLOCK_MONOTONIC). May be negative for an
    /// instant restored from before this boot.
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    public init(seconds: Int64) {
        self.nanoseconds = Self.saturatingMultiply(seconds, Self.nanosecondsPerSecond)
    }

    static let nanosecondsPerSecond: Int64 = 1_000_000_000
    static let nanosecondsPerMillisecond: Int64 = 1_000_000

    /// The instant `seconds` later (earlier when negative).
    public func advanced(bySeconds seconds: Int) -> MonotonicInstant {
        advanced(byNanoseconds: Self.saturatingMultiply(Int64(seconds), Self.nanosecondsPerSecond))
    }

    /// The instant `milliseconds` later (earlier when negative).
    public func advanced(byMilliseconds milliseconds: Int) -> MonotonicInstant {
        advanced(byNanoseconds: Self.saturatingMultiply(Int64(milliseconds), Self.nanosecondsPerMillisecond))
    }

    /// The instant `delta` nanoseconds later (earlier when negative).
    public func advanced(byNanoseconds delta: Int64) -> MonotonicInstant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(delta)
        if overflow { return MonotonicInstant(nanoseconds: delta > 0 ? .max : .min) }
        return MonotonicInstant(nanoseconds: sum)
    }

    /// Nanoseconds from `earlier` to `self` (negative when `earlier` is later), saturating.
    public func nanoseconds(since earlier: MonotonicInstant) -> Int64 {
        let (difference, overflow) = nanoseconds.subtractingReportingOverflow(earlier.nanoseconds)
        if overflow { return earlier.nanoseconds < 0 ? .max : .min }
        return difference
    }

    /// Whole seconds from `self` until `later`, rounded up: an answer with 300 ms left still has
    /// "1 second" to live, never 0 (which callers read as expired).
    public func secondsRoundedUp(until later: MonotonicInstant) -> Int64 {
        let delta = later.nanoseconds(since: self)
        if delta <= 0 { return 0 }
        return delta / Self.nanosecondsPerSecond + (delta % Self.nanosecondsPerSecond == 0 ? 0 : 1)
    }

    /// `instant + seconds`: the instant that many seconds later.
    public static func + (instant: MonotonicInstant, seconds: Int) -> MonotonicInstant {
        instant.advanced(bySeconds: seconds)
    }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    public var description: String { "\(nanoseconds)ns" }

    private static func saturatingMultiply(_ value: Int64, _ factor: Int64) -> Int64 {
        let (product, overflow) = value.multipliedReportingOverflow(by: factor)
        if overflow { return (value < 0) != (factor < 0) ? .min : .max }
        return product
    }
}
