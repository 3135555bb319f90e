import Glibc
import HTTPDNSCore
import Testing

@testable import HTTPDNSSQLite

struct DiskFullTests {
    typealias F = StoreFixtures

    static func bigCookies(_ prefix: String, count: Int) -> [(uid: UInt32, change: CookieChange)] {
        (0..<count).map {
            (uid: 9, change: .upsert(F.cookie("\(prefix)\($0)", value: String(repeating: "x", count: 3_000))))
        }
    }

    /// `PRAGMA max_page_count` makes sqlite report SQLITE_FULL exactly as a full disk does.
    @Test func fullDatabaseFailsTheCommitAndLosesNothingAcknowledged() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        _ = try store.loadCookies(bootID: F.bootA, now: F.now)
        #expect(store.commitAndWait([(9, .upsert(F.cookie("before")))]).failure == nil)
        let pages = store.onWriter { database -> Int64 in
            var count: Int64 = 0
            try? database.prepare("PRAGMA page_count").query { count = $0.int64(0) }
            try? database.execute("PRAGMA max_page_count = \(count + 2)")
            return count
        }
        #expect(pages > 0)

        let failure = store.commitAndWait(Self.bigCookies("big", count: 20)).failure
        #expect(failure?.code == .diskFull)
        #expect(failure?.message.hasPrefix(directory.databasePath) == true)
        #expect(try store.loadCookies(uid: 9, now: F.now).map(\.name) == ["before"])

        // The connection is still usable once there is room again.
        store.onWriter { database in try? database.execute("PRAGMA max_page_count = 1000000") }
        #expect(store.commitAndWait([(9, .upsert(F.cookie("after")))]).failure == nil)
        store.close()

        let reopened = try F.open(directory)
        defer { reopened.close() }
        #expect(
            Set(try reopened.loadCookies(bootID: F.bootA, now: F.now)[9]?.map(\.name) ?? []) == ["before", "after"])
    }

    /// A real ENOSPC from a small tmpfs (needs root to mount it).
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullFilesystemFailsTheCommitAndLosesNothingAcknowledged() throws {
        let directory = TemporaryDirectory()
        let mountPoint = "\(directory.path)/fs"
        #expect(mkdir(mountPoint, 0o700) == 0)
        try #require(mount("tmpfs", mountPoint, "tmpfs", 0, "size=512k,mode=0700") == 0, "mount: errno \(errno)")
        defer { umount2(mountPoint, Int32(MNT_DETACH)) }
        let stateDirectory = TemporaryDirectoryAt(path: "\(mountPoint)/state")

        // Room to give back later, so the same connection can show it still works.
        RawFile.write("\(mountPoint)/filler", [UInt8](repeating: 1, count: 64 * 1024))
        let store = try StateStore.open(directory: stateDirectory.path, resetOnCorruption: false, log: { _ in })
        _ = try store.loadCookies(bootID: F.bootA, now: F.now)
        var acknowledged: Set<String> = []
        var failure: StoreError?
        for batch in 0..<200 where failure == nil {
            let changes = Self.bigCookies("b\(batch)-", count: 10)
            switch store.commitAndWait(changes) {
            case .success:
                for (_, change) in changes { if case .upsert(let cookie) = change { acknowledged.insert(cookie.name) } }
            case .failure(let error):
                failure = error
            }
        }
        #expect(failure?.code == .diskFull)
        #expect(!acknowledged.isEmpty)
        #expect(Set(try store.loadCookies(uid: 9, now: F.now).map(\.name)) == acknowledged)

        #expect(unlink("\(mountPoint)/filler") == 0)
        #expect(store.commitAndWait([(9, .upsert(F.cookie("after")))]).failure == nil)
        acknowledged.insert("after")
        store.close()

        let reopened = try StateStore.open(directory: stateDirectory.path, resetOnCorruption: false, log: { _ in })
        defer { reopened.close() }
        #expect(Set(try reopened.loadCookies(bootID: F.bootA, now: F.now)[9]?.map(\.name) ?? []) == acknowledged)
    }
}

/// A directory path inside another test directory (removed with it).
struct TemporaryDirectoryAt {
    let path: String
}
