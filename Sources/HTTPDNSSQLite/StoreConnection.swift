import HTTPDNSCore
import HTTPDNSSystem

/// The state database as the writer thread sees it: opened, configured, checked and migrated, with
/// the SQL for cookies and the DNS cache. Confined to the writer thread, like its `SQLiteDatabase`.
final class StoreConnection {
    let path: String
    private(set) var database: SQLiteDatabase
    /// Prepared once and reused by every group commit (preparing was a visible share of a commit).
    var writeStatements = WriteStatements()
    private let synchronousFull: Bool

    private init(path: String, database: SQLiteDatabase, synchronousFull: Bool) {
        self.path = path
        self.database = database
        self.synchronousFull = synchronousFull
    }

    /// Opens `path`; a damaged file is moved aside and replaced when `resetOnCorruption` is set.
    static func open(
        path: String, resetOnCorruption: Bool, synchronousFull: Bool, log: (String) -> Void
    ) throws(StoreError) -> StoreConnection {
        do {
            return StoreConnection(
                path: path, database: try openChecked(path, synchronousFull: synchronousFull),
                synchronousFull: synchronousFull)
        } catch  where error.code == .corrupt && resetOnCorruption {
            try moveAside(path, after: error, log: log)
            return StoreConnection(
                path: path, database: try openChecked(path, synchronousFull: synchronousFull),
                synchronousFull: synchronousFull)
        }
    }

    /// Replaces a database found damaged after opening (during a startup load).
    func resetAfterCorruption(_ error: StoreError, log: (String) -> Void) throws(StoreError) {
        // A placeholder keeps `database` valid while the damaged connection is closed: sqlite must
        // let go of the files (and not checkpoint into them) before they are renamed.
        writeStatements = WriteStatements()  // they belong to the damaged connection
        database = try Self.inMemoryPlaceholder()
        try Self.moveAside(path, after: error, log: log)
        database = try Self.openChecked(path, synchronousFull: synchronousFull)
    }

    private static func moveAside(_ path: String, after error: StoreError, log: (String) -> Void) throws(StoreError) {
        do {
            let target = try StateFiles.moveAside(path, now: StateFiles.unixTime())
            log("\(error.message); moved it to \(target) and started a fresh database (ResetOnCorruption=yes)")
        } catch {
            throw StoreError(.unavailable, "\(path): cannot move the damaged database aside: \(error)")
        }
    }

