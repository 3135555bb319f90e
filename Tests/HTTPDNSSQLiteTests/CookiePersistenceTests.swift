import Glibc
import HTTPDNSCore
import Testing

@testable import HTTPDNSSQLite

struct CookiePersistenceTests {
    typealias F = StoreFixtures

    @Test func jarsRoundTripPerUidWithoutMixing() throws {
        let directory = TemporaryDirectory()
        var full = F.cookie(
            "full", value: "s3cr\u{E9}t", domain: "shop.example", path: "/cart", expires: F.now + 86_400)
        full.hostOnly = false
        full.secure = true
        full.httpOnly = true
        full.sameSite = .strict
        full.partitioned = true
        full.creationIndex = UInt64.max - 1  // above Int64.max: stored as its bit pattern
        let alice = [full, F.cookie("a2", expires: nil, creationIndex: 1)]
        let bob = [F.cookie("full", value: "bob's", domain: "shop.example", path: "/cart", creationIndex: 2)]

        let store = try F.open(directory)
        _ = try store.loadCookies(bootID: F.bootA, now: F.now)
        #expect(store.commitAndWait(alice.map { (uid: 1000, change: .upsert($0)) }).failure == nil)
        #expect(store.commitAndWait(bob.map { (uid: 1001, change: .upsert($0)) }).failure == nil)
        #expect(Set(try store.loadCookies(uid: 1000, now: F.now)) == Set(alice))
        #expect(try store.loadCookies(uid: 1001, now: F.now) == bob)
        #expect(try store.loadCookies(uid: 1002, now: F.now) == [])
        store.close()

        let reopened = try F.open(directory)
        defer { reopened.close() }
        let jars = try reopened.loadCookies(bootID: F.bootA, now: F.now)
        #expect(Set(jars.keys) == [1000, 1001])
        #expect(Set(jars[1000] ?? []) == Set(alice))
        #expect(jars[1001] == bob)
    }

    @Test func sessionCookiesSurviveARestartInTheSameBootOnly() throws {
        let directory = TemporaryDirectory()
        let session = F.cookie("session", expires: nil)
        let persistent = F.cookie("persistent", expires: F.now + 60)
        let store = try F.open(directory)
        _ = try store.loadCookies(bootID: F.bootA, now: F.now)
        #expect(store.commitAndWait([(1000, .upsert(session)), (1000, .upsert(persistent))]).failure == nil)
        store.close()

        let sameBoot = try F.open(directory)
        #expect(Set(try sameBoot.loadCookies(bootID: F.bootA, now: F.now)[1000] ?? []) == [session, persistent])
        sameBoot.close()

        let nextBoot = try F.open(directory)
        #expect(try nextBoot.loadCookies(bootID: F.bootB, now: F.now) == [1000: [persistent]])
        nextBoot.close()

        // The new boot id was stored: a restart within boot B keeps B's session cookies.
        let again = try F.open(directory)
        defer { again.close() }
        _ = try again.loadCookies(bootID: F.bootB, now: F.now)
        #expect(again.commitAndWait([(1000, .upsert(session))]).failure == nil)
        again.close()
        let laterInB = try F.open(directory)
        defer { laterInB.close() }
        #expect(Set(try laterInB.loadCookies(bootID: F.bootB, now: F.now)[1000] ?? []) == [session, persistent])
    }

    @Test func expiredCookiesAreNeitherReturnedNorKept() throws {
        let directory = TemporaryDirectory()
        let expiresNow = F.cookie("now", expires: F.now)  // "expiry date is not in the future": expired
        let live = F.cookie("live", expires: F.now + 1)
        let store = try F.open(directory)
        _ = try store.loadCookies(bootID: F.bootA, now: F.now - 100)
        #expect(store.commitAndWait([(7, .upsert(expiresNow)), (7, .upsert(live))]).failure == nil)
        #expect(try store.loadCookies(uid: 7, now: F.now) == [live])
        #expect(try store.loadCookies(bootID: F.bootA, now: F.now) == [7: [live]])
        let rows = store.onWriter { database in
            var count: Int64 = -1
            try? database.prepare("SELECT count(*) FROM cookies").query { count = $0.int64(0) }
            return count
        }
        #expect(rows == 1)
        store.close()
    }

    @Test func changesApplyInOrderWithinAndAcrossCommits() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        let first = F.cookie("a", value: "1")
        let second = F.cookie("a", value: "2")
        let other = F.cookie("b")
        #expect(
            store.commitAndWait([
                (5, .upsert(first)), (5, .upsert(other)), (5, .delete(other.key)), (5, .upsert(second)),
            ]).failure == nil)
        #expect(try store.loadCookies(uid: 5, now: F.now) == [second])
        #expect(store.commitAndWait([(5, .delete(second.key)), (5, .upsert(other))]).failure == nil)
        #expect(try store.loadCookies(uid: 5, now: F.now) == [other])
        // A delete for another uid's key leaves this jar alone.
        #expect(store.commitAndWait([(6, .delete(other.key))]).failure == nil)
        #expect(try store.loadCookies(uid: 5, now: F.now) == [other])
    }

    @Test func identityIsOctetsNotUnicodeEquivalence() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        defer { store.close() }
        let composed = F.cookie("caf\u{E9}", value: "composed")
        let decomposed = F.cookie("cafe\u{301}", value: "decomposed")
        #expect(store.commitAndWait([(1, .upsert(composed)), (1, .upsert(decomposed))]).failure == nil)
        let loaded = try store.loadCookies(uid: 1, now: F.now)
        #expect(loaded.count == 2)
        #expect(Set(loaded.map { Array($0.name.utf8) }) == [Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8)])
    }

    @Test func databaseAndItsCompanionFilesAreMode0600() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        #expect(store.commitAndWait([(1, .upsert(F.cookie("x")))]).failure == nil)
        for suffix in ["", "-wal", "-shm"] {
            var status = stat()
            #expect(stat(directory.databasePath + suffix, &status) == 0, "\(suffix)")
            #expect(status.st_mode & 0o777 == 0o600, "\(suffix)")
        }
        store.close()
    }

    @Test func reopenAfterCloseSeesEverythingAndTheWALIsCheckpointed() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        _ = try store.loadCookies(bootID: F.bootA, now: F.now)
        let cookies = (0..<300).map { F.cookie("c\($0)", creationIndex: UInt64($0)) }
        for chunk in stride(from: 0, to: cookies.count, by: 50) {
            #expect(
                store.commitAndWait(cookies[chunk..<chunk + 50].map { (uid: 42, change: .upsert($0)) }).failure == nil)
        }
        store.close()
        #expect(directory.fileNames() == ["httpdnsd.sqlite3"])  // the last close checkpoints and removes the WAL

        let reopened = try F.open(directory)
        defer { reopened.close() }
        #expect(Set(try reopened.loadCookies(bootID: F.bootA, now: F.now)[42] ?? []) == Set(cookies))
    }

    @Test func callsAfterCloseFailWithClosed() throws {
        let directory = TemporaryDirectory()
        let store = try F.open(directory)
        store.close()
        store.close()  // a second close returns at once
        #expect(store.commitAndWait([(1, .upsert(F.cookie("x")))]).failure?.code == .closed)
        let error = #expect(throws: StoreError.self) { try store.loadCookies(uid: 1, now: F.now) }
        #expect(error?.code == .closed)
    }
}
