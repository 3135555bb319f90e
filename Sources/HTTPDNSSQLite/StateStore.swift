import HTTPDNSCore
import HTTPDNSSystem

/// The daemon's durable state: cookie jars (one per uid) and the DNS cache, in `httpdnsd.sqlite3` in
/// the state directory.
///
/// One dedicated thread owns the sqlite connection; every call is a job on its queue, run in order.
/// Writes are group-committed: the writer takes everything queued, applies it in one transaction,
/// fsyncs once, then calls each completion. Loads block the caller (they run at startup).
public final class StateStore: Sendable {
    private let queue: StoreQueue
    private let writer: WriterReference
    private let resetOnCorruption: Bool
    private let log: @Sendable (String) -> Void
    /// The database file.
    public let path: String

    private init(
        queue: StoreQueue, writer: WriterReference, path: String, resetOnCorruption: Bool,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.queue = queue
        self.writer = writer
        self.path = path
        self.resetOnCorruption = resetOnCorruption
        self.log = log
    }

    /// Opens (creating if needed) `<directory>/httpdnsd.sqlite3` and starts the writer thread.
    ///
    /// The file is made mode 0600, put in WAL mode (`synchronous=NORMAL`, or FULL with
    /// `synchronousFull`: see `DaemonConfiguration.Store`), checked with
    /// `PRAGMA quick_check` and migrated. A damaged file is an error naming it, or, with
    /// `resetOnCorruption`, is renamed to `httpdnsd.sqlite3.corrupt-<unix time>` (with its -wal and
    /// -shm) and replaced by a fresh one, which `log` reports.
    public static func open(
        directory: String, resetOnCorruption: Bool, synchronousFull: Bool = false,
        log: @escaping @Sendable (String) -> Void
    ) throws(StoreError) -> StateStore {
        do {
            try Files.createDirectory(directory, mode: 0o700)
        } catch {
            throw StoreError(.unavailable, "\(directory): cannot create the state directory: \(error)")
        }
        let path = directory.hasSuffix("/") ? directory + StateSchema.fileName : "\(directory)/\(StateSchema.fileName)"
        let queue = StoreQueue()
        let opened = Rendezvous<Result<Void, StoreError>>()
        let reference = WriterReference()
        spawnThread {
            let closed: @Sendable () -> Void
            do throws(StoreError) {
                let connection = try StoreConnection.open(
                    path: path, resetOnCorruption: resetOnCorruption, synchronousFull: synchronousFull, log: log)
                let writer = StoreWriter(connection: connection, queue: queue)
                reference.writer = writer
                opened.fulfill(.success(()))
                closed = writer.run()
                reference.writer = nil
            } catch {
                queue.refuse()
                opened.fulfill(.failure(error))
                return
            }
            // The connection was released with the writer: the database is closed (and checkpointed).
            closed()
        }
        try opened.wait().get()
        return StateStore(
            queue: queue, writer: reference, path: path, resetOnCorruption: resetOnCorruption, log: log)
    }

    deinit {
        // Without `close()`, queued work still finishes; nobody waits for it.
        _ = queue.submit(.close {})
    }

    // MARK: - Cookies

    /// Loads every jar. Session cookies (no expiry) are dropped when the stored boot id differs from
    /// `bootID`, which is then stored; expired cookies are deleted, not returned. Jars are ordered by
    /// last access, then creation index.
    public func loadCookies(bootID: String, now: Int64) throws(StoreError) -> [UInt32: [Cookie]] {
        try read { connection throws(SQLiteError) in try connection.loadAllCookies(bootID: bootID, now: now) }
    }

    /// One uid's jar as committed (unexpired), without writing: to resynchronize a jar after a failed
    /// commit. Runs after every write queued before it.
    public func loadCookies(uid: UInt32, now: Int64) throws(StoreError) -> [Cookie] {
        try read { connection throws(SQLiteError) in try connection.loadCookies(uid: uid, now: now) }
    }

    /// Queues `changes` (applied in order) for the next group commit. `completion` runs on the writer
    /// thread once they are durable, or with the error if they were rolled back (a failed batch is
    /// rolled back whole; other clients' batches in the same group are not affected unless the commit
    /// itself failed). It must not block, nor call the store's loads or `close()` (they wait for the
    /// writer thread it runs on); queuing more writes is fine. After `close()`, it runs at once on the
    /// calling thread with `.closed`.
    public func commit(
        _ changes: [(uid: UInt32, change: CookieChange)],
        completion: @escaping @Sendable (Result<Void, StoreError>) -> Void
    ) {
        submit(.cookies(changes, completion: completion))
    }

