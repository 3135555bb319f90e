import HTTPDNSCore
import HTTPDNSSQLite
import HTTPDNSSystem

/// The daemon's durable state in one SQLite file, `httpdnsd.sqlite3` in the state directory: the
/// cookie jars with the fleet records (`JarStore`) and the DNS snapshot (`DNSSnapshotStore`) over
/// one connection.
///
/// Like its connection, it is used by one thread at a time and is not `Sendable`: the daemon
/// hands it to its `StoreThread`. The SQL lives in `SQLiteStateStore+Cookies.swift` and
/// `SQLiteStateStore+DNS.swift`.
public final class SQLiteStateStore {
    /// The database file.
    public let path: String
    /// The open connection; nil once closed.
    private(set) var database: SQLiteDatabase?
    /// Statements prepared once and reused (preparing was a visible share of a group commit);
    /// they belong to `database` and go with it.
    private var statements: [PreparedStatement: SQLiteStatement] = [:]
    private let synchronousFull: Bool
    private let resetOnCorruption: Bool
    private let log: @Sendable (String) -> Void

    private init(
        path: String, database: SQLiteDatabase, synchronousFull: Bool, resetOnCorruption: Bool,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.path = path
        self.database = database
        self.synchronousFull = synchronousFull
        self.resetOnCorruption = resetOnCorruption
        self.log = log
    }

    /// Opens (creating if needed) `<directory>/httpdnsd.sqlite3`.
    ///
    /// The file is made mode 0600, put in WAL mode (`synchronous=NORMAL`, or FULL with
    /// `synchronousFull`: see `DaemonConfiguration.Store`), checked with `PRAGMA quick_check` (every
    /// table but the DNS snapshot's, which `loadDNSSnapshot` checks before it reads them) and
    /// migrated. A damaged file is an error naming it, or, with `resetOnCorruption`, is renamed to
    /// `httpdnsd.sqlite3.corrupt-<unix time>` (with its -wal and -shm) and replaced by a fresh one,
    /// which `log` reports. Damage that only a later load finds is handled the same way then.
    public static func open(
        directory: String, resetOnCorruption: Bool, synchronousFull: Bool = false,
        log: @escaping @Sendable (String) -> Void
    ) throws(StoreError) -> SQLiteStateStore {
        do {
            try Files.createDirectory(directory, mode: 0o700)
        } catch {
            throw StoreError(.unavailable, "\(directory): cannot create the state directory: \(error)")
        }
        let path = directory.hasSuffix("/") ? directory + StateSchema.fileName : "\(directory)/\(StateSchema.fileName)"
        let database: SQLiteDatabase
        do {
            database = try openChecked(path, synchronousFull: synchronousFull)
        } catch  where error.code == .corrupt && resetOnCorruption {
            try moveAside(path, after: error, log: log)
            database = try openChecked(path, synchronousFull: synchronousFull)
        }
        return SQLiteStateStore(
            path: path, database: database, synchronousFull: synchronousFull, resetOnCorruption: resetOnCorruption,
            log: log)
    }

    /// Log frames at which a checkpoint is due: SQLite's own automatic threshold (about 4 MB).
    static let checkpointFrames = 1_000

    /// The log's size at which the next checkpoint is due: `checkpointFrames`, or that much more
    /// than when the last one failed (a full disk fails each until there is room again).
    private var checkpointDueAtFrames = SQLiteStateStore.checkpointFrames
    /// Whether the last checkpoint failed: a failure is logged once, not at every retry.
    private var checkpointFailing = false

    /// Whether the WAL has grown to the next checkpoint's size.
    public var needsCheckpoint: Bool { (database?.framesInWAL ?? 0) >= checkpointDueAtFrames }

    /// Copies the WAL into the database file. A failure is logged once until one succeeds again,
    /// and the next try waits for the log to grow by `checkpointFrames`; every commit in the log
    /// stays durable meanwhile.
    public func checkpoint() {
        guard let database else { return }
        do {
            try database.checkpoint()
            checkpointDueAtFrames = Self.checkpointFrames
            if checkpointFailing { log("\(path): checkpoints succeed again") }
            checkpointFailing = false
        } catch {
            checkpointDueAtFrames = database.framesInWAL + Self.checkpointFrames
            if !checkpointFailing {
                log("\(path): checkpoint failed, the log keeps growing until one succeeds: \(error)")
            }
            checkpointFailing = true
        }
    }

    /// Closes the connection: the last close checkpoints the WAL into the database file.
    public func close() {
        statements.removeAll()
        database = nil
    }

    // MARK: - For the SQL extensions

    /// The open connection, or `.closed`.
    func openDatabase() throws(StoreError) -> SQLiteDatabase {
        guard let database else { throw StoreError(.closed, "\(path): the state store is closed") }
        return database
    }

    /// `prepared`, prepared once per connection (`database` is the open connection).
    func statement(_ prepared: PreparedStatement, on database: SQLiteDatabase) throws(SQLiteError) -> SQLiteStatement {
        if let statement = statements[prepared] { return statement }
        let statement = try database.prepare(prepared.sql)
        statements[prepared] = statement
        return statement
    }

    /// Runs a read; a read that finds the file damaged resets it (with `resetOnCorruption`) and
    /// runs again on the fresh, empty database.
    func read<T>(_ body: (SQLiteDatabase) throws(SQLiteError) -> T) throws(StoreError) -> T {
        func attempt() throws(StoreError) -> T {
            let database = try openDatabase()
            do {
                return try body(database)
            } catch {
                throw StoreError(error, path: path)
            }
        }
        do {
            return try attempt()
        } catch  where error.code == .corrupt && resetOnCorruption {
            try resetAfterCorruption(error)
            return try attempt()
        }
    }

