/// One named schema change. Once shipped, a migration is never edited: a fix is a new migration.
public struct Migration: Sendable {
    /// Recorded in `schema_migrations`; unique and stable forever.
    public let name: String
    /// One or more `;`-separated statements.
    public let sql: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
    }
}

/// Why `Migrator.migrate` stopped.
public enum MigrationError: Error, Sendable {
    /// The database records migrations that are not a prefix of the known list (a newer program
    /// wrote it); nothing was changed.
    case unknownMigrations(recorded: [String])
    /// A statement failed; the migration it belongs to (if any) was rolled back whole.
    case failed(migration: String?, SQLiteError)
}

/// Applies migrations in order, each once, each in its own transaction, recording each by name in
/// the `schema_migrations` table.
public enum Migrator {
    static let createLedger = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            name TEXT PRIMARY KEY NOT NULL,
            applied_at INTEGER NOT NULL
        )
        """

    /// Brings `database` up to date.
    ///
    /// - Returns: the names of the migrations applied now.
    public static func migrate(_ database: SQLiteDatabase, _ migrations: [Migration]) throws(MigrationError)
        -> [String]
    {
        let recorded: [String]
        do {
            try database.execute(createLedger)
            recorded = try recordedNames(database)
        } catch {
            throw .failed(migration: nil, error)
        }
        guard recorded.count <= migrations.count, zip(recorded, migrations).allSatisfy({ $0 == $1.name }) else {
            throw .unknownMigrations(recorded: recorded)
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
                throw .failed(migration: migration.name, error)
            }
            applied.append(migration.name)
        }
        return applied
    }

    /// The names in `schema_migrations`, in the order they were applied.
    public static func recordedNames(_ database: SQLiteDatabase) throws(SQLiteError) -> [String] {
        var names: [String] = []
        try database.prepare("SELECT name FROM schema_migrations ORDER BY rowid").query { row in
            names.append(row.string(0))
        }
        return names
    }
}