    /// Commits `batches` (each applied in order, in its own savepoint) on the calling thread, when
    /// the writer is idle and nothing is queued, so it can never overtake queued work. Saves the
    /// two thread hand-offs of `commit` when a single client writes; returns nil when the store is
    /// busy (then use `commit`, which joins the next group commit). Blocks for the transaction.
    public func commitNow(_ batches: [[(uid: UInt32, change: CookieChange)]]) -> [Result<Void, StoreError>]? {
        guard queue.claimIfIdle() else { return nil }
        defer { queue.release() }
        guard let writer = writer.writer else { return nil }
        let writes = batches.map { StoreWrite.cookies($0, completion: { _ in }) }
        return writer.commitInline(writes).map { $0.map { .failure($0) } ?? .success(()) }
    }

    // MARK: - DNS cache

    /// The persisted DNS cache (earliest expiry first) and address owners (least recently used first).
    public func loadDNS() throws(StoreError) -> (entries: [PersistedDNSEntry], owners: [PersistedAddressOwner]) {
        try read { connection throws(SQLiteError) in try connection.loadDNS() }
    }

    /// Replaces the persisted DNS cache and owner memory, in the same queue (and group commits) as
    /// cookie writes. `completion` as for `commit`.
    public func saveDNS(
        entries: [PersistedDNSEntry], owners: [PersistedAddressOwner],
        completion: @escaping @Sendable (Result<Void, StoreError>) -> Void
    ) {
        submit(.dns(entries: entries, owners: owners, completion: completion))
    }

    // MARK: - Lifecycle

    /// Commits everything queued, closes the database (checkpointing the WAL) and ends the writer
    /// thread. Blocks until done. Later calls return at once.
    public func close() {
        let closed = Rendezvous<Void>()
        guard queue.submit(.close { closed.fulfill(()) }) else { return }
        closed.wait()
    }

    /// Transactions the writer has committed for `commit` and `saveDNS` (one per group commit).
    public var committedTransactionCount: Int { queue.committedTransactionCount }

    // MARK: - Plumbing

    private func submit(_ write: StoreWrite) {
        guard queue.submit(.write(write)) else {
            write.completion(.failure(StoreError(.closed, "\(path): the state store is closed")))
            return
        }
    }

    /// Runs `body` on the writer thread and waits for its answer. A load that finds the file damaged
    /// resets it (with `resetOnCorruption`) and loads from the fresh, empty database.
    private func read<T: Sendable>(
        _ body: @escaping @Sendable (StoreConnection) throws(SQLiteError) -> T
    ) throws(StoreError) -> T {
        let answer = Rendezvous<Result<T, StoreError>>()
        let path = self.path
        let resetOnCorruption = self.resetOnCorruption
        let log = self.log
        let submitted = queue.submit(
            .read { connection in
                func attempt() -> Result<T, StoreError> {
                    do throws(SQLiteError) {
                        return .success(try body(connection))
                    } catch {
                        return .failure(StoreError(error, path: path))
                    }
                }
                var result = attempt()
                if case .failure(let error) = result, error.code == .corrupt, resetOnCorruption {
                    do throws(StoreError) {
                        try connection.resetAfterCorruption(error, log: log)
                        result = attempt()
                    } catch {
                        result = .failure(error)
                    }
                }
                answer.fulfill(result)
            })
        guard submitted else { throw StoreError(.closed, "\(path): the state store is closed") }
        return try answer.wait().get()
    }

    /// Runs `body` on the writer thread, in queue order, without waiting (tests use it to hold the
    /// writer while they queue work, and to reach the connection).
    func enqueueOnWriter(_ body: @escaping @Sendable (SQLiteDatabase) -> Void) {
        _ = queue.submit(.read { connection in body(connection.database) })
    }
}

/// The writer, for inline commits: set before `open` returns, cleared once the writer stops.
/// Only read by a thread that holds the connection (`StoreQueue.claimIfIdle`).
final class WriterReference: @unchecked Sendable {
    // @unchecked: written by the writer thread before `open` returns (ordered by its rendezvous)
    // and after its close; read only while holding the queue's claim on the connection.
    var writer: StoreWriter?
}
