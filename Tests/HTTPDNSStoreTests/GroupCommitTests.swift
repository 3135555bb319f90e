import Dispatch
import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

@testable import HTTPDNSStore

/// What the stores were asked to do, and on which thread, recorded from any thread.
final class StoreCallLog: Sendable {
    struct Commit: Sendable {
        var batches: Int
        var thread: pthread_t
    }

    private let state = Mutex<(commits: [Commit], closed: Bool)>(([], false))

    var commits: [Commit] { state.withLock { $0.commits } }
    var isClosed: Bool { state.withLock { $0.closed } }

    func recordCommit(batches: Int) {
        state.withLock { $0.commits.append(Commit(batches: batches, thread: pthread_self())) }
    }

    func recordClose() { state.withLock { $0.closed = true } }
}

/// A `JarStore` that records every commit before passing it on.
final class RecordingJarStore: JarStore {
    private let inner: any JarStore
    private let log: StoreCallLog

    init(_ inner: any JarStore, log: StoreCallLog) {
        self.inner = inner
        self.log = log
    }

    func loadJars(bootID: String, now: Int64) throws(StoreError) -> [UInt32: [Cookie]] {
        try inner.loadJars(bootID: bootID, now: now)
    }

    func loadJar(uid: UInt32, now: Int64) throws(StoreError) -> [Cookie] { try inner.loadJar(uid: uid, now: now) }

    func commit(_ batches: [StateBatch]) -> [Result<Void, StoreError>] {
        log.recordCommit(batches: batches.count)
        return inner.commit(batches)
    }

    func loadFleetState() throws(StoreError) -> FleetStoredState { try inner.loadFleetState() }

    func fleetMachineID(orCreate make: () -> FleetMachineID) throws(StoreError) -> FleetMachineID {
        try inner.fleetMachineID(orCreate: make)
    }

    func close() {
        log.recordClose()
        inner.close()
    }
}

/// Holds the store thread inside a job until released, so that work queues up behind it.
final class StoreThreadGate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)

    /// Queues the holding job and returns once the store thread is inside it.
    func hold(_ thread: StoreThread) {
        thread.submit { [self] _ in
            entered.signal()
            opened.wait()
        }
        entered.wait()
    }

    func release() { opened.signal() }
}

extension StoreThread {
    /// A store thread over a recording in-memory cookie store.
    static func recording(_ log: StoreCallLog, capacity: Int = .max) -> StoreThread {
        StoreThread(
            StateStores(
                jars: RecordingJarStore(InMemoryJarStore(capacity: capacity), log: log),
                dns: InMemoryDNSSnapshotStore()))
    }
}

extension StoreThread {
    /// `borrowIfIdle`, retried for a while: a job that just posted its result may still be finishing.
    func borrowOnceIdle<Result: Sendable>(_ body: (inout sending StateStores) -> Result) -> Result? {
        var result: Result?
        _ = eventually(10, every: 1) {
            result = borrowIfIdle(body)
            return result != nil
        }
        return result
    }
}

/// Runs `loop` until `body` stops it, failing the test if that takes more than `seconds`.
func runLoop(
    _ loop: EventLoop, seconds: Int64 = 20, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping () -> Void
) {
    var finished = false
    loop.schedule(afterMilliseconds: 0) { body() }
    let timeout = loop.schedule(afterMilliseconds: seconds * 1_000) {
        Issue.record("the loop did not finish within \(seconds) s", sourceLocation: sourceLocation)
        finished = true
        loop.stop()
    }
    loop.run()
    if !finished { loop.cancel(timeout) }
}

struct GroupCommitTests {
    typealias F = StoreFixtures
    typealias Outcome = Result<Void, StateCommitFailure>

