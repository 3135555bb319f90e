import HTTPDNSSystem
import Synchronization

/// Per-cause log rate limiting, as journald's `RateLimitIntervalSec=` and the kernel's
/// `printk_ratelimit` do: at most `burst` lines of one cause per interval; the lines past it
/// are counted, and the next line of that cause written says how many were left out.
///
/// A cause is where a line comes from (its call site) unless the caller names one, so an
/// attack that makes the daemon warn once per connection or per name writes one line per
/// interval, and one noisy cause never silences another. Thread-safe: the store and fleet
/// threads log too.
public final class LogRateLimiter: Sendable {
    /// What `admit` decided about one line.
    public enum Decision: Equatable, Sendable {
        /// Write it; `suppressed` lines of its cause were left out since the last one written.
        case write(suppressed: Int)
        /// Leave it out (it is counted).
        case suppress
    }

    private struct Window {
        var start: Int64
        var written: Int
        var suppressed: Int
        /// When the window was opened, among all causes (the oldest is forgotten first).
        var order: UInt64
    }

    private struct Table {
        var windows: [String: Window] = [:]
        var opened: UInt64 = 0
    }

    public let intervalNanoseconds: Int64
    public let burst: Int
    /// Causes remembered at once: past it the oldest window is forgotten (its cause starts afresh).
    static let maxCauses = 256
    private let clock: any DaemonClock & Sendable
    private let table = Mutex(Table())

    /// Five seconds and one line by default, printk_ratelimit's interval.
    public init(
        intervalMilliseconds: Int64 = 5_000, burst: Int = 1, clock: any DaemonClock & Sendable = SystemClock()
    ) {
        intervalNanoseconds = intervalMilliseconds * 1_000_000
        self.burst = max(1, burst)
        self.clock = clock
    }

    /// Decides whether a line of `cause` is written now.
    public func admit(_ cause: String) -> Decision {
        let now = clock.nowNanoseconds()
        return table.withLock { table in
            if var window = table.windows[cause], now - window.start < intervalNanoseconds {
                guard window.written < burst else {
                    window.suppressed += 1
                    table.windows[cause] = window
                    return .suppress
                }
                window.written += 1
                table.windows[cause] = window
                return .write(suppressed: 0)
            }
            let suppressed = table.windows[cause]?.suppressed ?? 0
            if table.windows[cause] == nil && table.windows.count >= Self.maxCauses,
                let oldest = table.windows.min(by: { $0.value.order < $1.value.order })?.key
            {
                table.windows[oldest] = nil
            }
            table.opened += 1
            table.windows[cause] = Window(start: now, written: 1, suppressed: 0, order: table.opened)
            return .write(suppressed: suppressed)
        }
    }
}
