import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite

extension SQLiteStateStore: JarStore {
    static let cookieColumns =
        "uid, name, value, domain, host_only, path, expires, secure, http_only, same_site, partitioned, "
        + "created, creation_index, last_access"

    public func loadJars(bootID: String, now: Int64) throws(StoreError) -> [UInt32: [Cookie]] {
        try read { database throws(SQLiteError) in
            try database.transaction { () throws(SQLiteError) in
                var storedBootID: String?
                try database.prepare("SELECT value FROM meta WHERE key = 'boot_id'").query { row in
                    storedBootID = row.string(0)
                }
                if storedBootID != bootID {
                    // A reboot ends every browsing session (RFC 6265bis 5.7: session cookies expire
                    // "at the end of the session"); daemon restarts within one boot do not.
                    try database.execute("DELETE FROM cookies WHERE expires IS NULL")
                    try database.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('boot_id', ?)")
                        .run([.text(bootID)])
                }
                var jars: [UInt32: [Cookie]] = [:]
                var expired: [SQLiteValue] = []
                try database.prepare(
                    "SELECT \(Self.cookieColumns), rowid FROM cookies ORDER BY uid, last_access, creation_index"
                ).query { row in
                    // Expiry first, as the purge's DELETE read it: an expired row goes whatever its
                    // uid, and is not decoded. Column 6 is `expires`; the rowid follows the cookie's 14.
                    if let expires = row.optionalInt64(6), expires <= now {
                        expired.append(.integer(row.int64(14)))
                    } else if let (uid, cookie) = Self.cookie(row) {
                        jars[uid, default: []].append(cookie)
                    }
                }
                // The purge rides the load's scan: the table has no index on expiry (migration 0005).
                let deleteRow = try database.prepare("DELETE FROM cookies WHERE rowid = ?")
                for rowid in expired { try deleteRow.run([rowid]) }
                return jars
            }
        }
    }

    public func loadJar(uid: UInt32, now: Int64) throws(StoreError) -> [Cookie] {
        try read { database throws(SQLiteError) in
            var cookies: [Cookie] = []
            try database.prepare(
                "SELECT \(Self.cookieColumns) FROM cookies WHERE uid = ? AND (expires IS NULL OR expires > ?) "
                    + "ORDER BY last_access, creation_index"
            ).query([.integer(Int64(uid)), .integer(now)]) { row in
                if let (_, cookie) = Self.cookie(row) { cookies.append(cookie) }
            }
            return cookies
        }
    }

    /// One transaction for all batches.
    ///
    /// First as one unit in which each cookie is written once, with its last change: the state that
    /// applying the batches in order leaves, at a fraction of the writes when many requests change
    /// the same cookies (a session cookie refreshed by every response). Should that fail, it is
    /// rolled back and done again batch by batch, each in its own savepoint, so that a batch that
    /// fails is rolled back alone, unless sqlite rolled back the whole transaction or the commit
    /// itself failed: then every batch fails and nothing of the group is stored.
    public func commit(_ batches: [StateBatch]) -> [Result<Void, StoreError>] {
        guard !batches.isEmpty else { return [] }
        let database: SQLiteDatabase
        do {
            database = try openDatabase()
        } catch {
            return batches.map { _ in .failure(error) }
        }
        do throws(SQLiteError) {
            try transaction(on: database) { () throws(SQLiteError) in
                for (uid, change) in Self.lastChanges(batches) { try apply(change, uid: uid, on: database) }
                for batch in batches where !batch.fleet.isEmpty { try apply(batch.fleet, on: database) }
            }
            return batches.map { _ in .success(()) }
        } catch {
            return commitEachInASavepoint(batches, on: database)
        }
    }

    private func commitEachInASavepoint(_ batches: [StateBatch], on database: SQLiteDatabase) -> [Result<
        Void, StoreError
    >] {
        var failures = [StoreError?](repeating: nil, count: batches.count)
        do throws(SQLiteError) {
            try transaction(on: database) { () throws(SQLiteError) in
                for (index, batch) in batches.enumerated() {
                    try statement(.savepoint, on: database).run()
                    do throws(SQLiteError) {
                        if let jar = batch.jar {
                            for change in jar.changes { try apply(change, uid: jar.uid, on: database) }
                        }
                        if !batch.fleet.isEmpty { try apply(batch.fleet, on: database) }
                        try statement(.releaseSavepoint, on: database).run()
                    } catch {
                        guard database.isInTransaction else { throw error }
                        try statement(.rollbackToSavepoint, on: database).run()
                        try statement(.releaseSavepoint, on: database).run()
                        failures[index] = StoreError(error, path: path)
                    }
                }
            }
        } catch {
            let failure = StoreError(error, path: path)
            for index in failures.indices where failures[index] == nil { failures[index] = failure }
        }
        return failures.map { $0.map { .failure($0) } ?? .success(()) }
    }

