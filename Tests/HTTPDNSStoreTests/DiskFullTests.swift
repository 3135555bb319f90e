import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSStore

/// A real ENOSPC: the commit that does not fit fails with `.diskFull`, everything acknowledged stays,
/// and the same connection writes again once there is room. (The contract suite runs the same
/// story against `PRAGMA max_page_count`.)
struct DiskFullTests {
    typealias F = StoreFixtures

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullFilesystemFailsTheCommitAndLosesNothingAcknowledged() throws {
        let directory = TemporaryDirectory()
        let mountPoint = directory.file("fs")
        #expect(mkdir(mountPoint, 0o700) == 0)
        try #require(mount("tmpfs", mountPoint, "tmpfs", 0, "size=512k,mode=0700") == 0, "mount: errno \(errno)")
        defer { umount2(mountPoint, Int32(MNT_DETACH)) }
        let stateDirectory = "\(mountPoint)/state"

        // Room to give back later, so the same connection can show it still works.
        RawFile.write("\(mountPoint)/filler", [UInt8](repeating: 1, count: 64 * 1024))
        let store = try SQLiteStateStore.open(directory: stateDirectory, resetOnCorruption: false, log: { _ in })
        _ = try store.loadJars(bootID: F.bootA, now: F.now)
        var acknowledged: Set<String> = []
        var failure: StoreError?
        for batch in 0..<200 where failure == nil {
            let names = (0..<10).map { "b\(batch)-\($0)" }
            switch store.commitOne(
                F.upserts(9, names.map { F.cookie($0, value: String(repeating: "x", count: 3_000)) }))
            {
            case .success: acknowledged.formUnion(names)
            case .failure(let error): failure = error
            }
        }
        #expect(failure?.code == .diskFull)
        #expect(failure?.message.hasPrefix(stateDirectory) == true)
        #expect(!acknowledged.isEmpty)
        #expect(Set(try store.loadJar(uid: 9, now: F.now).map(\.name)) == acknowledged)

        #expect(unlink("\(mountPoint)/filler") == 0)
        #expect(store.commitOne(F.upserts(9, [F.cookie("after")])).failure == nil)
        acknowledged.insert("after")
        store.close()

        let reopened = try SQLiteStateStore.open(directory: stateDirectory, resetOnCorruption: false, log: { _ in })
        defer { reopened.close() }
        #expect(Set(try reopened.loadJars(bootID: F.bootA, now: F.now)[9]?.map(\.name) ?? []) == acknowledged)
    }

    /// A checkpoint that fails on a full disk is said once, tried again only when the log has grown
    /// by another thousand frames, and succeeds once there is room; nothing committed is lost.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFailingCheckpointIsLoggedOnceAndWaitsForTheLogToGrow() throws {
        let directory = TemporaryDirectory()
        let mountPoint = directory.file("fs")
        #expect(mkdir(mountPoint, 0o700) == 0)
        try #require(mount("tmpfs", mountPoint, "tmpfs", 0, "size=16m,mode=0700") == 0, "mount: errno \(errno)")
        defer { umount2(mountPoint, Int32(MNT_DETACH)) }
        let log = CapturedLog()
        let store = try SQLiteStateStore.open(directory: "\(mountPoint)/state", resetOnCorruption: false, log: log.sink)
        defer { store.close() }
        _ = try store.loadJars(bootID: F.bootA, now: F.now)
        var committed = 0
        while !store.needsCheckpoint {
            let value = String(repeating: "x", count: 3_000)
            try #require(store.commitOne(F.upserts(9, [F.cookie("c\(committed)", value: value)])).failure == nil)
            committed += 1
        }
        // Everything else of the file system taken: the checkpoint cannot grow the database file.
        // Close-on-exec: a process another test spawns meanwhile must not keep the filler's
        // blocks taken after the unlink below.
        let filler = "\(mountPoint)/filler"
        let fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let block = [UInt8](repeating: 1, count: 64 * 1024)
        while block.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
        store.checkpoint()
        #expect(!store.needsCheckpoint, "not due again until the log grows")
        store.checkpoint()
        #expect(log.all.filter { $0.contains("checkpoint failed") }.count == 1, "\(log.all)")
        #expect(unlink(filler) == 0)
        store.checkpoint()
        #expect(log.all.last?.contains("checkpoints succeed again") == true, "\(log.all)")
        #expect(try store.loadJar(uid: 9, now: F.now).count == committed)
    }
}
