import Dispatch
import HTTPDNSCore
import HTTPDNSSystem
import Synchronization

/// What the store thread owns: the store of the cookie jars (with the fleet tier's records) and
/// the store of the DNS snapshot (for the daemon, one `SQLiteStateStore` behind both).
public struct StateStores {
    /// The cookie jars and the fleet records that replicate them.
    public var jars: any JarStore
    /// The DNS cache and IP-to-host memory between runs.
    public var dns: any DNSSnapshotStore

    /// Separate stores.
    public init(jars: any JarStore, dns: any DNSSnapshotStore) {
        self.jars = jars
        self.dns = dns
    }

    /// Every kind of state in one SQLite file.
    public init(_ store: SQLiteStateStore) {
        self.init(jars: store, dns: store)
    }

    /// Closes both (closing one store twice does nothing).
    public func close() {
        jars.close()
        dns.close()
    }
}

@available(*, unavailable, message: "the stores belong to one thread at a time: hand them to a StoreThread")
extension StateStores: Sendable {}

/// The thread that owns the state stores, and with them the SQLite connection: blocking work
/// (commits, fsyncs, checkpoints, DNS saves) runs here, never on the event loop.
///
/// Work arrives as jobs, run one after another in submission order. The stores live behind a lock
/// that a job holds while it runs. The one other way in is an explicit borrow: `borrowIfIdle`
/// lends the stores to the calling thread while no job is queued or running (the daemon commits a
/// lone client's cookie change that way, saving two thread hand-offs). A borrow holds the same
/// lock, and its closure receives the stores `inout sending`, so the compiler rejects any reference
/// to them that would outlive the borrow: at every moment exactly one thread uses the connection.
public final class StoreThread: Sendable {
    /// A unit of work; it runs on the store thread with the stores.
    public typealias Job = @Sendable (inout sending StateStores) -> Void

    private struct Queue {
        var jobs: [Job] = []
        /// Jobs submitted and not finished (queued or running): a borrow must not overtake them.
        var unfinished = 0
        var closing = false
    }

    private let stores: Mutex<StateStores>
    private let queue = Mutex(Queue())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let closed = DispatchSemaphore(value: 0)

    /// Starts the thread, which owns `stores` from now on. Start it after the process has blocked
    /// the signals its event loop handles: the thread inherits the signal mask.
    public init(_ stores: consuming sending StateStores) {
        self.stores = Mutex(stores)
        spawnThread(named: "store") { [self] in self.run() }
    }

    /// Queues `job` to run after every job queued before it; false (and `job` dropped) once
    /// `close()` was called.
    @discardableResult
    public func submit(_ job: @escaping Job) -> Bool {
        let accepted = queue.withLock { queue in
            guard !queue.closing else { return false }
            queue.jobs.append(job)
            queue.unfinished += 1
            return true
        }
        if accepted { wakeUp.signal() }
        return accepted
    }

    /// Runs `body` on the calling thread with the stores, if no job is queued or running (so it
    /// cannot overtake work submitted before it) and the store thread is not closing; nil otherwise,
    /// without waiting. `body` must not block for long: a job submitted meanwhile waits for it.
    /// A checkpoint the borrow made due runs on the store thread, not in the borrow.
    public func borrowIfIdle<Result: Sendable>(_ body: (inout sending StateStores) -> Result) -> Result? {
        guard queue.withLock({ $0.unfinished == 0 && !$0.closing }) else { return nil }
        guard
            let (result, checkpointDue) = stores.withLockIfAvailable({ stores in
                (body(&stores), stores.jars.needsCheckpoint)
            })
        else { return nil }
        // An empty job: the thread checkpoints after its jobs.
        if checkpointDue { submit { _ in } }
        return result
    }

    /// Runs every job already queued, closes the stores (for SQLite: checkpoints the WAL and
    /// closes the file) and ends the thread. Blocks until done; later calls return at once.
    public func close() {
        let first = queue.withLock { queue in
            defer { queue.closing = true }
            return !queue.closing
        }
        guard first else { return }
        wakeUp.signal()
        closed.wait()
    }

    private func run() {
        while true {
            wakeUp.wait()
            let (jobs, closing) = queue.withLock { queue in
                defer { queue.jobs.removeAll(keepingCapacity: true) }
                return (queue.jobs, queue.closing)
            }
            for job in jobs {
                stores.withLock { stores in job(&stores) }
                queue.withLock { $0.unfinished -= 1 }
            }
            stores.withLock { stores in
                if stores.jars.needsCheckpoint { stores.jars.checkpoint() }
            }
            // Jobs queued while these ran have a wake-up of their own; `close` stops new ones.
            if closing && queue.withLock({ $0.jobs.isEmpty }) {
                stores.withLock { $0.close() }
                closed.signal()
                return
            }
        }
    }
}
