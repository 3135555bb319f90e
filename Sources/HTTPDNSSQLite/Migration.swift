/// One named schema change. Once shipped, a migration is never edited: a fix is a new migration.
struct Migration: Sendable {
    /// Recorded in `schema_migrations`; unique and stable forever.
    let name: String
    let sql: String
}

/// Applies migrations in order, each once, each in its own transaction, recording each by name.
enum Migrator {
    static let createLedger = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            name TEXT PRIMARY KEY NOT NULL,
            applied_at INTEGER NOT NULL
        )
        """

    /// Brings `database` up to date.
    ///
    /// - Returns: the names of the migrations applied now.
    /// - Throws: `.incompatibleSchema` when the recorded migrations are not a prefix of `migrations`
    ///   (a newer httpdnsd wrote the file), or the sqlite failure.
    static func migrate(_ database: SQLiteDatabase, _ migrations: [Migration]) throws(StoreError) -> [String] {
        let recorded: [String]
        do {
            try database.execute(createLedger)
            recorded = try recordedNames(database)
        } catch {
            throw StoreError(error, path: database.path)
        }
        guard recorded.count <= migrations.count, zip(recorded, migrations).allSatisfy({ $0 == $1.name }) else {
            throw StoreError(
                .incompatibleSchema,
                "\(database.path): the database records schema migrations this httpdnsd does not know "
                    + "(\(recorded.joined(separator: ", "))); a newer version wrote it")
        }
        var applied: [String] = []
        for migration in migrations.dropFirst(recorded.count) {
            do {
                try database.transaction { () throws(SQLiteError) in
                    try database.execute(migration.sql)
                    try database.prepare(
                        "INSERT INTO schema_migrations (name, applied_at) VALUES (?, CAST(strftime('%s', 'now') AS INTEGER))"
                    ).run([.text(migration.name)])
                }
            } catch {
                throw StoreError(error, path: database.path)
            }
            applied.append(migration.name)
        }
        return applied
    }

    /// The names in `schema_migrations`, in the order they were applied.
    static func recordedNames(_ database: SQLiteDatabase) throws(SQLiteError) -> [String] {
        var names: [String] = []
        try database.prepare("SELECT name FROM schema_migrations ORDER BY rowid").query { row in
            names.append(row.string(0))
        }
        return names
    }
}
