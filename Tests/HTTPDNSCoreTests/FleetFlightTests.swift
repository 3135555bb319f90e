import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// The per-name lock and wait policy of the shared cache.
struct FleetFlightTests {
    static let t0 = MonotonicInstant(seconds: 100)
    static let timing = FleetCacheFlight.Timing(timeoutMs: 2_000)

    static func record(_ family: IPFamily = .ipv4) -> FleetCacheRecord {
        FleetCacheRecord(
            host: "a.example", family: family, addresses: family == .ipv4 ? ["192.0.2.1"] : ["2001:db8::1"],
            negative: false, expiresAtUnixMs: 60_000)
    }

    static func hit(_ family: IPFamily = .ipv4) -> FleetCacheHit {
        FleetCacheHit(record: record(family), millisecondsLeft: 30_000)
    }

    static func flight(_ families: [IPFamily] = [.ipv4]) -> FleetCacheFlight {
        FleetCacheFlight(host: "a.example", families: families, token: "t1", timing: timing, now: t0)
    }

    @Test func defaultTimings() {
        #expect(Self.timing.upstreamReserveMs == 1_000)
        #expect(Self.timing.lockLifetimeMs == 2_500)
    }

    @Test func aFleetHitAnswersAtOnce() {
        var flight = Self.flight()
        #expect(flight.start() == .lookUp)
        #expect(flight.lookedUp([.ipv4: Self.hit()], now: Self.t0) == .answer([Self.hit()]))
        #expect(flight.isFinished)
        #expect(flight.start() == .none)
    }

    @Test func theFirstMachineTakesTheLockQueriesAndPublishes() {
        var flight = Self.flight([.ipv4, .ipv6])
        _ = flight.start()
        // A partial answer does not do: both families are needed.
        #expect(flight.lookedUp([.ipv4: Self.hit()], now: Self.t0) == .acquireLock(token: "t1", lifetimeMs: 2_500))
        // Holding the lock, it looks once more: still nothing, so it asks the upstreams.
        #expect(flight.lockAcquired() == .lookUp)
        #expect(flight.holdsLock)
        #expect(flight.lookedUp([.ipv4: Self.hit()], now: Self.t0) == .queryUpstream)
        #expect(flight.holdsLock)
        #expect(
            flight.upstreamAnswered([Self.record(.ipv4), Self.record(.ipv6)])
                == .publish([Self.record(.ipv4), Self.record(.ipv6)], releasingLock: "t1"))
        #expect(flight.isFinished)
    }

    @Test func othersWaitForTheHoldersAnswer() {
        var flight = Self.flight()
        _ = flight.start()
        _ = flight.lookedUp([:], now: Self.t0)
        #expect(flight.lockBusy(now: Self.t0) == .wait(milliseconds: 10))
        #expect(flight.waited() == .lookUp)
        #expect(
            flight.lookedUp([:], now: Self.t0.advanced(byMilliseconds: 10))
                == .acquireLock(token: "t1", lifetimeMs: 2_500))
        #expect(flight.lockBusy(now: Self.t0.advanced(byMilliseconds: 11)) == .wait(milliseconds: 20))
        #expect(flight.waited() == .lookUp)
        // The holder published: the waiter serves it from the fleet.
        #expect(
            flight.lookedUp([.ipv4: Self.hit()], now: Self.t0.advanced(byMilliseconds: 40)) == .answer([Self.hit()]))
    }

    @Test func pollingBacksOffToItsCeilingAndStopsAtTheReserve() {
        var flight = Self.flight()
        _ = flight.start()
        var now = Self.t0
        var pauses: [Int] = []
        var action = flight.lookedUp([:], now: now)
        while true {
            #expect(action == .acquireLock(token: "t1", lifetimeMs: 2_500))
            let busy = flight.lockBusy(now: now)
            guard case .wait(let pause) = busy else {
                #expect(busy == .queryUpstream)
                break
            }
            pauses.append(pause)
            now = now.advanced(byMilliseconds: pause)
            #expect(flight.waited() == .lookUp)
            action = flight.lookedUp([:], now: now)
        }
        #expect(Array(pauses.prefix(5)) == [10, 20, 40, 80, 100])
        // Gave up waiting exactly when only the reserve was left, and without the lock.
        #expect(now == Self.t0.advanced(byMilliseconds: 1_000))
        #expect(!flight.holdsLock)
        #expect(flight.upstreamAnswered([Self.record()]) == .publish([Self.record()], releasingLock: nil))
    }

    @Test func aLockFreedWithoutAnAnswerIsTakenOver() {
        var flight = Self.flight()
        _ = flight.start()
        _ = flight.lookedUp([:], now: Self.t0)
        _ = flight.lockBusy(now: Self.t0)
        _ = flight.waited()
        // The holder failed and released: nothing published, the lock is free.
        #expect(flight.lookedUp([:], now: Self.t0) == .acquireLock(token: "t1", lifetimeMs: 2_500))
        #expect(flight.lockAcquired() == .lookUp)
        // Redis fails the second look: the holder still queries (and holds the lock).
        #expect(flight.lookupFailed() == .queryUpstream)
        #expect(flight.upstreamFailed() == .releaseLock(token: "t1"))
    }

    @Test func anAnswerPublishedJustBeforeTheLockWasTakenIsServed() {
        var flight = Self.flight()
        _ = flight.start()
        // Missed: the holder published and released between this lookup and the SET NX.
        _ = flight.lookedUp([:], now: Self.t0)
        #expect(flight.lockAcquired() == .lookUp)
        #expect(
            flight.lookedUp([.ipv4: Self.hit()], now: Self.t0)
                == .answerReleasingLock([Self.hit()], token: "t1"))
        #expect(flight.isFinished)
    }

    @Test func redisFailuresGoStraightToTheUpstreams() {
        var lookup = Self.flight()
        _ = lookup.start()
        #expect(lookup.lookupFailed() == .queryUpstream)
        #expect(lookup.upstreamFailed() == .finished)
        var lock = Self.flight()
        _ = lock.start()
        _ = lock.lookedUp([:], now: Self.t0)
        #expect(lock.lockFailed() == .queryUpstream)
        #expect(lock.upstreamAnswered([]) == .publish([], releasingLock: nil))
    }

    @Test func eventsOutOfPlaceAreIgnored() {
        var flight = Self.flight()
        #expect(flight.lockAcquired() == .none)
        #expect(flight.waited() == .none)
        #expect(flight.upstreamAnswered([]) == .none)
        _ = flight.start()
        #expect(flight.lockBusy(now: Self.t0) == .none)
        #expect(flight.upstreamFailed() == .none)
    }
}

