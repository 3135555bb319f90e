/// The writer thread's loop: the only code that touches the connection.
final class StoreWriter {
    private let connection: StoreConnection
    private let queue: StoreQueue

    init(connection: StoreConnection, queue: StoreQueue) {
        self.connection = connection
        self.queue = queue
    }

    /// Runs jobs until a close job, whose closure it returns: the caller runs it once this writer (and
    /// so the connection) is gone. Consecutive writes become one transaction (group commit).
    func run() -> @Sendable () -> Void {
        while true {
            var writes: [StoreWrite] = []
            for job in queue.takeAll() {
                switch job {
                case .write(let write):
                    writes.append(write)
                case .read(let body):
                    groupCommit(writes)
                    writes.removeAll()
                    body(connection)
                case .close(let done):
                    // The connection is never released again: nothing may use it after the close.
                    groupCommit(writes)
                    return done
                }
            }
            groupCommit(writes)
            queue.release()
        }
    }

    /// Commits `writes` on the calling thread, which must hold the connection (`claimIfIdle`).
    func commitInline(_ writes: [StoreWrite]) -> [StoreError?] {
        commitGroup(writes)
    }

    private func groupCommit(_ writes: [StoreWrite]) {
        for (write, failure) in zip(writes, commitGroup(writes)) {
            write.completion(failure.map { .failure($0) } ?? .success(()))
        }
    }

    /// Applies every write in one transaction and one fsync; returns each write's failure (nil:
    /// committed).
    ///
    /// Each write runs in its own savepoint, so a write that fails (and is rolled back) does not take
    /// the others with it, unless sqlite rolled back the whole transaction or the commit itself
    /// failed: then every write fails and nothing of this group is stored.
    private func commitGroup(_ writes: [StoreWrite]) -> [StoreError?] {
        guard !writes.isEmpty else { return [] }
        let database = connection.database
        var failures = [StoreError?](repeating: nil, count: writes.count)
        do throws(SQLiteError) {
            try database.execute("BEGIN IMMEDIATE")
            for (index, write) in writes.enumerated() {
                try database.execute("SAVEPOINT batch")
                do throws(SQLiteError) {
                    switch write {
                    case .cookies(let changes, _):
                        try connection.apply(changes, statements: &connection.writeStatements)
                    case .dns(let entries, let owners, _):
                        try connection.replaceDNS(entries: entries, owners: owners)
                    }
                    try database.execute("RELEASE batch")
                } catch {
                    guard database.isInTransaction else { throw error }
                    try database.execute("ROLLBACK TO batch")
                    try database.execute("RELEASE batch")
                    failures[index] = StoreError(error, path: connection.path)
                }
            }
            try database.execute("COMMIT")
            queue.countCommittedTransaction()
        } catch {
            database.rollbackIfNeeded()
            let failure = StoreError(error, path: connection.path)
            for index in failures.indices where failures[index] == nil { failures[index] = failure }
        }
        return failures
    }
}

@available(*, unavailable)
extension StoreWriter: Sendable {}
