import CSQLite

/// One sqlite3 connection. Not thread-safe: it is opened with `SQLITE_OPEN_NOMUTEX`, so one thread
/// at a time may use it (it is not `Sendable`; whoever owns it decides which thread that is).
public final class SQLiteDatabase {
    /// `sqlite3_open_v2` flags.
    public struct OpenFlags: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `SQLITE_OPEN_READONLY`.
        public static let readOnly = OpenFlags(rawValue: SQLITE_OPEN_READONLY)
        /// `SQLITE_OPEN_READWRITE`.
        public static let readWrite = OpenFlags(rawValue: SQLITE_OPEN_READWRITE)
        /// `SQLITE_OPEN_CREATE`: create the file if it does not exist.
        public static let create = OpenFlags(rawValue: SQLITE_OPEN_CREATE)
        /// `SQLITE_OPEN_NOMUTEX`: no per-connection mutex; the caller confines the connection to one thread.
        public static let noMutex = OpenFlags(rawValue: SQLITE_OPEN_NOMUTEX)
        /// `SQLITE_OPEN_NOFOLLOW`: refuse a symbolic link as the database path.
        public static let noFollow = OpenFlags(rawValue: SQLITE_OPEN_NOFOLLOW)
        /// `SQLITE_OPEN_EXRESCODE`: extended result codes from the start (including open errors).
        public static let extendedResultCodes = OpenFlags(rawValue: SQLITE_OPEN_EXRESCODE)

        /// Read-write, created if missing, one thread at a time, no symlinks, extended result codes.
        public static let standard: OpenFlags = [.readWrite, .create, .noMutex, .noFollow, .extendedResultCodes]
    }

    /// The file name the connection was opened with.
    public let path: String
    let handle: OpaquePointer

    /// SQLite's process-wide settings, made before its first use: no memory statistics (each
    /// allocation would take a global mutex to count itself, a twentieth of a cookie commit).
    private static let configuredBeforeFirstUse: Void = { _ = csqlite_disable_memory_statistics() }()

    /// Opens (or creates) the database at `path`; sqlite reads nothing until the first statement,
    /// so a damaged file shows up then, not here.
    public init(path: String, flags: OpenFlags = .standard, busyTimeoutMilliseconds: Int32 = 5_000) throws(SQLiteError)
    {
        _ = Self.configuredBeforeFirstUse
        var raw: OpaquePointer?
        let rc = sqlite3_open_v2(path, &raw, flags.rawValue, nil)
        guard rc == SQLITE_OK, let raw else {
            let message = raw.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            let extended = raw.map { sqlite3_extended_errcode($0) } ?? rc
            sqlite3_close_v2(raw)
            throw SQLiteError(extendedCode: extended, message: "\(path): \(message)", sql: nil)
        }
        self.path = path
        self.handle = raw
        sqlite3_extended_result_codes(raw, 1)
        sqlite3_busy_timeout(raw, busyTimeoutMilliseconds)
    }

    /// Frames in the write-ahead log, as of the last commit, once `takeOverCheckpoints()` runs.
    private final class WALFrames {
        var count: Int32 = 0
    }

    private let walFrames = WALFrames()

    /// Frames the write-ahead log holds since the last checkpoint, as SQLite's WAL hook gave them
    /// at the last commit (0 before `takeOverCheckpoints()`).
    public var framesInWAL: Int { Int(walFrames.count) }

    /// Stops SQLite's automatic checkpoints, which run inside whichever commit crosses their
    /// threshold (on whatever thread made it), and counts the log's frames instead: the owner
    /// checkpoints (`checkpoint()`) where a wait for the disk does no harm.
    public func takeOverCheckpoints() {
        // The WAL hook replaces the automatic checkpoint, which SQLite implements as one.
        sqlite3_wal_hook(
            handle,
            { context, _, _, frames in
                guard let context else { return SQLITE_OK }
                Unmanaged<WALFrames>.fromOpaque(context).takeUnretainedValue().count = frames
                return SQLITE_OK
            }, Unmanaged.passUnretained(walFrames).toOpaque())
    }

    /// Copies the write-ahead log into the database file (a passive checkpoint: with this one
    /// connection nothing holds it back), so the log starts over at the next commit.
    public func checkpoint() throws(SQLiteError) {
        let rc = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        guard rc == SQLITE_OK else { throw error(sql: "wal_checkpoint") }
        walFrames.count = 0
    }

    deinit {
        // close_v2 defers the close until every statement is finalized (statements retain the database,
        // so none is left by now).
        sqlite3_close_v2(handle)
    }

    /// Runs one or more `;`-separated statements, discarding any rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            throw SQLiteError(extendedCode: sqlite3_extended_errcode(handle), message: text, sql: sql)
        }
    }

    /// Compiles one statement.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(sql: sql) }
        return SQLiteStatement(database: self, handle: raw, sql: sql)
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so the
    /// transaction cannot fail half-way on a lock upgrade). Commits if `body` returns, rolls back if it
    /// throws or if the commit fails.
    public func transaction<R>(_ body: () throws(SQLiteError) -> R) throws(SQLiteError) -> R {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            rollbackIfNeeded()
            throw error
        }
    }

    /// Rolls back the open transaction, if sqlite has not already done so itself (it may, after
    /// SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY or SQLITE_NOMEM).
    public func rollbackIfNeeded() {
        guard isInTransaction else { return }
        // A failing ROLLBACK leaves sqlite to roll back the journal when the connection next reads.
        try? execute("ROLLBACK")
    }

    /// Whether a transaction is open (`sqlite3_get_autocommit` is 0).
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Rows changed by every INSERT, UPDATE and DELETE since the connection was opened.
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    /// The error state of the connection, for a call that just failed.
    func error(sql: String?) -> SQLiteError {
        SQLiteError(
            extendedCode: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

@available(*, unavailable)
extension SQLiteDatabase: Sendable {}
