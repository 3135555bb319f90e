import HTTPDNSSQLite

/// The state database's schema, as the ordered list of its migrations.
///
/// Never edit a migration that has shipped; append a new one.
enum StateSchema {
    static let fileName = "httpdnsd.sqlite3"
    /// The DNS snapshot's tables: checked and read on the store thread once the daemon serves, so
    /// a cold start checks only what the first answer needs.
    static let snapshotTables: Set<String> = ["dns_cache", "address_owners"]

    static let migrations: [Migration] = [
        Migration(
            name: "0001-cookies-dns-meta",
            sql: """
                CREATE TABLE cookies (
                    uid INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    value TEXT NOT NULL,
                    domain TEXT NOT NULL,
                    host_only INTEGER NOT NULL,
                    path TEXT NOT NULL,
                    expires INTEGER,
                    secure INTEGER NOT NULL,
                    http_only INTEGER NOT NULL,
                    same_site TEXT NOT NULL,
                    partitioned INTEGER NOT NULL,
                    created INTEGER NOT NULL,
                    creation_index INTEGER NOT NULL,
                    last_access INTEGER NOT NULL,
                    PRIMARY KEY (uid, domain, path, name)
                );
                CREATE TABLE dns_cache (
                    host TEXT NOT NULL,
                    family TEXT NOT NULL,
                    addresses TEXT NOT NULL,
                    upstream TEXT,
                    expires_at INTEGER NOT NULL,
                    negative INTEGER NOT NULL,
                    PRIMARY KEY (host, family)
                );
                CREATE TABLE address_owners (
                    ip TEXT PRIMARY KEY NOT NULL,
                    host TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    recency INTEGER NOT NULL
                );
                CREATE TABLE meta (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                );
                """),
        // The startup purge deletes expired persistent cookies; without an index it reads every row.
        Migration(
            name: "0002-cookies-expiry-index",
            sql: "CREATE INDEX cookies_by_expiry ON cookies (expires) WHERE expires IS NOT NULL;"),
        // The IP -> host memory became per uid, with several hosts per address. The old rows say
        // nothing about whose resolve they came from, so they are dropped rather than guessed.
        Migration(
            name: "0003-address-owners-per-uid",
            sql: """
                DROP TABLE address_owners;
                CREATE TABLE address_owners (
                    uid INTEGER NOT NULL,
                    ip TEXT NOT NULL,
                    host TEXT NOT NULL,
                    answer_expires_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    recency INTEGER NOT NULL,
                    PRIMARY KEY (uid, ip, host)
                );
                """),
        // The fleet tier: the last-writer-wins register of every shared cookie (a tombstone is a
        // register with deleted = 1: one row per cookie, whatever its state, is what last-writer-
        // wins compares against), the outbox of local changes not yet published (the change as
        // its JSON record), and the shared jars already handed to the fleet. The machine id, the
        // stream cursor and the last published entry are rows of meta.
        Migration(
            name: "0004-fleet",
            sql: """
                CREATE TABLE fleet_registers (
                    jar TEXT NOT NULL,
                    domain TEXT NOT NULL,
                    path TEXT NOT NULL,
                    name TEXT NOT NULL,
                    updated_ms INTEGER NOT NULL,
                    machine TEXT NOT NULL,
                    deleted INTEGER NOT NULL,
                    PRIMARY KEY (jar, domain, path, name)
                );
                CREATE TABLE fleet_outbox (
                    sequence INTEGER PRIMARY KEY NOT NULL,
                    change TEXT NOT NULL
                );
                CREATE TABLE fleet_jars (
                    jar TEXT PRIMARY KEY NOT NULL
                );
                """),
        // The expiry index made every set that changes a cookie write two more pages (the entry's
        // old and new places) and cost a lone set about twice its time. The startup purge now
        // rides the load's scan of the whole table instead.
        Migration(name: "0005-drop-cookies-expiry-index", sql: "DROP INDEX IF EXISTS cookies_by_expiry;"),
    ]
}
