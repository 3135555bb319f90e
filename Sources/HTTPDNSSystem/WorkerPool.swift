import CHTTPDNSShims
import Glibc

/// A fixed set of threads for blocking work (getaddrinfo, libcurl transfers), so the event
/// loop never blocks. Each thread owns a `State` made on that thread by `makeState` (for
/// example its own libcurl handle, so connections are reused per thread).
///
/// Jobs run in FIFO order; a job that hangs holds one thread only, and callers coalesce
/// identical work, so a slow upstream cannot starve the rest.
public final class WorkerPool<State>: @unchecked Sendable {
    // @unchecked: `queue`, `head` and `stopping` are only touched under `lock`.
    public typealias Job = @Sendable (State) -> Void

    private let lock = ConditionLock()
    private var queue: [Job] = []
    private var head = 0
    private var stopping = false
    /// The threads still to start (all of them until the first job).
    private var unstarted: (count: Int, name: String, makeState: @Sendable () -> State)?

    /// A pool of `count` threads, each named `name` (what `top -H` shows). They start with the
    /// first job: a daemon answering from its cache and jar never waits for sixteen `clone`s
    /// before its first answer (socket activation starts it on a client's connect).
    public init(threads count: Int, named name: String, makeState: @escaping @Sendable () -> State) {
        unstarted = (max(1, count), name, makeState)
    }

    /// Queues a job; it runs on some worker thread.
    public func submit(_ job: @escaping Job) {
        let start = lock.withLock {
            queue.append(job)
            lock.signal()
            let start = unstarted
            unstarted = nil
            return start
        }
        guard let start else { return }
        for _ in 0..<start.count {
            spawnThread(named: start.name) { [self] in self.workerMain(makeState: start.makeState) }
        }
    }

    /// Lets running jobs finish and drops queued ones, without waiting: a hung transfer must not
    /// hold up the daemon's exit (its thread ends with the process).
    public func shutdown() {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
    }

    private func nextJob() -> Job? {
        lock.withLock {
            while head == queue.count && !stopping { lock.wait() }
            if stopping { return nil }
            let job = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            }
            return job
        }
    }

    private func workerMain(makeState: @Sendable () -> State) {
        // Signals belong to the loop thread's signalfd.
        for signal in [SIGTERM, SIGINT, SIGHUP] { _ = chttpdns_block_signal(signal) }
        let state = makeState()
        while let job = nextJob() { job(state) }
    }
}