    private static func inMemoryPlaceholder() throws(StoreError) -> SQLiteDatabase {
        do {
            return try SQLiteDatabase(path: ":memory:")
        } catch {
            throw StoreError(error, path: ":memory:")
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
            problems = try quickCheck(database)
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
        _ = try Migrator.migrate(database, StateSchema.migrations)
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

    /// `PRAGMA quick_check`: ["ok"] for a sound file, otherwise the problems found.
    private static func quickCheck(_ database: SQLiteDatabase) throws(SQLiteError) -> [String] {
        var lines: [String] = []
        try database.prepare("PRAGMA quick_check").query { row in lines.append(row.string(0)) }
        return lines
    }

    // MARK: - Cookies

    static let cookieColumns =
        "uid, name, value, domain, host_only, path, expires, secure, http_only, same_site, partitioned, "
        + "created, creation_index, last_access"

    /// Statements reused across the batches of one group commit.
    struct WriteStatements {
        var upsertCookie: SQLiteStatement?
        var deleteCookie: SQLiteStatement?
    }

    /// Applies one batch of changes, in order.
    func apply(_ changes: [(uid: UInt32, change: CookieChange)], statements: inout WriteStatements) throws(SQLiteError)
    {
        for (uid, change) in changes {
            switch change {
            case .upsert(let cookie):
                if statements.upsertCookie == nil {
                    statements.upsertCookie = try database.prepare(
                        "INSERT OR REPLACE INTO cookies (\(Self.cookieColumns)) "
                            + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
                }
                try statements.upsertCookie?.run(Self.row(uid: uid, cookie))
            case .delete(let key):
                if statements.deleteCookie == nil {
                    statements.deleteCookie = try database.prepare(
                        "DELETE FROM cookies WHERE uid = ? AND domain = ? AND path = ? AND name = ?")
                }
                try statements.deleteCookie?.run([
                    .integer(Int64(uid)), .text(key.domain), .text(key.path), .text(key.name),
                ])
            }
        }
    }

    /// Every jar, after dropping session cookies of an earlier boot and purging expired cookies.
    func loadAllCookies(bootID: String, now: Int64) throws(SQLiteError) -> [UInt32: [Cookie]] {
        try database.transaction { () throws(SQLiteError) in
            var storedBootID: String?
            try database.prepare("SELECT value FROM meta WHERE key = 'boot_id'").query { row in
                storedBootID = row.string(0)
            }
            if storedBootID != bootID {
                // A reboot ends every browsing session (RFC 6265bis 5.7: session cookies expire "at the
                // end of the session"); daemon restarts within one boot do not.
                try database.execute("DELETE FROM cookies WHERE expires IS NULL")
                try database.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('boot_id', ?)")
                    .run([.text(bootID)])
            }
            try database.prepare("DELETE FROM cookies WHERE expires IS NOT NULL AND expires <= ?")
                .run([.integer(now)])
            var jars: [UInt32: [Cookie]] = [:]
            try database.prepare(
                "SELECT \(Self.cookieColumns) FROM cookies ORDER BY uid, last_access, creation_index"
            ).query { row in
                if let (uid, cookie) = Self.cookie(row) { jars[uid, default: []].append(cookie) }
            }
            return jars
        }
    }

    /// One jar as stored, without writing anything (it runs after a failed commit, maybe on a full disk).
    func loadCookies(uid: UInt32, now: Int64) throws(SQLiteError) -> [Cookie] {
        var cookies: [Cookie] = []
        try database.prepare(
            "SELECT \(Self.cookieColumns) FROM cookies WHERE uid = ? AND (expires IS NULL OR expires > ?) "
                + "ORDER BY last_access, creation_index"
        ).query([.integer(Int64(uid)), .integer(now)]) { row in
            if let (_, cookie) = Self.cookie(row) { cookies.append(cookie) }
        }
        return cookies
    }

    private static func row(uid: UInt32, _ cookie: Cookie) -> [SQLiteValue] {
        [
            .integer(Int64(uid)), .text(cookie.name), .text(cookie.value), .text(cookie.domain),
            .integer(cookie.hostOnly ? 1 : 0), .text(cookie.path), cookie.expires.map { .integer($0) } ?? .null,
            .integer(cookie.secure ? 1 : 0), .integer(cookie.httpOnly ? 1 : 0), .text(cookie.sameSite.rawValue),
            .integer(cookie.partitioned ? 1 : 0), .integer(cookie.created),
            .integer(Int64(bitPattern: cookie.creationIndex)), .integer(cookie.lastAccess),
        ]
    }

    /// Decodes a row of `cookieColumns`; nil for a uid outside UInt32 (the file is not trusted).
    private static func cookie(_ row: SQLiteStatement) -> (UInt32, Cookie)? {
        guard let uid = UInt32(exactly: row.int64(0)) else { return nil }
        let cookie = Cookie(
            name: row.string(1), value: row.string(2), domain: row.string(3), hostOnly: row.int64(4) != 0,
            path: row.string(5), expires: row.optionalInt64(6), secure: row.int64(7) != 0,
            httpOnly: row.int64(8) != 0, sameSite: CookieSameSite(rawValue: row.string(9)) ?? .default,
            partitioned: row.int64(10) != 0, created: row.int64(11),
            creationIndex: UInt64(bitPattern: row.int64(12)), lastAccess: row.int64(13))
        return (uid, cookie)
    }

    // MARK: - DNS cache

    /// Replaces the persisted cache and owner memory with these (in their order).
    func replaceDNS(entries: [PersistedDNSEntry], owners: [PersistedAddressOwner]) throws(SQLiteError) {
        try database.execute("DELETE FROM dns_cache; DELETE FROM address_owners")
        let insertEntry = try database.prepare(
            "INSERT OR REPLACE INTO dns_cache (host, family, addresses, upstream, expires_at, negative) "
                + "VALUES (?, ?, ?, ?, ?, ?)")
        for entry in entries {
            try insertEntry.run([
                .text(entry.host), .text(entry.family.rawValue), .text(entry.addresses.joined(separator: " ")),
                entry.upstream.map { .text($0) } ?? .null, .integer(entry.expiresAtUnix),
                .integer(entry.negative ? 1 : 0),
            ])
        }
        let insertOwner = try database.prepare(
            "INSERT OR REPLACE INTO address_owners (uid, ip, host, answer_expires_at, expires_at, recency) "
                + "VALUES (?, ?, ?, ?, ?, ?)")
        for (recency, owner) in owners.enumerated() {
            try insertOwner.run([
                .integer(Int64(owner.uid)), .text(owner.ip), .text(owner.host), .integer(owner.answerExpiresAtUnix),
                .integer(owner.expiresAtUnix), .integer(Int64(recency)),
            ])
        }
    }

    /// The persisted cache (earliest expiry first) and owner memory (least recently used first).
    func loadDNS() throws(SQLiteError) -> (entries: [PersistedDNSEntry], owners: [PersistedAddressOwner]) {
        var entries: [PersistedDNSEntry] = []
        try database.prepare(
            "SELECT host, family, addresses, upstream, expires_at, negative FROM dns_cache ORDER BY expires_at, host"
        ).query { row in
            guard let family = IPFamily(rawValue: row.string(1)) else { return }
            entries.append(
                PersistedDNSEntry(
                    host: row.string(0), family: family,
                    addresses: row.string(2).split(separator: " ").map(String.init),
                    upstream: row.optionalString(3), expiresAtUnix: row.int64(4), negative: row.int64(5) != 0))
        }
        var owners: [PersistedAddressOwner] = []
        try database.prepare(
            "SELECT uid, ip, host, answer_expires_at, expires_at FROM address_owners ORDER BY recency"
        ).query { row in
            // A uid outside 0...2^32-1 can only come from a damaged file: skip the row.
            guard let uid = UInt32(exactly: row.int64(0)) else { return }
            owners.append(
                PersistedAddressOwner(
                    uid: uid, ip: row.string(1), host: row.string(2), answerExpiresAtUnix: row.int64(3),
                    expiresAtUnix: row.int64(4)))
        }
        return (entries, owners)
    }
}

@available(*, unavailable)
extension StoreConnection: Sendable {}
