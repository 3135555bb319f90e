import HTTPDNSSQLite
import HTTPDNSTestSupport
import Testing

struct SQLiteDatabaseTests {
    @Test func typedValuesRoundTrip() throws {
        let directory = TemporaryDirectory()
        let database = try SQLiteDatabase(path: "\(directory.path)/t.sqlite3")
        try database.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n)")
        let text = "caf\u{E9} \u{1F36A} a\u{0}b"  // Non-ASCII and an embedded NUL survive as octets.
        try database.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?)").run([
            .integer(Int64.min), .real(2.5), .text(text), .blob([0, 255, 7]), .null,
        ])
        var rows = 0
        try database.prepare("SELECT i, r, s, b, n FROM t").query { row in
            rows += 1
            #expect(row.int64(0) == Int64.min)
            #expect(row.double(1) == 2.5)
            #expect(Array(row.string(2).utf8) == Array(text.utf8))
            #expect(row.blob(3) == [0, 255, 7])
            #expect(row.isNull(4))
            #expect(row.optionalInt64(4) == nil)
            #expect(row.optionalString(4) == nil)
        }
        #expect(rows == 1)
    }

    /// One statement run again and again, as the store runs its upserts: each run's texts are
    /// its own whatever the runs before bound (longer ones, more of them), an empty text stays
    /// text rather than NULL, and a parameter left out is NULL.
    @Test func reusedStatementsBindEachRunsOwnTexts() throws {
        let directory = TemporaryDirectory()
        let database = try SQLiteDatabase(path: "\(directory.path)/t.sqlite3")
        try database.execute("CREATE TABLE t (k INTEGER, a TEXT, b TEXT)")
        let insert = try database.prepare("INSERT INTO t VALUES (?, ?, ?)")
        let long = String(repeating: "x", count: 5000)
        let rows: [(Int64, [SQLiteValue])] = [
            (1, [.text("short"), .text("")]),
            (2, [.text(long), .text("caf\u{E9} \u{1F36A}")]),
            (3, [.text("a"), .text("b")]),
            (4, [.text(long + "y")]),
            (5, [.null, .text("z")]),
        ]
        for (key, texts) in rows { try insert.run([.integer(key)] + texts) }
        var found: [Int64: [String?]] = [:]
        try database.prepare("SELECT k, a, b, typeof(b) FROM t").query { row in
            found[row.int64(0)] = [row.optionalString(1), row.optionalString(2), row.string(3)]
        }
        #expect(found[1] == ["short", "", "text"])
        #expect(found[2] == [long, "caf\u{E9} \u{1F36A}", "text"])
        #expect(found[3] == ["a", "b", "text"])
        #expect(found[4] == [long + "y", nil, "null"])
        #expect(found[5] == [nil, "z", "text"])
    }

    @Test func errorCarriesCodesAndSQLButNotBoundValues() throws {
        let directory = TemporaryDirectory()
        let database = try SQLiteDatabase(path: "\(directory.path)/t.sqlite3")
        try database.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        let insert = try database.prepare("INSERT INTO t VALUES (?)")
        try insert.run([.text("secret-session-token")])
        let error = #expect(throws: SQLiteError.self) { try insert.run([.text("secret-session-token")]) }
        #expect(error?.code == .constraint)
        #expect(error?.extendedCode == 1555)  // SQLITE_CONSTRAINT_PRIMARYKEY
        #expect(error?.sql == "INSERT INTO t VALUES (?)")
        #expect(error.map { !"\($0)".contains("secret-session-token") } == true)
    }

    @Test func transactionRollsBackWhenTheBodyThrows() throws {
        let directory = TemporaryDirectory()
        let database = try SQLiteDatabase(path: "\(directory.path)/t.sqlite3")
        try database.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        #expect(throws: SQLiteError.self) {
            try database.transaction { () throws(SQLiteError) in
                try database.execute("INSERT INTO t VALUES (1)")
                try database.execute("INSERT INTO t VALUES (1)")
            }
        }
        #expect(!database.isInTransaction)
        var count: Int64 = -1
        try database.prepare("SELECT count(*) FROM t").query { count = $0.int64(0) }
        #expect(count == 0)
    }

    @Test func openingAMissingDirectoryFailsWithCantOpen() {
        let error = #expect(throws: SQLiteError.self) {
            _ = try SQLiteDatabase(path: "/nonexistent-httpdnsd-dir/x.sqlite3")
        }
        #expect(error?.code == .cantOpen)
    }

    /// Once the owner takes checkpoints over, commits only count the log's frames: no commit
    /// checkpoints by itself, however long the log grows, until `checkpoint()`.
    @Test func takenOverCheckpointsWaitForTheOwner() throws {
        let directory = TemporaryDirectory()
        let database = try SQLiteDatabase(path: "\(directory.path)/t.sqlite3")
        try database.execute("PRAGMA journal_mode=WAL")
        database.takeOverCheckpoints()
        try database.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
        let insert = try database.prepare("INSERT INTO t VALUES (?, ?)")
        var previous = database.framesInWAL
        for key in 0..<1_500 {
            try insert.run([.integer(Int64(key)), .blob(Array(repeating: 7, count: 2_000))])
            // Never back to a small log: SQLite's own checkpoint would have restarted it at 1000.
            #expect(database.framesInWAL > previous)
            previous = database.framesInWAL
        }
        #expect(database.framesInWAL > 1_000)
        try database.checkpoint()
        #expect(database.framesInWAL == 0)
        try insert.run([.integer(5_000), .blob([1])])
        // The log starts over after a checkpoint.
        #expect((1..<10).contains(database.framesInWAL))
        var rows: Int64 = 0
        try database.prepare("SELECT count(*) FROM t").query { rows = $0.int64(0) }
        #expect(rows == 1_501)
    }
}
