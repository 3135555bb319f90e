import CHTTPDNSShims
import Glibc

extension WallClock {
    /// Wall-clock Unix time in milliseconds, for deadlines shared between machines (fleet
    /// records carry absolute expiries).
    public static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