    @Test func batchesOfOneLoopTurnShareOneTransaction() throws {
        let loop = try EventLoop()
        let log = StoreCallLog()
        let thread = StoreThread.recording(log)
        defer { thread.close() }
        let commits = StateGroupCommit(loop: loop, storeThread: thread, commitsOnLoopThread: false)
        var outcomes: [Outcome] = []
        runLoop(loop) {
            for uid in 0..<50 {
                commits.commit(F.upserts(UInt32(uid), [F.cookie("c\(uid)")])) { outcome in
                    outcomes.append(outcome)
                    if outcomes.count == 50 { loop.stop() }
                }
            }
            #expect(commits.unansweredCount == 50)
        }
        #expect(outcomes.count == 50)
        #expect(outcomes.allSatisfy { $0.failure == nil })
        #expect(log.commits.map(\.batches) == [50])
        #expect(commits.unansweredCount == 0)
        let stored = thread.borrowOnceIdle { stores in
            (try? stores.jars.loadJars(bootID: F.bootA, now: F.now)) ?? [:]
        }
        #expect(stored?.count == 50)
    }

    /// While one transaction runs, the batches of the next loop turns wait, all go into the next
    /// transaction, and are answered only once it is committed.
    @Test func batchesWaitingForARunningTransactionShareTheNextOne() throws {
        let loop = try EventLoop()
        let log = StoreCallLog()
        let thread = StoreThread.recording(log)
        defer { thread.close() }
        let gate = StoreThreadGate()
        gate.hold(thread)
        let commits = StateGroupCommit(loop: loop, storeThread: thread, commitsOnLoopThread: true)
        var answered = 0
        var transactionsSeenByLateBatches: Set<Int> = []
        func commit(turn: Int) {
            for index in 0..<10 {
                commits.commit(F.upserts(1, [F.cookie("t\(turn)-\(index)")])) { outcome in
                    #expect(outcome.failure == nil)
                    if turn > 0 { transactionsSeenByLateBatches.insert(log.commits.count) }
                    answered += 1
                    if answered == 30 { loop.stop() }
                }
            }
        }
        runLoop(loop) {
            commit(turn: 0)
            // Later turns (timers run in a turn of their own), then the store thread goes on.
            loop.schedule(afterMilliseconds: 5) { commit(turn: 1) }
            loop.schedule(afterMilliseconds: 10) { commit(turn: 2) }
            loop.schedule(afterMilliseconds: 20) { gate.release() }
        }
        #expect(answered == 30)
        #expect(log.commits.map(\.batches) == [10, 20])
        #expect(transactionsSeenByLateBatches == [2])
    }

    /// A lone batch runs on the loop thread, borrowing the idle store, when that is allowed; a
    /// group, or any batch while the store thread is busy, runs on the store thread.
    @Test(arguments: [true, false])
    func whereTheTransactionRuns(commitsOnLoopThread: Bool) throws {
        let loop = try EventLoop()
        let log = StoreCallLog()
        let thread = StoreThread.recording(log)
        defer { thread.close() }
        let gate = StoreThreadGate()
        let commits = StateGroupCommit(loop: loop, storeThread: thread, commitsOnLoopThread: commitsOnLoopThread)
        runLoop(loop) {
            commits.commit(F.upserts(1, [F.cookie("lone")])) { outcome in
                #expect(outcome.failure == nil)
                var answered = 0
                for index in 0..<3 {
                    commits.commit(F.upserts(1, [F.cookie("group\(index)")])) { outcome in
                        #expect(outcome.failure == nil)
                        answered += 1
                        guard answered == 3 else { return }
                        gate.hold(thread)
                        loop.schedule(afterMilliseconds: 5) { gate.release() }
                        commits.commit(F.upserts(1, [F.cookie("busy")])) { outcome in
                            #expect(outcome.failure == nil)
                            loop.stop()
                        }
                    }
                }
            }
        }
        let loopThread = pthread_self()
        #expect(log.commits.map(\.batches) == [1, 3, 1])
        #expect(log.commits.map { pthread_equal($0.thread, loopThread) != 0 } == [commitsOnLoopThread, false, false])
    }

