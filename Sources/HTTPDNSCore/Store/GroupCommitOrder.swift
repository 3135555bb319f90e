/// When a group commit writes the batches handed to it and in which order it answers them, as a
/// value that takes events and returns what to do (the caller, `StateGroupCommit`, carries that
/// out on the event loop and the store thread).
///
/// Every batch handed in during one loop turn goes into one transaction, started once the turn's
/// events are handled. While that transaction runs, the batches of the next turns wait and all go
/// into the next one: the busier the daemon, the more requests share a commit. A batch with nothing
/// to write makes no transaction of its own, but is answered only once every batch handed in before
/// it is, and fails if any of them failed: the state it acknowledges may be theirs.
///
/// The caller keeps the batches and their completions in hand-in order; `flush` and `committed`
/// speak of them in that order.
public struct GroupCommitOrder {
    /// What to do after an event.
    public enum Step: Equatable {
        case none
        /// Call `flush()` once the loop's turn is over (its other events handled).
        case flushAfterTurn
    }

    /// What to do with the batches waiting at the end of a turn.
    public enum Flush {
        /// Nothing is waiting, or a transaction is running (the waiting batches go into the next).
        case nothing
        /// The waiting batches (every one of them) have nothing to write: answer each so, in order.
        case answer([Result<Void, StateCommitFailure>])
        /// Commit the waiting batches (every one of them) in one transaction, then report its
        /// results with `committed(_:)`.
        case commit(count: Int)
    }

    /// For each waiting batch with nothing to write, `failures` when it was handed in (it relies
    /// on the batches before it and fails if any of them did); -1 for the others.
    private var waitingMarks: [Int] = []
    /// The marks of the batches in the running transaction.
    private var committingMarks: [Int] = []
    /// Batches answered with a failure so far, and the last such failure.
    private var failures = 0
    private var lastFailure: StoreError?
    private var transactionRunning = false
    private var flushScheduled = false

    /// Batches handed in and not answered yet; shutdown and idle exit wait for them.
    public private(set) var unansweredCount = 0

    public init() {}

    /// A batch is handed in (after every batch handed in before it).
    public mutating func handIn(hasNothingToWrite: Bool) -> Step {
        unansweredCount += 1
        waitingMarks.append(hasNothingToWrite ? failures : -1)
        return scheduleFlush()
    }

    /// The loop's turn is over.
    public mutating func flush() -> Flush {
        flushScheduled = false
        guard !transactionRunning, !waitingMarks.isEmpty else { return .nothing }
        let marks = waitingMarks
        waitingMarks = []
        // Nothing to write: no transaction runs, so every batch before these has been answered.
        if marks.allSatisfy({ $0 >= 0 }) {
            var answers = marks.map { _ in Result<Void, StateCommitFailure>.success(()) }
            answer(marks, &answers)
            return .answer(answers)
        }
        transactionRunning = true
        committingMarks = marks
        return .commit(count: marks.count)
    }

    /// The transaction `flush()` asked for ended with `results`, one per batch, which become the
    /// answers, in order. Returns what to do next (answer after taking that step: a completion may
    /// hand in a batch).
    public mutating func committed(_ results: inout [Result<Void, StateCommitFailure>]) -> Step {
        precondition(transactionRunning && results.count == committingMarks.count, "results of no transaction")
        transactionRunning = false
        let marks = committingMarks
        committingMarks = []
        answer(marks, &results)
        return scheduleFlush()
    }

    private mutating func scheduleFlush() -> Step {
        guard !flushScheduled, !transactionRunning, !waitingMarks.isEmpty else { return .none }
        flushScheduled = true
        return .flushAfterTurn
    }

    /// Turns results into answers: each batch's result or, for one with nothing to write, a
    /// failure when any batch handed in before it (in an earlier transaction or this one) failed.
    private mutating func answer(_ marks: [Int], _ results: inout [Result<Void, StateCommitFailure>]) {
        unansweredCount -= marks.count
        for case .failure(let failure) in results {
            failures += 1
            lastFailure = failure.error
        }
        guard let lastFailure else { return }
        for index in marks.indices where marks[index] >= 0 && marks[index] != failures {
            // Its own state is whatever the failed batch left: no jar to go back to.
            results[index] = .failure(StateCommitFailure(error: lastFailure, committedJar: nil))
        }
    }
}
