import Glibc
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

/// The loop's turn: descriptors, timers on its clock, deferred work, turn-end handlers, and
/// results posted from other threads. Driven turn by turn, with a manual clock.
struct EventLoopTests {
    final class Recorder: EventHandler {
        var events: [UInt32] = []
        var onEvent: (UInt32) -> Void = { _ in }
        func handleEvents(_ events: UInt32) {
            self.events.append(events)
            onEvent(events)
        }
    }

    @Test func timersFireInDeadlineOrderOnTheLoopsClock() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var fired: [String] = []
        loop.schedule(afterMilliseconds: 300) { fired.append("c") }
        loop.schedule(afterMilliseconds: 100) { fired.append("a") }
        let cancelled = loop.schedule(afterMilliseconds: 150) { fired.append("cancelled") }
        loop.schedule(afterMilliseconds: 200) { fired.append("b") }
        loop.cancel(cancelled)
        loop.runTurn(maxWaitMilliseconds: 0)
        #expect(fired.isEmpty, "nothing is due before the clock moves")
        clock.advance(milliseconds: 250)
        loop.runTurn(maxWaitMilliseconds: 0)
        #expect(fired == ["a", "b"])
        clock.advance(milliseconds: 50)
        loop.runTurn(maxWaitMilliseconds: 0)
        #expect(fired == ["a", "b", "c"])
    }

    /// The loop remembers the first timer once it found it live; cancelling that one must make
    /// the wait follow the next live timer, not the cancelled deadline (which, past, would make
    /// every turn return at once).
    @Test func cancellingTheFirstTimerMovesTheWaitToTheNextLiveOne() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var fired: [String] = []
        let first = loop.schedule(afterMilliseconds: 20) { fired.append("cancelled") }
        loop.runTurn(maxWaitMilliseconds: 0)
        loop.cancel(first)
        loop.schedule(afterMilliseconds: 60_000) { fired.append("later") }
        clock.advance(milliseconds: 100)
        let started = MonotonicClock.nowNanoseconds()
        loop.runTurn(maxWaitMilliseconds: 300)
        let waitedMilliseconds = (MonotonicClock.nowNanoseconds() - started) / 1_000_000
        #expect(fired.isEmpty)
        #expect(waitedMilliseconds >= 250, "the turn waited \(waitedMilliseconds) ms, not for the live timer")
    }

    /// A timer re-armed on every request (a caller's deadline, a prefetch moved on) leaves its
    /// cancelled entry behind; the heap drops them once they outnumber the live timers, and the
    /// live ones still fire in order.
    @Test func cancelledTimersDoNotPileUpInTheHeap() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var fired: [Int] = []
        var live: EventLoop.TimerID?
        for round in 0..<10_000 {
            if let live { loop.cancel(live) }
            live = loop.schedule(afterMilliseconds: Int64(60_000 + round)) { fired.append(round) }
            #expect(
                loop.testsOnly_timerHeapCount <= 2 * 1 + 64 + 1,
                "round \(round): \(loop.testsOnly_timerHeapCount) entries")
        }
        var kept: [Int] = []
        for k in 0..<100 { loop.schedule(afterMilliseconds: Int64(1000 + k)) { kept.append(k) } }
        clock.advance(milliseconds: 200_000)
        loop.runTurn(maxWaitMilliseconds: 0)
        #expect(kept == Array(0..<100))
        #expect(fired == [9_999])
        #expect(loop.testsOnly_timerHeapCount == 0)
    }

    @Test func aReadableDescriptorIsHandledAndNowIsTheTurnsTime() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        let (a, b) = try socketPair()
        defer {
            a.close()
            b.close()
        }
        let recorder = Recorder()
        try loop.register(b, events: EpollEvents.readable, handler: recorder)
        clock.advance(milliseconds: 7)
        try a.writeAll([1])
        loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect(recorder.events.count == 1)
        #expect(recorder.events[0] & EpollEvents.readable != 0)
        #expect(loop.now == clock.nowNanoseconds())
        loop.unregister(b)
        try a.writeAll([2])
        loop.runTurn(maxWaitMilliseconds: 0)
        #expect(recorder.events.count == 1, "an unregistered descriptor is not reported")
    }

    /// A handler learns how many descriptors the turn found ready (a connection answers at once
    /// only when it is the only one).
    @Test func aTurnCountsTheDescriptorsFoundReady() throws {
        let loop = try EventLoop(clock: ManualClock())
        let pairs = try (0..<3).map { _ in try socketPair() }
        defer {
            for (a, b) in pairs {
                a.close()
                b.close()
            }
        }
        var seen: [Int] = []
        let recorder = Recorder()
        recorder.onEvent = { _ in seen.append(loop.readyThisTurn) }
        for (_, b) in pairs { try loop.register(b, events: EpollEvents.readable, handler: recorder) }
        try pairs[0].0.writeAll([1])
        loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect(seen == [1])
        try pairs[1].0.writeAll([1])
        try pairs[2].0.writeAll([1])
        seen.removeAll()
        loop.runTurn(maxWaitMilliseconds: 1_000)
        // The first descriptor still holds its byte: it is ready again.
        #expect(seen == [3, 3, 3])
        for (_, b) in pairs { loop.unregister(b) }
        loop.runTurn(maxWaitMilliseconds: 0)
        #expect(loop.readyThisTurn == 0)
    }

    /// The order within a turn: events, due timers, work deferred to this turn, the
    /// before-wait bodies (also those they add), then the turn-end handlers.
    @Test func aTurnRunsItsPhasesInOrder() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var order: [String] = []
        loop.onTurnEnd { order.append("end") }
        let (a, b) = try socketPair()
        defer {
            a.close()
            b.close()
        }
        let recorder = Recorder()
        recorder.onEvent = { _ in
            order.append("event")
            loop.runBeforeNextWait {
                order.append("before-wait")
                loop.runBeforeNextWait { order.append("before-wait 2") }
            }
            loop.runNextTurn { order.append("next turn") }
        }
        try loop.register(b, events: EpollEvents.readable, handler: recorder)
        loop.schedule(afterMilliseconds: 0) { order.append("timer") }
        try a.writeAll([1])
        loop.runTurn(maxWaitMilliseconds: 1_000)
        #expect(order == ["event", "timer", "before-wait", "before-wait 2", "end"])
        loop.unregister(b)
        order.removeAll()
        // Work deferred to the next turn makes that turn not wait (the 10 s would otherwise pass).
        loop.schedule(afterMilliseconds: 10_000) {}
        loop.runTurn()
        #expect(order == ["next turn", "end"])
    }

    /// A value posted from another thread wakes a waiting loop and reaches its completion there.
    @Test func aCompletionPostedFromAnotherThreadWakesTheLoop() throws {
        let loop = try EventLoop(clock: ManualClock())
        var received: [Int] = []
        let token = loop.expectCompletion(Int.self) { received.append($0) }
        let poster = loop.poster
        let thread = spawnThread(joinable: true) { poster.post(token: token, value: 42) }
        for _ in 0..<100 where received.isEmpty { loop.runTurn(maxWaitMilliseconds: 1_000) }
        pthread_join(thread, nil)
        #expect(received == [42])
    }

    /// Completions posted faster than the loop runs them run a bounded number per turn, oldest
    /// first, and the rest in the next turns without a new post: a turn never runs unbounded.
    @Test func completionsRunABoundedNumberPerTurn() throws {
        let loop = try EventLoop(clock: ManualClock())
        let count = 3 * EventLoop.completionsPerTurn + 5
        var received: [Int] = []
        let tokens = (0..<count).map { _ in loop.expectCompletion(Int.self) { received.append($0) } }
        for (index, token) in tokens.enumerated() { loop.poster.post(token: token, value: index) }
        var perTurn: [Int] = []
        for _ in 0..<10 where received.count < count {
            let before = received.count
            loop.runTurn(maxWaitMilliseconds: 100)
            perTurn.append(received.count - before)
        }
        #expect(received == Array(0..<count))
        #expect(perTurn == [64, 64, 64, 5])
    }
}