    @Test func aFailedBatchIsAnsweredWithTheJarAsCommitted() throws {
        let loop = try EventLoop()
        let log = StoreCallLog()
        let thread = StoreThread.recording(log, capacity: 2)
        defer { thread.close() }
        let commits = StateGroupCommit(loop: loop, storeThread: thread, commitsOnLoopThread: false)
        let kept = [F.cookie("a", creationIndex: 1), F.cookie("b", creationIndex: 2)]
        var outcomes: [Outcome] = []
        runLoop(loop) {
            commits.commit(F.upserts(7, kept)) { first in
                outcomes.append(first)
                commits.commit(F.upserts(7, [F.cookie("c")])) { second in
                    outcomes.append(second)
                    loop.stop()
                }
            }
        }
        #expect(outcomes.count == 2)
        #expect(outcomes.first?.failure == nil)
        let failure = outcomes.last?.failure
        #expect(failure?.error.code == .diskFull)
        #expect(failure?.committedJar == kept)
    }

    @Test func aClosedStoreFailsCommitsWithClosed() throws {
        let loop = try EventLoop()
        let log = StoreCallLog()
        let thread = StoreThread.recording(log)
        thread.close()
        let commits = StateGroupCommit(loop: loop, storeThread: thread, commitsOnLoopThread: true)
        var outcome: Outcome?
        runLoop(loop) {
            commits.commit(F.upserts(1, [F.cookie("late")])) {
                outcome = $0
                loop.stop()
            }
        }
        #expect(outcome?.failure?.error.code == .closed)
        #expect(log.commits.isEmpty)
        #expect(commits.unansweredCount == 0)
    }

    /// A batch with nothing to write (a cookie set again as stored) makes no transaction: alone it
    /// is answered at once; behind a running transaction, only after it, and with its failure.
    @Test func aBatchWithNothingToWriteWaitsForTheOnesBefore() throws {
        let loop = try EventLoop()
        let log = StoreCallLog()
        let thread = StoreThread.recording(log, capacity: 1)
        defer { thread.close() }
        let gate = StoreThreadGate()
        let commits = StateGroupCommit(loop: loop, storeThread: thread, commitsOnLoopThread: false)
        let nothing = StateBatch(uid: 7, changes: [])
        var answers: [String] = []
        runLoop(loop) {
            commits.commit(nothing) { outcome in
                answers.append("alone \(outcome.failure == nil ? "ok" : "failed")")
                gate.hold(thread)
                commits.commit(F.upserts(7, [F.cookie("a")])) { outcome in
                    answers.append("a \(outcome.failure == nil ? "ok" : "failed")")
                }
                loop.schedule(afterMilliseconds: 5) {
                    commits.commit(nothing) { outcome in
                        answers.append("after a \(outcome.failure == nil ? "ok" : "failed")")
                        gate.hold(thread)
                        // Over the store's capacity of one cookie: this batch fails.
                        commits.commit(F.upserts(7, [F.cookie("b")])) { outcome in
                            answers.append("b \(outcome.failure?.error.code == .diskFull ? "disk-full" : "?")")
                        }
                        loop.schedule(afterMilliseconds: 5) {
                            commits.commit(nothing) { outcome in
                                answers.append(
                                    "after b \(outcome.failure?.error.code == .diskFull ? "disk-full" : "?")")
                                commits.commit(nothing) { outcome in
                                    answers.append("later \(outcome.failure == nil ? "ok" : "failed")")
                                    loop.stop()
                                }
                            }
                            loop.schedule(afterMilliseconds: 5) { gate.release() }
                        }
                    }
                    loop.schedule(afterMilliseconds: 5) { gate.release() }
                }
            }
        }
        #expect(answers == ["alone ok", "a ok", "after a ok", "b disk-full", "after b disk-full", "later ok"])
        #expect(log.commits.map(\.batches) == [1, 1])
        #expect(commits.unansweredCount == 0)
    }
}
