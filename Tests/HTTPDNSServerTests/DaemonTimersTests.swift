import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// The daemon's own timers on a loop the test drives, on the manual clock.
struct DaemonTimersTests {
    final class Driven {
        let clock = ManualClock()
        let loop: EventLoop

        init() throws { loop = try EventLoop(clock: clock) }

        func advance(milliseconds: Int64) {
            clock.advance(milliseconds: milliseconds)
            loop.runTurn(maxWaitMilliseconds: 0)
        }
    }

    /// WATCHDOG_USEC=400000: a pet at once, then one every 200 ms of the loop's clock, none between.
    @Test func theWatchdogIsPettedEveryHalfInterval() throws {
        let driven = try Driven()
        var pets = 0
        let watchdog = WatchdogPets(loop: driven.loop, watchdogMicroseconds: 400_000) { pets += 1 }
        watchdog.start()
        #expect(pets == 1)
        driven.advance(milliseconds: 199)
        #expect(pets == 1)
        driven.advance(milliseconds: 1)
        #expect(pets == 2)
        for _ in 0..<5 { driven.advance(milliseconds: 200) }
        #expect(pets == 7)
    }

    final class Idle {
        let driven: Driven
        let periodMilliseconds: Int64
        var connections = 0
        var quiescent = true
        var stopped = 0
        lazy var exit = IdleExit(
            loop: driven.loop, periodMilliseconds: periodMilliseconds,
            connectionCount: { [unowned self] in connections }, isQuiescent: { [unowned self] in quiescent },
            stop: { [unowned self] in stopped += 1 })

        init(periodMilliseconds: Int64 = 1_000) throws {
            driven = try Driven()
            self.periodMilliseconds = periodMilliseconds
        }

        func connections(_ count: Int) {
            connections = count
            exit.connectionCountChanged(count)
        }
    }

    /// The period runs only while no connection is open, and starts again from the last close.
    @Test func idleExitStopsAPeriodAfterTheLastConnectionClosed() throws {
        let idle = try Idle()
        idle.exit.arm()
        idle.driven.advance(milliseconds: 999)
        idle.connections(1)
        idle.driven.advance(milliseconds: 5_000)
        #expect(idle.stopped == 0 && !idle.exit.isArmed)
        idle.connections(0)
        idle.driven.advance(milliseconds: 999)
        #expect(idle.stopped == 0)
        idle.driven.advance(milliseconds: 1)
        #expect(idle.stopped == 1)
    }

    /// Work still running at the period's end (a commit, an upstream query) holds the exit for one
    /// more period.
    @Test func workInFlightHoldsIdleExitAnotherPeriod() throws {
        let idle = try Idle()
        idle.quiescent = false
        idle.exit.arm()
        idle.driven.advance(milliseconds: 1_000)
        #expect(idle.stopped == 0 && idle.exit.isArmed)
        idle.quiescent = true
        idle.driven.advance(milliseconds: 999)
        #expect(idle.stopped == 0)
        idle.driven.advance(milliseconds: 1)
        #expect(idle.stopped == 1)
    }

    /// Not socket activated (or `IdleExit=infinity`): never.
    @Test func aPeriodOfZeroNeverExits() throws {
        let idle = try Idle(periodMilliseconds: 0)
        idle.exit.arm()
        idle.connections(1)
        idle.connections(0)
        idle.driven.advance(milliseconds: 86_400_000)
        #expect(idle.stopped == 0 && !idle.exit.isArmed)
    }
}
