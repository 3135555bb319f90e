import HTTPDNSCore
import Testing

@testable import HTTPDNSServer

/// The connection's life as a value: events in, what to do out.
struct ConnectionStateTests {
    typealias State = ConnectionState

    @Test func aServingConnectionReadsRunsAndWatchesWhatIsLeft() {
        var state = State()
        #expect(state.mayRead && state.mayRun && state.isServing)
        #expect(
            state.settlement(linesLeft: false, unanswered: 0, unsentBytes: true, answersLeft: false)
                == .watch(readable: true, writable: true))
        state.stopped(.unsentOutput)
        #expect(!state.mayRead && !state.mayRun && state.wait == .unsentOutput)
        #expect(
            state.settlement(linesLeft: true, unanswered: 0, unsentBytes: true, answersLeft: false)
                == .watch(readable: false, writable: true))
        let clearedMemory = state.cleared(.memory)
        #expect(!clearedMemory, "waiting for output, not memory")
        let clearedOutput = state.cleared(.unsentOutput)
        #expect(clearedOutput)
        #expect(state.phase == .serving(.open))
    }

    /// After end of file the lines read still run, and the connection closes only once nothing
    /// is left: no line, no request in flight, no byte or answer unsent.
    @Test func endOfInputClosesOnceEverythingIsAnswered() {
        var state = State()
        state.stopped(.nextTurn)
        state.inputEnded()
        #expect(state.phase == .serving(.ended(.nextTurn)) && !state.mayRun)
        let cleared = state.cleared(.nextTurn)
        #expect(cleared)
        #expect(state.phase == .serving(.ended(nil)) && state.mayRun && !state.mayRead)
        for (lines, unanswered, unsent, answers) in [
            (true, 0, false, false), (false, 1, false, false),
            (false, 0, true, false), (false, 0, false, true),
        ] {
            #expect(
                state.settlement(linesLeft: lines, unanswered: unanswered, unsentBytes: unsent, answersLeft: answers)
                    != .close)
        }
        #expect(state.settlement(linesLeft: false, unanswered: 0, unsentBytes: false, answersLeft: false) == .close)
    }

    /// A client that left cannot be a reason to wait for output or memory: what it sent runs on,
    /// turn by turn, and the connection closes once that is done, requests in flight or not.
    @Test func anAbandonedConnectionRunsWhatItReadThenCloses() {
        var state = State()
        state.stopped(.unsentOutput)
        let left = state.peerLeft()
        let leftAgain = state.peerLeft()
        #expect(left && !leftAgain, "only the first time")
        #expect(state.phase == .abandoned(.open) && state.wait == nil)
        #expect(
            state.settlement(linesLeft: false, unanswered: 3, unsentBytes: false, answersLeft: false)
                == .continueNextTurn)
        state.inputEnded()
        #expect(
            state.settlement(linesLeft: true, unanswered: 0, unsentBytes: false, answersLeft: false)
                == .continueNextTurn)
        #expect(state.settlement(linesLeft: false, unanswered: 3, unsentBytes: false, answersLeft: false) == .close)
        let closed = state.close()
        let closedAgain = state.close()
        #expect(closed && !closedAgain)
        #expect(state.isClosed && !state.mayRead && !state.mayRun)
    }

    @Test func anAbandonedConnectionWaitingForTheNextTurnWatchesNothing() {
        var state = State()
        _ = state.peerLeft()
        state.stopped(.nextTurn)
        #expect(
            state.settlement(linesLeft: true, unanswered: 0, unsentBytes: false, answersLeft: false)
                == .watch(readable: false, writable: false))
    }
}
