import HTTPDNSCore
import HTTPDNSSystem

/// A write waiting for the next group commit, with whom to tell.
enum StoreWrite: Sendable {
    case cookies([(uid: UInt32, change: CookieChange)], completion: @Sendable (Result<Void, StoreError>) -> Void)
    case dns(
        entries: [PersistedDNSEntry], owners: [PersistedAddressOwner],
        completion: @Sendable (Result<Void, StoreError>) -> Void)

    var completion: @Sendable (Result<Void, StoreError>) -> Void {
        switch self {
        case .cookies(_, let completion), .dns(_, _, let completion): return completion
        }
    }
}

/// Work for the writer thread, in submission order.
enum StoreJob: Sendable {
    case write(StoreWrite)
    /// Runs on the writer thread with its connection, after every earlier write is committed.
    case read(@Sendable (StoreConnection) -> Void)
    /// Commits what came before, closes the connection, then calls the closure.
    case close(@Sendable () -> Void)
}

/// The hand-over between client threads and the writer thread.
final class StoreQueue: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock`.
    private let lock = ConditionLock()
    private var jobs: [StoreJob] = []
    private var accepting = true
    /// Someone (the writer thread, or an inline commit) is using the connection.
    private var busy = false
    private var committedTransactions = 0

    /// Queues `job`; false once a close has been queued.
    func submit(_ job: StoreJob) -> Bool {
        lock.withLock {
            guard accepting else { return false }
            if case .close = job { accepting = false }
            jobs.append(job)
            lock.signal()
            return true
        }
    }

    /// Blocks until there is work and nobody holds the connection, then takes all of it and
    /// holds the connection until `release()`.
    func takeAll() -> [StoreJob] {
        lock.lock()
        defer { lock.unlock() }
        while jobs.isEmpty || busy { lock.wait() }
        busy = true
        defer { jobs.removeAll(keepingCapacity: true) }
        return jobs
    }

    /// Takes the connection for an inline commit when nothing is queued or running, so an inline
    /// commit can never overtake queued work. Pair with `release()`.
    func claimIfIdle() -> Bool {
        lock.withLock {
            guard accepting, jobs.isEmpty, !busy else { return false }
            busy = true
            return true
        }
    }

    /// Gives the connection back (after a writer batch or an inline commit).
    func release() {
        lock.withLock {
            busy = false
            lock.broadcast()
        }
    }

    /// Stops accepting work (the writer could not open the database).
    func refuse() { lock.withLock { accepting = false } }

    func countCommittedTransaction() { lock.withLock { committedTransactions += 1 } }

    var committedTransactionCount: Int { lock.withLock { committedTransactions } }
}

/// A value handed from one thread to another that waits for it.
final class Rendezvous<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is read and written under `lock`.
    private let lock = ConditionLock()
    private var value: Value?

    func fulfill(_ newValue: Value) {
        lock.withLock {
            value = newValue
            lock.broadcast()
        }
    }

    func wait() -> Value {
        lock.lock()
        defer { lock.unlock() }
        while true {
            if let value { return value }
            lock.wait()
        }
    }
}
