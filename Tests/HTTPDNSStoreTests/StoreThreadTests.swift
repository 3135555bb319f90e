import Dispatch
import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import Synchronization
import Testing

@testable import HTTPDNSStore

struct StoreThreadTests {
    typealias F = StoreFixtures

    @Test func jobsRunInSubmissionOrderOnTheStoreThread() {
        let log = StoreCallLog()
        let thread = StoreThread.recording(log)
        let ran = Mutex<[(index: Int, thread: pthread_t)]>([])
        for index in 0..<200 {
            thread.submit { stores in
                _ = stores.jars.commit([F.upserts(1, [F.cookie("c\(index)")])])
                ran.withLock { $0.append((index, pthread_self())) }
            }
        }
        thread.close()
        let runs = ran.withLock { $0 }
        #expect(runs.map(\.index) == Array(0..<200))
        let caller = pthread_self()
        #expect(
            runs.allSatisfy { pthread_equal($0.thread, caller) == 0 && pthread_equal($0.thread, runs[0].thread) != 0 })
        #expect(log.commits.count == 200)
    }

    @Test func aBorrowNeverOvertakesQueuedOrRunningWork() {
        let log = StoreCallLog()
        let thread = StoreThread.recording(log)
        defer { thread.close() }
        #expect(thread.borrowIfIdle { _ in 1 } == 1)

        let gate = StoreThreadGate()
        gate.hold(thread)
        #expect(thread.borrowIfIdle { _ in 2 } == nil)  // a job is running
        let done = DispatchSemaphore(value: 0)
        thread.submit { _ in done.signal() }
        gate.release()
        done.wait()
        #expect(thread.borrowOnceIdle { _ in 3 } == 3)
    }

    @Test func closeRunsWhatIsQueuedThenClosesTheStoresAndRefusesMore() {
        let log = StoreCallLog()
        let thread = StoreThread.recording(log)
        let gate = StoreThreadGate()
        gate.hold(thread)
        let committed = Mutex(0)
        for index in 0..<20 {
            thread.submit { stores in
                if stores.jars.commit([F.upserts(1, [F.cookie("c\(index)")])])[0].failure == nil {
                    committed.withLock { $0 += 1 }
                }
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { gate.release() }
        thread.close()
        #expect(committed.withLock { $0 } == 20)
        #expect(log.isClosed)
        #expect(!thread.submit { _ in Issue.record("a job ran after close") })
        #expect(thread.borrowIfIdle { _ in 1 } == nil)
        thread.close()  // a second close returns at once
    }

    /// A commit borrowed onto the calling thread (the loop) that makes a checkpoint due leaves
    /// it to the store thread; so does a job.
    @Test func aDueCheckpointRunsOnTheStoreThreadNeverInABorrow() {
        let store = CheckpointProbeStore()
        let thread = StoreThread(StateStores(jars: store, dns: InMemoryDNSSnapshotStore()))
        defer { thread.close() }
        let caller = pthread_self()
        #expect(thread.borrowIfIdle { _ in store.due.withLock { $0 = true } } != nil)
        store.checkpointed.wait()
        let first = store.threads.withLock { $0 }
        #expect(first.count == 1 && pthread_equal(first[0], caller) == 0)
        thread.submit { _ in store.due.withLock { $0 = true } }
        store.checkpointed.wait()
        #expect(store.threads.withLock { $0.count } == 2)
        // Nothing due: no checkpoint.
        #expect(thread.borrowOnceIdle { _ in 1 } == 1)
        thread.submit { _ in }
        #expect(thread.borrowOnceIdle { _ in 2 } == 2)
        #expect(store.threads.withLock { $0.count } == 2)
    }
}

/// A jar store whose checkpoint is due when a test says so, and which records where it ran.
final class CheckpointProbeStore: JarStore, Sendable {
    let due = Mutex(false)
    let threads = Mutex<[pthread_t]>([])
    let checkpointed = DispatchSemaphore(value: 0)

    func loadJars(bootID: String, now: Int64) throws(StoreError) -> [UInt32: [Cookie]] { [:] }
    func loadJar(uid: UInt32, now: Int64) throws(StoreError) -> [Cookie] { [] }
    func commit(_ batches: [StateBatch]) -> [Result<Void, StoreError>] { batches.map { _ in .success(()) } }
    func loadFleetState() throws(StoreError) -> FleetStoredState { FleetStoredState() }
    func fleetMachineID(orCreate make: () -> FleetMachineID) throws(StoreError) -> FleetMachineID { make() }
    func close() {}

    var needsCheckpoint: Bool { due.withLock { $0 } }

    func checkpoint() {
        due.withLock { $0 = false }
        threads.withLock { $0.append(pthread_self()) }
        checkpointed.signal()
    }
}