    // MARK: - Corruption

    /// Replaces a database found damaged after opening.
    private func resetAfterCorruption(_ error: StoreError) throws(StoreError) {
        // sqlite must let go of the files (and not checkpoint into them) before they are renamed.
        close()
        try Self.moveAside(path, after: error, log: log)
        database = try Self.openChecked(path, synchronousFull: synchronousFull)
        // A fresh file and log: nothing of the old one's checkpoints carries over.
        checkpointDueAtFrames = Self.checkpointFrames
        checkpointFailing = false
    }

    private static func moveAside(_ path: String, after error: StoreError, log: (String) -> Void) throws(StoreError) {
        do {
            let target = try StateFiles.moveAside(path, now: StateFiles.unixTime())
            log("\(error.message); moved it to \(target) and started a fresh database (ResetOnCorruption=yes)")
        } catch {
            throw StoreError(.unavailable, "\(path): cannot move the damaged database aside: \(error)")
        }
    }

    // MARK: - Opening

    /// Opens the file (mode 0600), switches it to WAL, checks it and migrates it.
    private static func openChecked(_ path: String, synchronousFull: Bool) throws(StoreError) -> SQLiteDatabase {
        do {
            try StateFiles.makePrivateFile(path)
        } catch {
            throw StoreError(.unavailable, "\(path): \(error)")
        }
        let database: SQLiteDatabase
        let problems: [String]
        do {
            database = try SQLiteDatabase(path: path)
            try configure(database, synchronousFull: synchronousFull)
            problems = try quickCheck(
                database, tables: try tables(of: database).subtracting(StateSchema.snapshotTables))
        } catch {
            throw corruptionAdvice(StoreError(error, path: path))
        }
        guard problems == ["ok"] else {
            throw corruptionAdvice(
                StoreError(.corrupt, "\(path): database disk image is malformed (quick_check: \(problems.first ?? ""))")
            )
        }
        let fileMode = try journalMode(database, path: path)
        guard fileMode == "wal" else {
            throw StoreError(.unavailable, "\(path): PRAGMA journal_mode=WAL answered '\(fileMode)', not 'wal'")
        }
        do {
            _ = try Migrator.migrate(database, StateSchema.migrations)
        } catch {
            switch error {
            case .unknownMigrations(let recorded):
                throw StoreError(
                    .incompatibleSchema,
                    "\(path): the database records schema migrations this httpdnsd does not know "
                        + "(\(recorded.joined(separator: ", "))); a newer version wrote it")
            case .failed(_, let failure):
                throw StoreError(failure, path: path)
            }
        }
        return database
    }

    /// Adds what the operator can do to a corruption error.
    private static func corruptionAdvice(_ error: StoreError) -> StoreError {
        guard error.code == .corrupt else { return error }
        return StoreError(
            .corrupt, "\(error.message); move it aside or set ResetOnCorruption=yes", underlying: error.underlying)
    }

    private static func configure(_ database: SQLiteDatabase, synchronousFull: Bool) throws(SQLiteError) {
        // WAL: readers never block the writer and a commit is one sequential append.
        try database.execute("PRAGMA journal_mode=WAL")
        // NORMAL: each commit is written to the WAL before it is acknowledged, so it survives the
        // daemon crashing or being killed; FULL also fsyncs it, surviving power loss.
        try database.execute(synchronousFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        try database.execute("PRAGMA foreign_keys=ON")
        // A lone client's commit runs on the loop thread (`StoreThread.borrowIfIdle`): the
        // checkpoint SQLite would run inside it (copying the log and waiting for the disk) runs
        // on the store thread instead (`needsCheckpoint`).
        database.takeOverCheckpoints()
    }

    private static func journalMode(_ database: SQLiteDatabase, path: String) throws(StoreError) -> String {
        do {
            var mode = ""
            try database.prepare("PRAGMA journal_mode").query { row in mode = row.string(0).lowercased() }
            return mode
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// `PRAGMA quick_check` of `tables` and their indexes: ["ok"] when they are sound, otherwise
    /// the problems found. One table at a time: checking the whole file would read the DNS
    /// snapshot too (tens of thousands of rows, most of a cold start's time in SQLite).
    static func quickCheck(_ database: SQLiteDatabase, tables: Set<String>) throws(SQLiteError) -> [String] {
        for table in tables.sorted() {
            var lines: [String] = []
            try database.prepare("PRAGMA quick_check(\"\(table)\")").query { row in lines.append(row.string(0)) }
            if lines != ["ok"] { return lines.map { "\(table): \($0)" } }
        }
        return ["ok"]
    }

    /// The names of the file's tables (reading the schema, which fails on a damaged one).
    private static func tables(of database: SQLiteDatabase) throws(SQLiteError) -> Set<String> {
        var names: Set<String> = []
        try database.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").query { row in
            names.insert(row.string(0))
        }
        return names
    }
}

@available(*, unavailable, message: "the state store belongs to one thread at a time (its StoreThread)")
extension SQLiteStateStore: Sendable {}

extension StoreError {
    /// Classifies a sqlite failure on the database at `path`.
    init(_ error: SQLiteError, path: String, file: String = #fileID, line: Int = #line) {
        let code: Code
        switch error.code {
        case .corrupt, .notADatabase: code = .corrupt
        case .full: code = .diskFull
        case .cantOpen, .readOnly: code = .unavailable
        default: code = .ioError
        }
        self.init(code, "\(path): \(error.message)", underlying: error, file: file, line: line)
    }
}
