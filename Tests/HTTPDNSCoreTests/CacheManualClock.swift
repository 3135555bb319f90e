import HTTPDNSCore

/// A hand-driven pair of clocks for cache tests: monotonic time plus a wall clock that can be
/// moved independently (as across a restart). Starts at a non-zero point so that arithmetic
/// around the origin is not special.
struct CacheManualClock {
    var now = MonotonicInstant(seconds: 1_000)
    var wallNow: Int64 = 1_700_000_000

    mutating func advance(seconds: Int) {
        now = now.advanced(bySeconds: seconds)
        wallNow += Int64(seconds)
    }

    mutating func advance(milliseconds: Int) {
        now = now.advanced(byMilliseconds: milliseconds)
    }
}
