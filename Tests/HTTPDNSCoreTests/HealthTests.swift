import HTTPDNSCore
import Testing

struct HealthTests {
    @Test func startsHealthyAndTryable() {
        let health = UpstreamHealth()
        #expect(health.healthy)
        #expect(health.lastError == nil)
        #expect(health.latencyMs == nil)
        #expect(health.shouldTry(now: CacheManualClock().now))
    }

    @Test func backoffDoublesFromOneSecondUpToSixty() {
        let expected = [1, 2, 4, 8, 16, 32, 60, 60, 60]
        #expect((1...9).map { UpstreamHealth.backoff(afterFailures: $0) } == expected)
        #expect(UpstreamHealth.backoff(afterFailures: 1_000) == 60)
        #expect(UpstreamHealth.backoff(afterFailures: .max) == 60)
    }

    @Test func failuresAreSkippedForTheBackoff() {
        var clock = CacheManualClock()
        var health = UpstreamHealth()
        for (uid, expectedBackoff) in [1, 2, 4, 8, 16, 32, 60, 60].enumerated() {
            health.recordFailure("HTTP status 500", by: .user(UInt32(uid)), now: clock.now)
            #expect(!health.healthy)
            #expect(!health.shouldTry(now: clock.now))
            clock.advance(milliseconds: expectedBackoff * 1_000 - 1)
            #expect(!health.shouldTry(now: clock.now))
            clock.advance(milliseconds: 1)
            #expect(health.shouldTry(now: clock.now))
        }
        #expect(health.consecutiveFailures == 8)
        #expect(health.lastError == "HTTP status 500")
    }

    @Test func successClearsBackoffButKeepsLastError() {
        let clock = CacheManualClock()
        var health = UpstreamHealth()
        health.recordFailure("timed out", by: .user(1), now: clock.now)
        health.recordFailure("timed out", by: .daemon, now: clock.now)
        #expect(UpstreamHealth.backoff(afterFailures: health.consecutiveFailures + 1) == 4)
        health.recordSuccess(latencyMs: 40, now: clock.now)
        #expect(health.healthy)
        #expect(health.shouldTry(now: clock.now))
        #expect(health.lastError == "timed out")
        #expect(UpstreamHealth.backoff(afterFailures: health.consecutiveFailures + 1) == 1)
        health.recordFailure("closed", by: .user(1), now: clock.now)
        #expect(!health.shouldTry(now: clock.now.advanced(byMilliseconds: 999)))
        #expect(health.shouldTry(now: clock.now + 1))
    }

    /// However many failures one uid causes, they count once: its own flood can make an upstream
    /// back off for one second, never push the backoff further for everyone.
    @Test func oneOwnersFailuresCountOnce() {
        var clock = CacheManualClock()
        var health = UpstreamHealth()
        for _ in 0..<50 { health.recordFailure("HTTP status 502", by: .user(65534), now: clock.now) }
        #expect(health.consecutiveFailures == 1)
        #expect(health.lastError == "HTTP status 502")
        clock.advance(seconds: 1)
        #expect(health.shouldTry(now: clock.now))
        health.recordFailure("HTTP status 503", by: .user(65534), now: clock.now)
        #expect(health.shouldTry(now: clock.now), "the same uid again moved nothing")
        #expect(health.lastError == "HTTP status 503")
        health.recordFailure("HTTP status 503", by: .user(0), now: clock.now)
        #expect(health.consecutiveFailures == 2)
        #expect(!health.shouldTry(now: clock.now.advanced(byMilliseconds: 1_999)))
        health.recordSuccess(latencyMs: 5, now: clock.now)
        health.recordFailure("HTTP status 502", by: .user(65534), now: clock.now)
        #expect(health.consecutiveFailures == 1, "a success starts a new count")
    }

    @Test func latencyIsSmoothedWithAnEighthWeight() {
        let clock = CacheManualClock()
        var health = UpstreamHealth()
        health.recordSuccess(latencyMs: 80, now: clock.now)
        #expect(health.latencyMs == 80)
        health.recordSuccess(latencyMs: 160, now: clock.now)
        #expect(health.latencyMs == 90)  // 80 + (160 - 80) / 8
    }

    @Test func errorTextIsOneShortLine() throws {
        let clock = CacheManualClock()
        var health = UpstreamHealth()
        health.recordFailure("bad\nbody\r\t" + String(repeating: "x", count: 1_000), by: .daemon, now: clock.now)
        let error = try #require(health.lastError)
        #expect(!error.contains("\n") && !error.contains("\r") && !error.contains("\t"))
        #expect(error.hasPrefix("bad body"))
        #expect(error.count == 200)
    }

    @Test func tryOrderSkipsBackedOffUpstreamsButNeverAll() {
        var clock = CacheManualClock()
        var upstreams = [UpstreamHealth(), UpstreamHealth(), UpstreamHealth()]
        #expect(UpstreamHealth.tryOrder(upstreams, now: clock.now) == [0, 1, 2])
        upstreams[0].recordFailure("down", by: .daemon, now: clock.now)
        #expect(UpstreamHealth.tryOrder(upstreams, now: clock.now) == [1, 2])
        upstreams[1].recordFailure("down", by: .daemon, now: clock.now)
        upstreams[2].recordFailure("down", by: .daemon, now: clock.now)
        #expect(UpstreamHealth.tryOrder(upstreams, now: clock.now) == [0, 1, 2])
        clock.advance(seconds: 1)
        upstreams[1].recordFailure("down again", by: .user(7), now: clock.now)  // backoff 2 s
        #expect(UpstreamHealth.tryOrder(upstreams, now: clock.now) == [0, 2])
        #expect(UpstreamHealth.tryOrder([], now: clock.now) == [])
    }
}
