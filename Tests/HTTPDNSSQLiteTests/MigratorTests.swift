import HTTPDNSSQLite
import HTTPDNSTestSupport
import Testing

struct MigratorTests {
    static func tables(_ database: SQLiteDatabase) throws -> [String] {
        var tables: [String] = []
        try database.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").query {
            tables.append($0.string(0))
        }
        return tables
    }

    @Test func migrationsRunInOrderEachInItsOwnTransaction() throws {
        let directory = TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.file("t.sqlite3"))
        let broken = [
            Migration(name: "a", sql: "CREATE TABLE a (x)"),
            Migration(name: "b", sql: "CREATE TABLE b (x); CREATE TABLE a (y)"),  // fails half-way
        ]
        let error = #expect(throws: MigrationError.self) { _ = try Migrator.migrate(database, broken) }
        guard case .failed(let migration, let failure) = error else {
            Issue.record("expected a failed migration, got \(String(describing: error))")
            return
        }
        #expect(migration == "b")
        #expect(failure.code == .error)
        #expect(try Migrator.recordedNames(database) == ["a"])
        #expect(try Self.tables(database) == ["a", "schema_migrations"])  // "b" was rolled back with its migration

        let fixed = [broken[0], Migration(name: "b", sql: "CREATE TABLE b (x)")]
        #expect(try Migrator.migrate(database, fixed) == ["b"])
        #expect(try Migrator.migrate(database, fixed) == [])
        #expect(try Migrator.recordedNames(database) == ["a", "b"])
    }

    @Test func recordedMigrationsThatAreNotAPrefixAreRefusedAndNothingChanges() throws {
        let directory = TemporaryDirectory()
        let database = try SQLiteDatabase(path: directory.file("t.sqlite3"))
        #expect(try Migrator.migrate(database, [Migration(name: "a", sql: "CREATE TABLE a (x)")]) == ["a"])
        let other = [Migration(name: "z", sql: "CREATE TABLE z (x)"), Migration(name: "b", sql: "CREATE TABLE b (x)")]
        let error = #expect(throws: MigrationError.self) { _ = try Migrator.migrate(database, other) }
        guard case .unknownMigrations(let recorded) = error else {
            Issue.record("expected unknown migrations, got \(String(describing: error))")
            return
        }
        #expect(recorded == ["a"])
        // Fewer known migrations than recorded ones: a newer program wrote the file.
        #expect(throws: MigrationError.self) { _ = try Migrator.migrate(database, []) }
        #expect(try Self.tables(database) == ["a", "schema_migrations"])
    }
}