    /// `body` in a `BEGIN IMMEDIATE` transaction with prepared statements; rolled back if anything
    /// fails, the commit included.
    private func transaction(on database: SQLiteDatabase, _ body: () throws(SQLiteError) -> Void)
        throws(SQLiteError)
    {
        do {
            try statement(.begin, on: database).run()
            try body()
            try statement(.commit, on: database).run()
        } catch {
            database.rollbackIfNeeded()
            throw error
        }
    }

    /// The last change of each cookie (uid and key) in `batches`, in the order each was first changed.
    static func lastChanges(_ batches: [StateBatch]) -> [(uid: UInt32, change: CookieChange)] {
        struct Identity: Hashable {
            var uid: UInt32
            var key: CookieKey
        }
        let total = batches.reduce(0) { $0 + ($1.jar?.changes.count ?? 0) }
        var changes: [(uid: UInt32, change: CookieChange)] = []
        changes.reserveCapacity(total)
        if total == 1, let jar = batches.lazy.compactMap(\.jar).first(where: { !$0.changes.isEmpty }) {
            changes.append((jar.uid, jar.changes[0]))
            return changes
        }
        // Sized once: growing from empty rehashed every key at each doubling.
        var positions: [Identity: Int] = [:]
        positions.reserveCapacity(total)
        // One hash per change: the defaulted subscript, in place, inserts a missing key (-1).
        func take(_ position: inout Int) -> Int? {
            if position >= 0 { return position }
            position = changes.count
            return nil
        }
        for case let jar? in batches.lazy.map(\.jar) {
            for change in jar.changes {
                if let position = take(&positions[Identity(uid: jar.uid, key: change.key), default: -1]) {
                    changes[position].change = change
                } else {
                    changes.append((jar.uid, change))
                }
            }
        }
        return changes
    }

    private func apply(_ change: CookieChange, uid: UInt32, on database: SQLiteDatabase) throws(SQLiteError) {
        switch change {
        case .upsert(let cookie):
            try statement(.upsertCookie, on: database).run(Self.row(uid: Int64(uid), cookie))
        case .delete(let key):
            try statement(.deleteCookie, on: database).run([
                .integer(Int64(uid)), .text(key.domain), .text(key.path), .text(key.name),
            ])
        }
    }

    private static func row(uid: Int64, _ cookie: Cookie) -> [SQLiteValue] {
        [
            .integer(uid), .text(cookie.name), .text(cookie.value), .text(cookie.domain),
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
}

/// The statements of a group commit, prepared once per connection.
enum PreparedStatement: Hashable {
    case begin, commit, savepoint, releaseSavepoint, rollbackToSavepoint, upsertCookie, deleteCookie
    case upsertRegister, deleteRegister, insertOutboxEntry, acknowledgeOutbox, setMeta, insertSeededJar
    case deleteSeededJar

    var sql: String {
        switch self {
        case .begin: return "BEGIN IMMEDIATE"
        case .commit: return "COMMIT"
        case .savepoint: return "SAVEPOINT batch"
        case .releaseSavepoint: return "RELEASE batch"
        case .rollbackToSavepoint: return "ROLLBACK TO batch"
        // An update in place when the cookie exists (INSERT OR REPLACE would delete and insert the
        // row and both its index entries: measured here, about 1.4 times the time per row).
        case .upsertCookie:
            return
                "INSERT INTO cookies (\(SQLiteStateStore.cookieColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                + "ON CONFLICT (uid, domain, path, name) DO UPDATE SET value = excluded.value, "
                + "host_only = excluded.host_only, expires = excluded.expires, secure = excluded.secure, "
                + "http_only = excluded.http_only, same_site = excluded.same_site, "
                + "partitioned = excluded.partitioned, created = excluded.created, "
                + "creation_index = excluded.creation_index, last_access = excluded.last_access"
        case .deleteCookie: return "DELETE FROM cookies WHERE uid = ? AND domain = ? AND path = ? AND name = ?"
        case .upsertRegister:
            return
                "INSERT INTO fleet_registers (jar, domain, path, name, updated_ms, machine, deleted) "
                + "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (jar, domain, path, name) DO UPDATE SET "
                + "updated_ms = excluded.updated_ms, machine = excluded.machine, deleted = excluded.deleted"
        case .deleteRegister:
            return "DELETE FROM fleet_registers WHERE jar = ? AND domain = ? AND path = ? AND name = ?"
        case .insertOutboxEntry: return "INSERT OR REPLACE INTO fleet_outbox (sequence, change) VALUES (?, ?)"
        case .acknowledgeOutbox: return "DELETE FROM fleet_outbox WHERE sequence <= ?"
        case .setMeta: return "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"
        case .insertSeededJar: return "INSERT OR IGNORE INTO fleet_jars (jar) VALUES (?)"
        case .deleteSeededJar: return "DELETE FROM fleet_jars WHERE jar = ?"
        }
    }
}
