import Foundation
import Glibc
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

/// The worker pool: per-thread state made on its thread, FIFO order, a hung job holding one
/// thread only, shutdown dropping what is queued. Results come back through an event loop, so
/// the test awaits them instead of sleeping.
struct WorkerPoolTests {
    /// A gate jobs wait at until the test opens it.
    final class Gate: Sendable {
        private let lock = ConditionLock()
        private let isOpen = Mutex(false)

        func wait() {
            lock.withLock { while !isOpen.withLock({ $0 }) { lock.wait() } }
        }

        func open() {
            lock.withLock {
                isOpen.withLock { $0 = true }
                lock.broadcast()
            }
        }
    }

    /// A worker's state: which thread made it, and a word to the loop when its thread ends.
    final class WorkerState: Sendable {
        let madeOn = pthread_self()
        let onEnd: @Sendable () -> Void
        init(onEnd: @escaping @Sendable () -> Void) { self.onEnd = onEnd }
        deinit { onEnd() }
    }

    @Test func jobsRunInOrderOnWorkerThreadsWithTheirOwnState() throws {
        let loop = try EventLoop()
        let pool = WorkerPool<WorkerState>(threads: 1, named: "test-worker") { WorkerState(onEnd: {}) }
        defer { pool.shutdown() }
        var results: [(Int, Bool)] = []
        let caller = pthread_self()
        for i in 0..<20 {
            let token = loop.expectCompletion((Int, Bool).self) { results.append($0) }
            let poster = loop.poster
            pool.submit { state in
                let onWorker =
                    pthread_equal(pthread_self(), state.madeOn) != 0 && pthread_equal(pthread_self(), caller) == 0
                poster.post(token: token, value: (i, onWorker))
            }
        }
        for _ in 0..<200 where results.count < 20 { loop.runTurn(maxWaitMilliseconds: 1_000) }
        #expect(results.map(\.0) == Array(0..<20))
        #expect(results.allSatisfy { $0.1 }, "each job ran on the worker that made its state, not the caller")
    }

    /// The workers carry their pool's name, as `top -H` and perf show it.
    /// A pool that was never given a job holds no threads; the first job starts them all.
    @Test func threadsStartWithTheFirstJob() throws {
        func workers() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").filter { task in
                (try? Files.read("/proc/self/task/\(task)/comm")) == Array("lazy-worker\n".utf8)
            }.count
        }
        let pool = WorkerPool<Int>(threads: 3, named: "lazy-worker") { 0 }
        defer { pool.shutdown() }
        #expect(try workers() == 0)
        let loop = try EventLoop()
        var ran = false
        let token = loop.expectCompletion(Bool.self) { ran = $0 }
        let poster = loop.poster
        pool.submit { _ in poster.post(token: token, value: true) }
        for _ in 0..<200 where !ran { loop.runTurn(maxWaitMilliseconds: 1_000) }
        #expect(ran)
        _ = try eventually(5) { try workers() == 3 }
        #expect(try workers() == 3)
    }

    @Test func workersAreNamed() throws {
        let loop = try EventLoop()
        let pool = WorkerPool<Int>(threads: 2, named: "test-worker") { 0 }
        defer { pool.shutdown() }
        var name: String?
        let token = loop.expectCompletion(String.self) { name = $0 }
        let poster = loop.poster
        pool.submit { _ in
            let comm = (try? Files.read("/proc/thread-self/comm")) ?? []
            poster.post(token: token, value: String(decoding: comm, as: UTF8.self))
        }
        for _ in 0..<200 where name == nil { loop.runTurn(maxWaitMilliseconds: 1_000) }
        #expect(name == "test-worker\n")
    }

    @Test func aHungJobHoldsOneThreadOnly() throws {
        let loop = try EventLoop()
        let pool = WorkerPool<Int>(threads: 2, named: "test-worker") { 0 }
        defer { pool.shutdown() }
        let gate = Gate()
        pool.submit { _ in gate.wait() }
        var done = 0
        for _ in 0..<10 {
            let token = loop.expectCompletion(Int.self) { _ in done += 1 }
            let poster = loop.poster
            pool.submit { _ in poster.post(token: token, value: 1) }
        }
        for _ in 0..<200 where done < 10 { loop.runTurn(maxWaitMilliseconds: 1_000) }
        #expect(done == 10)
        gate.open()
    }

    @Test func shutdownLetsTheRunningJobFinishAndDropsTheQueue() throws {
        let loop = try EventLoop()
        var threadEnded = false
        let endToken = loop.expectCompletion(Bool.self) { _ in threadEnded = true }
        let poster = loop.poster
        let pool = WorkerPool<WorkerState>(threads: 1, named: "test-worker") {
            WorkerState(onEnd: { poster.post(token: endToken, value: true) })
        }
        let started = Gate()
        let gate = Gate()
        var ran: [String] = []
        let first = loop.expectCompletion(String.self) { ran.append($0) }
        pool.submit { _ in
            started.open()
            gate.wait()
            poster.post(token: first, value: "running")
        }
        for name in ["queued 1", "queued 2"] {
            let token = loop.expectCompletion(String.self) { ran.append($0) }
            pool.submit { _ in poster.post(token: token, value: name) }
        }
        started.wait()
        pool.shutdown()
        gate.open()
        for _ in 0..<200 where !threadEnded { loop.runTurn(maxWaitMilliseconds: 1_000) }
        loop.runTurn(maxWaitMilliseconds: 0)
        #expect(threadEnded)
        #expect(ran == ["running"])
    }
}