/// One log line per change of condition, and the status shape.
struct FleetHealthTests {
    @Test func logsOncePerStateChange() {
        var health = FleetHealth(nowUnix: 1_000)
        #expect(health.condition == .connecting)
        #expect(health.observe(.readSucceeded, nowUnix: 1_001)?.message == "fleet: connected to Redis")
        #expect(health.observe(.writeSucceeded, nowUnix: 1_002) == nil)
        let down = health.observe(.failed(.unreachable, detail: "unix:/r.sock: Connection refused"), nowUnix: 1_010)
        #expect(down?.priority == .warning)
        #expect(down?.message.contains("unix:/r.sock: Connection refused") == true)
        // An hour of failing requests: no more lines.
        for second in 1_011..<1_100 {
            #expect(
                health.observe(
                    .failed(.unreachable, detail: "unix:/r.sock: Connection timed out"), nowUnix: Int64(second)) == nil)
        }
        #expect(health.lastStateChange == 1_010)
        #expect(health.lastError == "unix:/r.sock: Connection timed out")
        #expect(health.observe(.readSucceeded, nowUnix: 1_200)?.message.contains("is back (was unreachable)") == true)
        #expect(health.lastStateChange == 1_200)
        #expect(
            health.observe(.failed(.authenticationFailed, detail: "AUTH failed: wrong password"), nowUnix: 1_300)?
                .priority == .error)
    }

    @Test func resultsOvertakenByTheLastChangeAreIgnored() {
        var health = FleetHealth(nowUnix: 0)
        _ = health.observe(.readSucceeded, nowUnix: 1, startedAtMs: 0, endedAtMs: 10)
        // The stream's connection sees the server go (an operation that ended at 50)...
        #expect(
            health.observe(.failed(.unreachable, detail: "gone"), nowUnix: 2, startedAtMs: 40, endedAtMs: 50) != nil)
        // ...and a command that had succeeded just before reaches the loop afterwards: stale.
        #expect(health.observe(.writeSucceeded, nowUnix: 2, startedAtMs: 44, endedAtMs: 45) == nil)
        #expect(health.condition == .unreachable)
        // Back (a success that ended at 200); a failure of an attempt begun during the outage is stale.
        #expect(health.observe(.readSucceeded, nowUnix: 3, startedAtMs: 190, endedAtMs: 200) != nil)
        #expect(
            health.observe(.failed(.unreachable, detail: "old"), nowUnix: 3, startedAtMs: 150, endedAtMs: 210) == nil)
        #expect(health.condition == .connected)
        // A failure of an attempt begun after the recovery counts.
        #expect(
            health.observe(.failed(.unreachable, detail: "new"), nowUnix: 4, startedAtMs: 220, endedAtMs: 230) != nil)
    }

    @Test func aFullRedisStaysFullUntilAWriteWorks() {
        var health = FleetHealth(nowUnix: 0)
        _ = health.observe(.writeSucceeded, nowUnix: 1)
        #expect(
            health.observe(.failed(.full, detail: "OOM command not allowed"), nowUnix: 2)?.message.contains("full")
                == true)
        for _ in 0..<10 { #expect(health.observe(.readSucceeded, nowUnix: 3) == nil) }
        #expect(health.condition == .full)
        #expect(health.status(outbox: 0).connected)
        #expect(health.observe(.writeSucceeded, nowUnix: 4) != nil)
        #expect(health.condition == .connected)
    }

    @Test func rejectedEntriesAreCountedAndLoggedOnce() {
        var health = FleetHealth(nowUnix: 0)
        #expect(health.entryRejected("failed to open")?.message.contains("another fleet key") == true)
        for _ in 0..<9 { #expect(health.entryRejected("failed to open") == nil) }
        #expect(health.rejected == 10)
    }

    /// The `status.fleet` member as the daemon writes it.
    static func text(_ status: FleetStatus) -> String {
        var out = JSONOutput()
        status.member.write(to: &out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    @Test func statusShape() {
        var health = FleetHealth(nowUnix: 1_767_225_600)
        #expect(
            Self.text(health.status(outbox: 0))
                == #"{"connected":false,"state":"connecting","lastError":null,"lastStateChange":1767225600,"#
                + #""lag":null,"outbox":0,"rejected":0}"#)
        _ = health.observe(.failed(.unreachable, detail: "x: refused"), nowUnix: 1_767_225_700)
        _ = health.entryRejected("bad")
        health.noteLag(milliseconds: 12)
        #expect(
            Self.text(health.status(outbox: 3))
                == #"{"connected":false,"state":"unreachable","lastError":"x: refused","lastStateChange":1767225700,"#
                + #""lag":0.012,"outbox":3,"rejected":1}"#)
    }
}
