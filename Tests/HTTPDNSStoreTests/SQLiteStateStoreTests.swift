import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSStore

/// What only the SQLite store has: a file that outlives the process, its mode, its WAL, and
/// failures that hit one batch of a group.
struct SQLiteStateStoreTests {
    typealias F = StoreFixtures

    @Test func everythingCommittedIsThereAfterAReopen() throws {
        let directory = TemporaryDirectory()
        let alice = [F.cookie("a1", expires: nil), F.cookie("a2", creationIndex: 1)]
        let bob = [F.cookie("b1", value: "bob's", domain: "shop.example", creationIndex: 2)]
        let store = try F.open(directory)
        _ = try store.loadJars(bootID: F.bootA, now: F.now)
        #expect(store.commit([F.upserts(1000, alice), F.upserts(1001, bob)]).allSatisfy { $0.failure == nil })
        try store.saveDNSSnapshot(
            DNSSnapshot(entries: StoreContractTests.entries, owners: StoreContractTests.owners))
        store.close()

        let reopened = try F.open(directory)
        defer { reopened.close() }
        let jars = try reopened.loadJars(bootID: F.bootA, now: F.now)
        #expect(Set(jars[1000] ?? []) == Set(alice))
        #expect(jars[1001] == bob)
        #expect(
            try reopened.loadDNSSnapshot()
                == DNSSnapshot(entries: StoreContractTests.entries, owners: StoreContractTests.owners))
    }

    /// The boot id is kept in the file: a restart within one boot keeps session cookies.
    /// Commits never checkpoint by themselves: the store says when one is due (SQLite's own
    /// threshold of 1000 log frames) and does it when told; what was committed stays either way.
    @Test func aCheckpointIsDueAfterAThousandFramesAndRunsWhenAsked() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        var commits = 0
        while !store.needsCheckpoint && commits < 5_000 {
            let value = String(repeating: "v", count: 3_000)
            #expect(
                store.commit([F.upserts(1, [F.cookie("c\(commits)", value: value)])]).allSatisfy {
                    (try? $0.get()) != nil
                })
            commits += 1
        }
        #expect(store.needsCheckpoint)
        #expect(commits > 100, "one commit alone should not fill the log (\(commits))")
        store.checkpoint()
        #expect(!store.needsCheckpoint)
        #expect(try store.loadJar(uid: 1, now: F.now).count == commits)
        store.close()
    }

    @Test func sessionCookiesSurviveARestartInTheSameBootOnly() throws {
        let directory = TemporaryDirectory()
        let session = F.cookie("session", expires: nil)
        let persistent = F.cookie("persistent", expires: F.now + 60)
        let store = try F.open(directory)
        _ = try store.loadJars(bootID: F.bootA, now: F.now)
        #expect(store.commitOne(F.upserts(1000, [session, persistent])).failure == nil)
        store.close()

        let sameBoot = try F.open(directory)
        #expect(Set(try sameBoot.loadJars(bootID: F.bootA, now: F.now)[1000] ?? []) == [session, persistent])
        sameBoot.close()

        let nextBoot = try F.open(directory)
        #expect(try nextBoot.loadJars(bootID: F.bootB, now: F.now) == [1000: [persistent]])
        #expect(nextBoot.commitOne(F.upserts(1000, [session])).failure == nil)
        nextBoot.close()

        let laterInB = try F.open(directory)
        defer { laterInB.close() }
        #expect(Set(try laterInB.loadJars(bootID: F.bootB, now: F.now)[1000] ?? []) == [session, persistent])
    }

    @Test func expiredCookiesAreDeletedFromTheFile() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        #expect(store.commitOne(F.upserts(7, [F.cookie("now", expires: F.now), F.cookie("live")])).failure == nil)
        _ = try store.loadJars(bootID: F.bootA, now: F.now)
        #expect(try store.count("SELECT count(*) FROM cookies") == 1)
    }

    /// The purge reads a row's expiry before the rest: an expired row goes even when its uid is
    /// out of range (the file is not trusted), and a live one of such a uid is left unread.
    @Test func expiredRowsGoWhateverTheirUID() throws {
        let directory = TemporaryDirectory()
        try F.open(directory).close()
        do {
            let database = try SQLiteDatabase(path: directory.databasePath)
            try database.execute(
                """
                INSERT INTO cookies VALUES (\(1 << 40), 'old', 'v', 'example.com', 1, '/', \(F.now - 1), 0, 0, 'lax', 0,
                    0, 1, 0);
                INSERT INTO cookies VALUES (\(1 << 40), 'live', 'v', 'example.com', 1, '/', \(F.now + 100), 0, 0, 'lax', 0,
                    0, 2, 0);
                """)
        }
        let store = try F.open(directory)
        defer { store.close() }
        #expect(try store.loadJars(bootID: F.bootA, now: F.now).isEmpty)
        #expect(try store.count("SELECT count(*) FROM cookies WHERE name = 'old'") == 0)
        #expect(try store.count("SELECT count(*) FROM cookies WHERE name = 'live'") == 1)
    }

    @Test func databaseAndItsCompanionFilesAreMode0600() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        #expect(store.commitOne(F.upserts(1, [F.cookie("x")])).failure == nil)
        for suffix in ["", "-wal", "-shm"] {
            var status = stat()
            #expect(stat(directory.databasePath + suffix, &status) == 0, "\(suffix)")
            #expect(status.st_mode & 0o777 == 0o600, "\(suffix)")
        }
    }

    @Test func closeCheckpointsTheWAL() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        let cookies = (0..<300).map { F.cookie("c\($0)", creationIndex: UInt64($0)) }
        for chunk in stride(from: 0, to: cookies.count, by: 50) {
            #expect(store.commitOne(F.upserts(42, Array(cookies[chunk..<chunk + 50]))).failure == nil)
        }
        store.close()
        #expect(directory.fileNames() == ["httpdnsd.sqlite3"])  // the last close removes the WAL

        let reopened = try F.open(directory)
        defer { reopened.close() }
        #expect(Set(try reopened.loadJars(bootID: F.bootA, now: F.now)[42] ?? []) == Set(cookies))
    }

    /// A batch that fails is rolled back alone; the other batches of its group are committed.
    @Test func oneFailingBatchDoesNotFailItsGroup() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        // Makes one particular cookie fail, as a disk error on its page would.
        try store.connection.execute(
            """
            CREATE TEMP TRIGGER refuse_poison BEFORE INSERT ON main.cookies WHEN NEW.name = 'poison'
            BEGIN SELECT RAISE(ABORT, 'refused'); END
            """)
        let results = store.commit([
            F.upserts(1, [F.cookie("good")]), F.upserts(1, [F.cookie("partial"), F.cookie("poison")]),
            F.upserts(1, [F.cookie("alsoGood")]),
        ])
        #expect(results[0].failure == nil)
        #expect(results[1].failure?.code == .ioError)
        #expect(results[2].failure == nil)
        // "partial" came with "poison" in one batch: all or nothing.
        #expect(Set(try store.loadJar(uid: 1, now: F.now).map(\.name)) == ["good", "alsoGood"])
        #expect(!(try store.connection.isInTransaction))
    }

    /// A group writes each cookie once, with its last change, however many requests changed it.
    @Test func aGroupWritesEachCookieOnce() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        let before = try store.connection.totalChanges
        var batches = (0..<100).map { F.upserts(1, [F.cookie("sid", value: "v\($0)"), F.cookie("lang")]) }
        // The same cookie in another user's jar is another row.
        batches.insert(F.upserts(2, [F.cookie("sid", value: "theirs")]), at: 50)
        #expect(store.commit(batches).allSatisfy { $0.failure == nil })
        #expect(try store.connection.totalChanges - before == 3)
        #expect(try store.loadJar(uid: 1, now: F.now).map(\.value).sorted() == ["v", "v99"])
        #expect(try store.loadJar(uid: 2, now: F.now).map(\.value) == ["theirs"])
    }

    /// The file is not trusted: a row whose uid is not a uid is skipped, not wrapped around.
    @Test func rowsWithAnImpossibleUidAreSkipped() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        #expect(store.commitOne(F.upserts(1, [F.cookie("real")])).failure == nil)
        try store.connection.execute(
            "INSERT INTO cookies SELECT 4294967297, 'forged', value, domain, host_only, path, expires, secure, "
                + "http_only, same_site, partitioned, created, creation_index, last_access FROM cookies")
        #expect(try store.loadJars(bootID: F.bootA, now: F.now).mapValues { $0.map(\.name) } == [1: ["real"]])
    }
}
