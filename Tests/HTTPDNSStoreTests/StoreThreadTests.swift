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
}
