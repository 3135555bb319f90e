import HTTPDNSCore
import HTTPDNSSystem

/// Why a batch of cookie changes was not stored, with the jar as committed so that memory can go
/// back to it.
public struct CookieCommitFailure: Error, Sendable {
    /// What failed (nothing of the batch was stored).
    public let error: StoreError
    /// The user's jar as committed, read right after the failure; nil if it could not be read.
    public let committedJar: [Cookie]?
}

/// Group commit of cookie changes, run from the event loop: a change is acknowledged only once it
/// is durable, and many requests share each transaction.
///
/// Every batch handed in during one loop turn goes into one transaction, committed once the turn's
/// events are handled, on the store thread, so that the loop goes on reading requests meanwhile.
/// While that transaction runs, the batches of the next turns wait and all go into the next one:
/// the busier the daemon, the more requests share a commit (and, with `Synchronous=full`, its
/// fsync). A lone batch (one request in the turn) finding the store thread idle is committed on the
/// loop thread instead, borrowing the stores (`StoreThread.borrowIfIdle`) when that is allowed: a
/// single client then does not wait for two thread hand-offs.
///
/// A batch with nothing to write (a cookie set again exactly as stored) makes no transaction of
/// its own, but is answered only once every batch handed in before it is, and fails if any of
/// them failed: the state it acknowledges may be theirs.
public final class CookieGroupCommit {
    /// Called on the loop thread once the batch is committed, or with why it is not.
    public typealias Completion = (Result<Void, CookieCommitFailure>) -> Void

    private let loop: EventLoop
    private let storeThread: StoreThread
    private let commitsOnLoopThread: Bool
    /// The batches waiting for the next transaction, and their completions at the same places
    /// (two arrays, so a transaction takes each whole instead of copying its elements out).
    private var waitingBatches: [CookieBatch] = []
    private var waitingCompletions: [Completion] = []
    /// For each waiting batch with nothing to write (a cookie set again as stored), `failures` when
    /// it was handed in: it relies on the batches before it, and fails if any of them did. -1 for
    /// the others (taken once, here: reading a batch again copies its arrays).
    private var waitingFailureMarks: [Int] = []
    /// Batches answered with a failure so far, and the last such failure.
    private var failures = 0
    private var lastFailure: StoreError?
    private var transactionRunning = false
    private var flushScheduled = false

    /// Batches handed in and not answered yet; shutdown and idle exit wait for them.
    public private(set) var unansweredCount = 0

    /// `commitsOnLoopThread`: whether a lone batch may be committed on the loop thread when the store
    /// thread is idle (never when each commit waits for an fsync).
    public init(loop: EventLoop, storeThread: StoreThread, commitsOnLoopThread: Bool) {
        self.loop = loop
        self.storeThread = storeThread
        self.commitsOnLoopThread = commitsOnLoopThread
    }

    /// Commits `batch` with the other batches of this loop turn, then calls `completion`.
    public func commit(_ batch: consuming CookieBatch, completion: @escaping Completion) {
        unansweredCount += 1
        waitingFailureMarks.append(batch.hasNothingToWrite ? failures : -1)
        waitingBatches.append(batch)  // Moved in, not copied (a copy retains all its arrays).
        waitingCompletions.append(completion)
        scheduleTransaction()
    }

    private func scheduleTransaction() {
        guard !flushScheduled, !transactionRunning, !waitingBatches.isEmpty else { return }
        flushScheduled = true
        loop.runBeforeNextWait { [self] in
            flushScheduled = false
            startTransaction()
        }
    }

    private func startTransaction() {
        guard !transactionRunning, !waitingBatches.isEmpty else { return }
        // The batches come back with the results, to be freed on the loop thread that allocated
        // them: freed on the store thread, they made it wait for the loop's malloc arena lock and
        // the loop for it (at 32x8, sets ran 5 to 10% faster freed here).
        let completions = waitingCompletions
        let batches = waitingBatches
        let marks = waitingFailureMarks
        waitingCompletions = []
        waitingBatches = []
        waitingFailureMarks = []
        // Nothing to write: no transaction runs, so every batch before these has been answered.
        if marks.allSatisfy({ $0 >= 0 }) {
            finish(completions, marks, marks.map { _ in .success(()) })
            return
        }
        if commitsOnLoopThread, batches.count == 1,
            let results = storeThread.borrowIfIdle({ stores in Self.commit(batches, to: stores.cookies) })
        {
            finish(completions, marks, results)
            return
        }
        transactionRunning = true
        let done: (Committed) -> Void = { [self] committed in
            transactionRunning = false
            finish(completions, marks, committed.results)
            scheduleTransaction()
        }
        let token = loop.expectCompletion(Committed.self, done)
        let poster = loop.poster
        let submitted = storeThread.submit { stores in
            poster.post(
                token: token, value: Committed(results: Self.commit(batches, to: stores.cookies), batches: batches))
        }
        if !submitted {
            let closed = StoreError(.closed, "the state store is closed")
            poster.post(
                token: token,
                value: Committed(
                    results: batches.map { _ in
                        Result<Void, CookieCommitFailure>.failure(.init(error: closed, committedJar: nil))
                    }, batches: batches))
        }
    }

    /// A transaction's results, and its batches to free on the loop thread.
    struct Committed: Sendable {
        var results: [Result<Void, CookieCommitFailure>]
        var batches: [CookieBatch]
    }

    /// Answers each batch: with its result, or, for one with nothing to write, with a failure when
    /// any batch handed in before it (in an earlier transaction or this one) failed.
    private func finish(
        _ completions: [Completion], _ marks: [Int], _ results: [Result<Void, CookieCommitFailure>]
    ) {
        unansweredCount -= completions.count
        for case .failure(let failure) in results {
            failures += 1
            lastFailure = failure.error
        }
        for index in completions.indices {
            var result = results[index]
            if marks[index] >= 0, marks[index] != failures, let lastFailure {
                result = .failure(CookieCommitFailure(error: lastFailure, committedJar: nil))
            }
            completions[index](result)
        }
    }

    /// One transaction for `batches`; for each batch that failed, its jar as committed.
    private static func commit(_ batches: [CookieBatch], to store: any CookieStore) -> [Result<
        Void, CookieCommitFailure
    >] {
        zip(batches, store.commit(batches)).map { batch, result in
            result.mapError { error in
                CookieCommitFailure(
                    error: error, committedJar: try? store.loadJar(uid: batch.uid, now: WallClock.nowSeconds()))
            }
        }
    }
}

@available(*, unavailable, message: "CookieGroupCommit belongs to the event loop's thread")
extension CookieGroupCommit: Sendable {}
