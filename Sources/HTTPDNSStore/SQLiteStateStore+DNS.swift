import HTTPDNSCore
import HTTPDNSSQLite

extension SQLiteStateStore: DNSSnapshotStore {
    public func saveDNSSnapshot(_ snapshot: DNSSnapshot) throws(StoreError) {
        let database = try openDatabase()
        do {
            try database.transaction { () throws(SQLiteError) in
                try database.execute("DELETE FROM dns_cache; DELETE FROM address_owners")
                let insertEntry = try database.prepare(
                    "INSERT OR REPLACE INTO dns_cache (host, family, addresses, upstream, expires_at, negative) "
                        + "VALUES (?, ?, ?, ?, ?, ?)")
                for entry in snapshot.entries {
                    try insertEntry.run([
                        .text(entry.host), .text(entry.family.rawValue), .text(entry.addresses.joined(separator: " ")),
                        entry.upstream.map { .text($0) } ?? .null, .integer(entry.expiresAtUnix),
                        // 1: no address of the family (NODATA), 2: no such name (NXDOMAIN).
                        .integer(entry.negative ? (entry.noSuchName ? 2 : 1) : 0),
                    ])
                }
                let insertOwner = try database.prepare(
                    "INSERT OR REPLACE INTO address_owners (uid, ip, host, answer_expires_at, expires_at, recency) "
                        + "VALUES (?, ?, ?, ?, ?, ?)")
                for (recency, owner) in snapshot.owners.enumerated() {
                    try insertOwner.run([
                        .integer(Int64(owner.uid)), .text(owner.ip), .text(owner.host),
                        .integer(owner.answerExpiresAtUnix), .integer(owner.expiresAtUnix), .integer(Int64(recency)),
                    ])
                }
            }
        } catch {
            throw StoreError(error, path: path)
        }
        releaseSnapshotPages(database)
    }

    /// Checks the snapshot's tables (`open` left them out) and reads them; damage found is a
    /// `.corrupt` error, handled like any damage a read finds.
    public func loadDNSSnapshot() throws(StoreError) -> DNSSnapshot {
        try read { database throws(SQLiteError) in
            let problems = try Self.quickCheck(database, tables: StateSchema.snapshotTables)
            guard problems == ["ok"] else {
                throw SQLiteError(
                    extendedCode: SQLiteError.ResultCode.corrupt.rawValue,
                    message: "database disk image is malformed (quick_check: \(problems.first ?? ""))", sql: nil)
            }
            var snapshot = DNSSnapshot()
            try database.prepare(
                "SELECT host, family, addresses, upstream, expires_at, negative FROM dns_cache ORDER BY expires_at, host"
            ).query { row in
                guard let family = IPFamily(rawValue: row.string(1)) else { return }
                snapshot.entries.append(
                    PersistedDNSEntry(
                        host: row.string(0), family: family,
                        addresses: row.string(2).split(separator: " ").map(String.init),
                        upstream: row.optionalString(3), expiresAtUnix: row.int64(4), negative: row.int64(5) != 0,
                        noSuchName: row.int64(5) == 2))
            }
            try database.prepare(
                "SELECT uid, ip, host, answer_expires_at, expires_at FROM address_owners ORDER BY recency"
            ).query { row in
                // A uid outside 0...2^32-1 can only come from a damaged file: skip the row.
                guard let uid = UInt32(exactly: row.int64(0)) else { return }
                snapshot.owners.append(
                    PersistedAddressOwner(
                        uid: uid, ip: row.string(1), host: row.string(2), answerExpiresAtUnix: row.int64(3),
                        expiresAtUnix: row.int64(4)))
            }
            releaseSnapshotPages(database)
            return snapshot
        }
    }

    /// The snapshot's pages are read or written once a minute at most: keeping them in the page
    /// cache between times would only hold memory (2 MiB of it with tens of thousands of names).
    private func releaseSnapshotPages(_ database: SQLiteDatabase) {
        try? database.execute("PRAGMA shrink_memory")
    }
}
