import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSStore

struct CorruptionTests {
    typealias F = StoreFixtures
    static let garbage = Array(String(repeating: "this is not an sqlite database; ", count: 256).utf8)

    @Test func garbageFileIsAClearErrorAndLeftAlone() throws {
        let directory = TemporaryDirectory()
        RawFile.write(directory.databasePath, Self.garbage)
        let log = CapturedLog()
        let error = #expect(throws: StoreError.self) { try F.open(directory, reset: false, log: log) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.hasPrefix("\(directory.databasePath): ") == true)
        #expect(error?.message.hasSuffix("; move it aside or set ResetOnCorruption=yes") == true)
        #expect(RawFile.read(directory.databasePath) == Self.garbage)
        #expect(log.all.isEmpty)
    }

    @Test func garbageFileIsMovedAsideWhenResetIsAllowed() throws {
        let directory = TemporaryDirectory()
        RawFile.write(directory.databasePath, Self.garbage)
        let log = CapturedLog()
        let store = try F.open(directory, reset: true, log: log)
        #expect(store.commitOne(F.upserts(1, [F.cookie("fresh")])).failure == nil)
        #expect(try store.loadJar(uid: 1, now: F.now).map(\.name) == ["fresh"])
        store.close()

        let aside = directory.fileNames().filter { $0.hasPrefix("httpdnsd.sqlite3.corrupt-") }
        #expect(aside.count == 1)
        let base = try #require(aside.first)
        let stamp = base.dropFirst("httpdnsd.sqlite3.corrupt-".count)
        #expect(!stamp.isEmpty && stamp.allSatisfy(\.isNumber))
        #expect(RawFile.read("\(directory.path)/\(base)") == Self.garbage)
        #expect(log.all.count == 1)
        #expect(log.all.first?.hasPrefix(directory.databasePath) == true)
        #expect(log.all.first?.contains("\(directory.path)/\(base)") == true)
    }

    /// A sound header with a damaged b-tree page: only `PRAGMA quick_check` notices at open.
    @Test func damagedPageIsFoundByQuickCheck() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        let cookies = (0..<400).map { F.cookie("cookie-\($0)", value: String(repeating: "v", count: 100)) }
        #expect(store.commitOne(F.upserts(1, cookies)).failure == nil)
        store.close()
        let size = RawFile.size(directory.databasePath)
        #expect(size > 8 * 4096)
        // Overwrite the middle of the file (well past the header page) with a pattern of bad pointers.
        RawFile.write(directory.databasePath, [UInt8](repeating: 0x7F, count: 3 * 4096), at: size / 2 / 4096 * 4096)

        let error = #expect(throws: StoreError.self) { try F.open(directory) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("move it aside or set ResetOnCorruption=yes") == true)

        let log = CapturedLog()
        let reset = try F.open(directory, reset: true, log: log)
        defer { reset.close() }
        #expect(try reset.loadJars(bootID: F.bootA, now: F.now).isEmpty)
        #expect(log.all.count == 1)
    }

    /// The DNS snapshot's tables are checked when the snapshot is read, not at open (a cold start
    /// checks what the first answer needs): damage there leaves the jars' start alone and fails
    /// the snapshot's read.
    @Test func damageInTheDNSSnapshotIsFoundWhenTheSnapshotIsRead() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        #expect(store.commitOne(F.upserts(1, [F.cookie("kept")])).failure == nil)
        let entries = (0..<2_000).map {
            PersistedDNSEntry(
                host: "name\($0).example", family: .ipv4, addresses: ["192.0.2.1"], upstream: nil,
                expiresAtUnix: F.now + 3_600, negative: false)
        }
        try store.saveDNSSnapshot(DNSSnapshot(entries: entries))
        let root = try store.count("SELECT rootpage FROM sqlite_master WHERE name = 'dns_cache'")
        let pageSize = try store.count("PRAGMA page_size")
        store.close()
        RawFile.write(directory.databasePath, [UInt8](repeating: 0x7F, count: Int(pageSize)), at: (root - 1) * pageSize)

        let reopened = try F.open(directory)
        defer { reopened.close() }
        #expect(try reopened.loadJars(bootID: F.bootA, now: F.now)[1]?.map(\.name) == ["kept"])
        let error = #expect(throws: StoreError.self) { try reopened.loadDNSSnapshot() }
        #expect(error?.code == .corrupt, "\(error?.message ?? "")")
    }

    /// The WAL holds committed transactions not yet in the main file: it goes with it.
    @Test func movingAsideTakesTheCompanionFiles() throws {
        let directory = TemporaryDirectory()
        for suffix in ["", "-wal", "-shm"] { RawFile.write(directory.databasePath + suffix, Array(suffix.utf8)) }
        let target = try StateFiles.moveAside(directory.databasePath, now: 1_234)
        #expect(target == directory.databasePath + ".corrupt-1234")
        #expect(
            directory.fileNames() == [
                "httpdnsd.sqlite3.corrupt-1234", "httpdnsd.sqlite3.corrupt-1234-shm",
                "httpdnsd.sqlite3.corrupt-1234-wal",
            ])
        #expect(RawFile.read(target + "-wal") == Array("-wal".utf8))
    }

    @Test func twoResetsInOneSecondKeepBothCopies() throws {
        let directory = TemporaryDirectory()
        for _ in 0..<2 {
            RawFile.write(directory.databasePath, Self.garbage)
            try F.open(directory, reset: true).close()
        }
        let aside = directory.fileNames().filter { $0.hasPrefix("httpdnsd.sqlite3.corrupt-") }
        #expect(aside.count == 2)
        for name in aside { #expect(RawFile.read("\(directory.path)/\(name)") == Self.garbage) }
    }

    /// Damages the schema through the open connection, so the damage shows up at the next read.
    static func damageSchema(_ store: SQLiteStateStore) throws {
        let version = try store.count("PRAGMA schema_version")
        try store.connection.execute(
            """
            PRAGMA writable_schema = ON;
            UPDATE sqlite_master SET sql = 'CREATE TABLE cookies (' WHERE name = 'cookies';
            PRAGMA writable_schema = OFF;
            PRAGMA schema_version = \(version + 1);
            """)
    }

    @Test func damageFoundByAStartupLoadIsACorruptionError() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        try Self.damageSchema(store)
        let error = #expect(throws: StoreError.self) { try store.loadJars(bootID: F.bootA, now: F.now) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.hasPrefix(directory.databasePath) == true)
    }

    @Test func damageFoundByAStartupLoadResetsWhenAllowed() throws {
        let directory = TemporaryDirectory()
        let log = CapturedLog()
        let store = try F.open(directory, reset: true, log: log)
        #expect(store.commitOne(F.upserts(1, [F.cookie("old")])).failure == nil)
        try Self.damageSchema(store)
        #expect(try store.loadJars(bootID: F.bootA, now: F.now).isEmpty)
        #expect(log.all.count == 1)
        #expect(store.commitOne(F.upserts(1, [F.cookie("new")])).failure == nil)
        store.close()
        #expect(directory.fileNames().filter { $0.hasPrefix("httpdnsd.sqlite3.corrupt-") }.count == 1)
        let reopened = try F.open(directory)
        defer { reopened.close() }
        #expect(try reopened.loadJars(bootID: F.bootA, now: F.now)[1]?.map(\.name) == ["new"])
    }
}
