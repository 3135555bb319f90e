import Glibc

/// The daemon's one source of time, injected: the event loop's timers and every service read it,
/// so an in-process test moves time by hand (`ManualClock` in HTTPDNSTestSupport) and never sleeps.
///
/// Two scales, read together: monotonic time for TTLs, deadlines and timers (a clock step must
/// not make an answer live longer or a deadline end early), wall time for what outlives the
/// process or crosses machines (cookie expiry, persisted and fleet deadlines).
///
/// Sendable: the upstream workers read the same clock as the loop (for an exchange's own
/// timeouts and request signatures).
public protocol DaemonClock: AnyObject, Sendable {
    /// Nanoseconds on a monotonic scale (CLOCK_MONOTONIC; only differences mean anything).
    func nowNanoseconds() -> Int64
    /// Unix time in milliseconds (CLOCK_REALTIME).
    func wallMilliseconds() -> Int64
}

extension DaemonClock {
    /// Unix time in whole seconds (cookie expiry).
    public func wallSeconds() -> Int64 { wallMilliseconds() / 1000 }
    /// Milliseconds on the monotonic scale.
    public func monotonicMilliseconds() -> Int64 { nowNanoseconds() / 1_000_000 }
}

/// The kernel's clocks: what the daemon runs on outside tests.
public final class SystemClock: DaemonClock, Sendable {
    public init() {}
    public func nowNanoseconds() -> Int64 { MonotonicClock.nowNanoseconds() }
    public func wallMilliseconds() -> Int64 { WallClock.nowMilliseconds() }
}

/// CLOCK_MONOTONIC, read directly: for code outside the daemon's services (clients, harnesses).
public enum MonotonicClock {
    public static func nowNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    public static func nowMilliseconds() -> Int64 { nowNanoseconds() / 1_000_000 }
}

/// Wall-clock Unix time, read directly: for code outside the daemon's services.
public enum WallClock {
    public static func nowSeconds() -> Int64 { nowMilliseconds() / 1000 }

    public static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
