import HTTPDNSCore
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

@testable import HTTPDNSServer

/// Log lines are rate-limited per cause: one line per cause per interval, the next one written
/// counts those left out; a cause is the call site unless named.
struct LogRateLimiterTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    static func logger(_ clock: ManualClock) -> (Logger, Lines) {
        let lines = Lines()
        let limiter = LogRateLimiter(intervalMilliseconds: 5_000, clock: clock)
        let logger = Logger(threshold: .debug, rateLimiter: limiter) { _, line in
            lines.lines.withLock { $0.append(line) }
        }
        return (logger, lines)
    }

    @Test func oneLinePerCausePerIntervalWithACountOfTheRest() {
        let clock = ManualClock()
        let (logger, lines) = Self.logger(clock)
        for i in 0..<300 { logger.warning("Closing connection \(i)") }
        #expect(lines.all == ["Closing connection 0"])
        clock.advance(milliseconds: 4_999)
        logger.warning("still within", cause: "x")
        for i in 0..<3 { logger.warning("Closing connection \(i)", cause: "trim") }
        #expect(lines.all == ["Closing connection 0", "still within", "Closing connection 0"])
        clock.advance(milliseconds: 5_001)
        for i in 300..<302 { logger.warning("Closing connection \(i)", cause: "trim") }
        #expect(lines.all.last == "Closing connection 300 (2 more like it suppressed)")
    }

    @Test func causesAreCountedApart() {
        let clock = ManualClock()
        let (logger, lines) = Self.logger(clock)
        for _ in 0..<5 {
            logger.warning("name failed")
            logger.error("store failed")
        }
        #expect(lines.all == ["name failed", "store failed"])
        clock.advance(milliseconds: 6_000)
        logger.notice("fleet: Redis is back", cause: "fleet: Redis is back")
        logger.notice("fleet: Redis unreachable", cause: "fleet: Redis unreach")
        #expect(lines.all.suffix(2) == ["fleet: Redis is back", "fleet: Redis unreachable"])
    }

    @Test func withoutALimiterEveryLineIsWritten() {
        let lines = Lines()
        let logger = Logger(threshold: .debug, rateLimiter: nil) { _, line in lines.lines.withLock { $0.append(line) } }
        for i in 0..<3 { logger.info("line \(i)") }
        #expect(lines.all.count == 3)
    }

    /// The table of causes is bounded: a flood of distinct named causes forgets the oldest.
    @Test func theCausesRememberedAreBounded() {
        let clock = ManualClock()
        let limiter = LogRateLimiter(clock: clock)
        for i in 0..<(LogRateLimiter.maxCauses * 3) { _ = limiter.admit("cause \(i)") }
        #expect(limiter.admit("cause 0") == .write(suppressed: 0), "forgotten, so written again")
    }
}
