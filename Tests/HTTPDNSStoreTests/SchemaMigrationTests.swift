import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSStore

/// The state database's own migrations, applied to real files.
struct SchemaMigrationTests {
    static let allNames = [
        "0001-cookies-dns-meta", "0002-cookies-expiry-index", "0003-address-owners-per-uid", "0004-fleet",
        "0005-drop-cookies-expiry-index",
    ]

    static func recordedMigrations(_ path: String) throws -> [String] {
        let database = try SQLiteDatabase(path: path)
        var names: [String] = []
        try database.prepare("SELECT name FROM schema_migrations ORDER BY rowid").query { names.append($0.string(0)) }
        return names
    }

    static func indexNames(_ path: String) throws -> [String] {
        let database = try SQLiteDatabase(path: path)
        var names: [String] = []
        try database.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
            .query { names.append($0.string(0)) }
        return names
    }

    @Test func freshDatabaseGetsEveryMigrationOnceInOrder() throws {
        let directory = TemporaryDirectory()
        try StoreFixtures.open(directory).close()
        try StoreFixtures.open(directory).close()
        #expect(try Self.recordedMigrations(directory.databasePath) == Self.allNames)
        #expect(try Self.indexNames(directory.databasePath).isEmpty)
    }

    /// A database as the first release left it: only migration 1, built here by hand from that
    /// release's schema, with a cookie in it.
    @Test func databaseFromTheFirstSchemaIsMigratedAndKeepsItsRows() throws {
        let directory = TemporaryDirectory()
        do {
            let database = try SQLiteDatabase(path: directory.databasePath)
            try database.execute(
                """
                PRAGMA journal_mode=WAL;
                CREATE TABLE schema_migrations (name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL);
                CREATE TABLE cookies (
                    uid INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, domain TEXT NOT NULL,
                    host_only INTEGER NOT NULL, path TEXT NOT NULL, expires INTEGER, secure INTEGER NOT NULL,
                    http_only INTEGER NOT NULL, same_site TEXT NOT NULL, partitioned INTEGER NOT NULL,
                    created INTEGER NOT NULL, creation_index INTEGER NOT NULL, last_access INTEGER NOT NULL,
                    PRIMARY KEY (uid, domain, path, name));
                CREATE TABLE dns_cache (host TEXT NOT NULL, family TEXT NOT NULL, addresses TEXT NOT NULL,
                    upstream TEXT, expires_at INTEGER NOT NULL, negative INTEGER NOT NULL, PRIMARY KEY (host, family));
                CREATE TABLE address_owners (ip TEXT PRIMARY KEY NOT NULL, host TEXT NOT NULL,
                    expires_at INTEGER NOT NULL, recency INTEGER NOT NULL);
                CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                INSERT INTO schema_migrations VALUES ('0001-cookies-dns-meta', 1700000000);
                INSERT INTO meta VALUES ('boot_id', '\(StoreFixtures.bootA)');
                INSERT INTO cookies VALUES (1000, 'sid', 'abc', 'example.com', 1, '/', NULL, 1, 1, 'lax', 0,
                    1799999000, 7, 1799999500);
                """)
        }
        #expect(try Self.indexNames(directory.databasePath).isEmpty)

        let store = try StoreFixtures.open(directory)
        let jars = try store.loadJars(bootID: StoreFixtures.bootA, now: StoreFixtures.now)
        store.close()

        #expect(try Self.recordedMigrations(directory.databasePath) == Self.allNames)
        #expect(try Self.indexNames(directory.databasePath).isEmpty)
        let expected = Cookie(
            name: "sid", value: "abc", domain: "example.com", hostOnly: true, path: "/", expires: nil, secure: true,
            httpOnly: true, sameSite: .lax, partitioned: false, created: 1_799_999_000, creationIndex: 7,
            lastAccess: 1_799_999_500)
        #expect(jars == [1000: [expected]])
    }

    /// The IP -> host memory became per uid: rows saved without a uid cannot say whose resolve
    /// they came from, so the migration drops them instead of handing them to anyone.
    @Test func addressOwnersWithoutAUIDAreDroppedAndTheTableIsPerUID() throws {
        let directory = TemporaryDirectory()
        try StoreFixtures.open(directory).close()
        do {
            let database = try SQLiteDatabase(path: directory.databasePath)
            try database.execute(
                """
                DELETE FROM schema_migrations
                    WHERE name IN ('0003-address-owners-per-uid', '0004-fleet', '0005-drop-cookies-expiry-index');
                DROP TABLE fleet_registers;
                DROP TABLE fleet_outbox;
                DROP TABLE fleet_jars;
                DROP TABLE address_owners;
                CREATE TABLE address_owners (ip TEXT PRIMARY KEY NOT NULL, host TEXT NOT NULL,
                    expires_at INTEGER NOT NULL, recency INTEGER NOT NULL);
                INSERT INTO address_owners VALUES ('203.0.113.10', 'other.example', 1900000000, 0);
                """)
        }
        let store = try StoreFixtures.open(directory)
        defer { store.close() }
        #expect(try Self.recordedMigrations(directory.databasePath) == Self.allNames)
        #expect(try store.loadDNSSnapshot().owners.isEmpty)
        let owner = PersistedAddressOwner(
            uid: 1000, ip: "203.0.113.10", host: "mine.example", answerExpiresAtUnix: 1_900_000_000,
            expiresAtUnix: 1_900_086_400)
        try store.saveDNSSnapshot(DNSSnapshot(owners: [owner]))
        #expect(try store.loadDNSSnapshot().owners == [owner])
    }

    @Test func migrationUnknownToThisVersionIsRefused() throws {
        let directory = TemporaryDirectory()
        try StoreFixtures.open(directory).close()
        do {
            let database = try SQLiteDatabase(path: directory.databasePath)
            try database.execute("INSERT INTO schema_migrations VALUES ('9999-from-the-future', 1900000000)")
        }
        let error = #expect(throws: StoreError.self) { try StoreFixtures.open(directory) }
        #expect(error?.code == .incompatibleSchema)
        #expect(error?.message.hasPrefix(directory.databasePath) == true)
    }
}
