import HTTPDNSCore
import HTTPDNSSystem

/// Group commit of state batches (cookie changes and fleet records), run from the event loop: a
/// change is acknowledged only once it is durable, and many requests share each transaction.
///
/// `GroupCommitOrder` decides when a transaction starts and how each batch is answered; this
/// carries it out. A transaction runs on the store thread, so that the loop goes on reading
/// requests meanwhile (with `Synchronous=full`, the batches of busy turns share one fsync). A lone
/// batch (one request in the turn) finding the store thread idle is committed on the loop thread
/// instead, borrowing the stores (`StoreThread.borrowIfIdle`) when that is allowed: a single
/// client then does not wait for two thread hand-offs.
public final class StateGroupCommit {
    /// Called on the loop thread once the batch is committed, or with why it is not.
    public typealias Completion = (Result<Void, StateCommitFailure>) -> Void

    private let loop: EventLoop
    private let storeThread: StoreThread
    private let commitsOnLoopThread: Bool
    private var order = GroupCommitOrder()
    /// The batches waiting for the next transaction, and their completions at the same places
    /// (two arrays, so a transaction takes each whole instead of copying its elements out).
    private var waitingBatches: [StateBatch] = []
    private var waitingCompletions: [Completion] = []
    /// The completions of the running transaction's batches.
    private var committingCompletions: [Completion] = []

    /// Batches handed in and not answered yet; shutdown and idle exit wait for them.
    public var unansweredCount: Int { order.unansweredCount }

    /// `commitsOnLoopThread`: whether a lone batch may be committed on the loop thread when the store
    /// thread is idle (never when each commit waits for an fsync).
    public init(loop: EventLoop, storeThread: StoreThread, commitsOnLoopThread: Bool) {
        self.loop = loop
        self.storeThread = storeThread
        self.commitsOnLoopThread = commitsOnLoopThread
    }

    /// Commits `batch` with the other batches of this loop turn, then calls `completion`.
    public func commit(_ batch: consuming StateBatch, completion: @escaping Completion) {
        let step = order.handIn(hasNothingToWrite: batch.hasNothingToWrite)
        waitingBatches.append(batch)  // Moved in, not copied (a copy retains all its arrays).
        waitingCompletions.append(completion)
        take(step)
    }

    private func take(_ step: GroupCommitOrder.Step) {
        guard step == .flushAfterTurn else { return }
        loop.runBeforeNextWait { [self] in flush() }
    }

    private func flush() {
        switch order.flush() {
        case .nothing:
            return
        case .answer(let answers):
            let completions = waitingCompletions
            waitingCompletions = []
            waitingBatches = []
            deliver(answers, to: completions)
        case .commit:
            startTransaction()
        }
    }

    private func startTransaction() {
        // The batches come back with the results, to be freed on the loop thread that allocated
        // them: freed on the store thread, they made it wait for the loop's malloc arena lock and
        // the loop for it (at 32x8, sets ran 5 to 10% faster freed here).
        committingCompletions = waitingCompletions
        let batches = waitingBatches
        waitingCompletions = []
        waitingBatches = []
        // The time the committed jars are read at, after a failure.
        let now = loop.clock.wallSeconds()
        if commitsOnLoopThread, batches.count == 1,
            let results = storeThread.borrowIfIdle({ stores in Self.commit(batches, to: stores.jars, now: now) })
        {
            committed(results)
            return
        }
        let token = loop.expectCompletion(Committed.self) { [self] committed in self.committed(committed.results) }
        let poster = loop.poster
        let submitted = storeThread.submit { stores in
            poster.post(
                token: token,
                value: Committed(results: Self.commit(batches, to: stores.jars, now: now), batches: batches))
        }
        if !submitted {
            let closed = StoreError(.closed, "the state store is closed")
            poster.post(
                token: token,
                value: Committed(
                    results: batches.map { _ in .failure(StateCommitFailure(error: closed, committedJar: nil)) },
                    batches: batches))
        }
    }

    /// A transaction's results, and its batches to free on the loop thread.
    struct Committed: Sendable {
        var results: [Result<Void, StateCommitFailure>]
        var batches: [StateBatch]
    }

    private func committed(_ results: [Result<Void, StateCommitFailure>]) {
        var answers = results
        let step = order.committed(&answers)
        let completions = committingCompletions
        committingCompletions = []
        take(step)
        deliver(answers, to: completions)
    }

    private func deliver(_ answers: [Result<Void, StateCommitFailure>], to completions: [Completion]) {
        for index in completions.indices { completions[index](answers[index]) }
    }

    /// One transaction for `batches`; for each batch that failed, its jar as committed.
    private static func commit(_ batches: [StateBatch], to store: any JarStore, now: Int64) -> [Result<
        Void, StateCommitFailure
    >] {
        zip(batches, store.commit(batches)).map { batch, result in
            result.mapError { error in
                StateCommitFailure(
                    error: error, committedJar: batch.jar.flatMap { try? store.loadJar(uid: $0.uid, now: now) })
            }
        }
    }
}

@available(*, unavailable, message: "StateGroupCommit belongs to the event loop's thread")
extension StateGroupCommit: Sendable {}
