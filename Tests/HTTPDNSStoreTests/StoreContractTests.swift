import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSStore

/// Which implementation of the store protocols a contract test runs against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case inMemory
    case sqlite

    var testDescription: String { rawValue }
}

/// One store of each protocol, of one kind, with what that kind needs to stay alive and a way to
/// run it out of room.
final class StoreUnderTest {
    let jars: any JarStore
    let dns: any DNSSnapshotStore
    let fleet: any FleetStateStore
    /// Makes the store behave like a full disk: a few more large cookies fit, then none.
    let makeFull: () throws -> Void
    /// Gives the room back.
    let makeRoom: () throws -> Void
    private let directory: TemporaryDirectory?

    init(_ kind: StoreKind) throws {
        switch kind {
        case .inMemory:
            let cookies = InMemoryJarStore()
            jars = cookies
            fleet = cookies
            dns = InMemoryDNSSnapshotStore()
            directory = nil
            makeFull = {
                let count = try cookies.loadJars(bootID: StoreFixtures.bootA, now: StoreFixtures.now).values
                    .reduce(0) { $0 + $1.count }
                cookies.capacity = count + 15
            }
            makeRoom = { cookies.capacity = .max }
        case .sqlite:
            let directory = TemporaryDirectory()
            let store = try StoreFixtures.open(directory)
            self.directory = directory
            jars = store
            dns = store
            fleet = store
            // `PRAGMA max_page_count` makes sqlite report SQLITE_FULL exactly as a full disk does.
            makeFull = {
                let pages = try store.count("PRAGMA page_count")
                try store.connection.execute("PRAGMA max_page_count = \(pages + 12)")
            }
            makeRoom = { try store.connection.execute("PRAGMA max_page_count = 1000000") }
        }
    }
}

/// The behaviour every `JarStore` and `DNSSnapshotStore` promises, run against the in-memory
/// versions and the daemon's SQLite store alike.
struct StoreContractTests {
    typealias F = StoreFixtures

    @Test(arguments: StoreKind.allCases)
    func jarsRoundTripPerUidWithoutMixing(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        var full = F.cookie(
            "full", value: "s3cr\u{E9}t", domain: "shop.example", path: "/cart", expires: F.now + 86_400)
        full.hostOnly = false
        full.secure = true
        full.httpOnly = true
        full.sameSite = .strict
        full.partitioned = true
        full.creationIndex = UInt64.max - 1  // above Int64.max: SQLite stores its bit pattern
        let alice = [full, F.cookie("a2", expires: nil, creationIndex: 1)]
        let bob = [F.cookie("full", value: "bob's", domain: "shop.example", path: "/cart", creationIndex: 2)]

        #expect(try store.jars.loadJars(bootID: F.bootA, now: F.now).isEmpty)
        #expect(store.jars.commitOne(F.upserts(1000, alice)).failure == nil)
        #expect(store.jars.commitOne(F.upserts(1001, bob)).failure == nil)
        #expect(Set(try store.jars.loadJar(uid: 1000, now: F.now)) == Set(alice))
        #expect(try store.jars.loadJar(uid: 1001, now: F.now) == bob)
        #expect(try store.jars.loadJar(uid: 1002, now: F.now) == [])
        let jars = try store.jars.loadJars(bootID: F.bootA, now: F.now)
        #expect(Set(jars.keys) == [1000, 1001])
        #expect(Set(jars[1000] ?? []) == Set(alice))
        #expect(jars[1001] == bob)
    }

    @Test(arguments: StoreKind.allCases)
    func jarsComeOrderedByLastAccessThenCreation(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        var cookies = (0..<4).map { F.cookie("c\($0)", creationIndex: UInt64(10 - $0)) }
        cookies[0].lastAccess = F.now - 1
        cookies[3].lastAccess = F.now - 100
        #expect(store.jars.commitOne(F.upserts(7, cookies)).failure == nil)
        let expected = ["c3", "c2", "c1", "c0"]
        #expect(try store.jars.loadJar(uid: 7, now: F.now).map(\.name) == expected)
        #expect(try store.jars.loadJars(bootID: F.bootA, now: F.now)[7]?.map(\.name) == expected)
    }

    @Test(arguments: StoreKind.allCases)
    func sessionCookiesLastAsLongAsTheBootID(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        let session = F.cookie("session", expires: nil)
        let persistent = F.cookie("persistent", expires: F.now + 60)
        _ = try store.jars.loadJars(bootID: F.bootA, now: F.now)
        #expect(store.jars.commit([F.upserts(1000, [session, persistent])]).allSatisfy { $0.failure == nil })

        #expect(Set(try store.jars.loadJars(bootID: F.bootA, now: F.now)[1000] ?? []) == [session, persistent])
        #expect(try store.jars.loadJars(bootID: F.bootB, now: F.now) == [1000: [persistent]])
        // The new boot id was stored: within boot B, B's session cookies stay.
        #expect(store.jars.commitOne(F.upserts(1000, [session])).failure == nil)
        #expect(Set(try store.jars.loadJars(bootID: F.bootB, now: F.now)[1000] ?? []) == [session, persistent])
        #expect(Set(try store.jars.loadJar(uid: 1000, now: F.now)) == [session, persistent])
    }

    @Test(arguments: StoreKind.allCases)
    func expiredCookiesAreNeitherReturnedNorKept(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        let expiresNow = F.cookie("now", expires: F.now)  // "expiry date is not in the future": expired
        let live = F.cookie("live", expires: F.now + 1)
        _ = try store.jars.loadJars(bootID: F.bootA, now: F.now - 100)
        #expect(store.jars.commitOne(F.upserts(7, [expiresNow, live])).failure == nil)
        #expect(try store.jars.loadJar(uid: 7, now: F.now) == [live])
        #expect(try store.jars.loadJars(bootID: F.bootA, now: F.now) == [7: [live]])
        // The startup load deleted it: it does not come back for an earlier clock either.
        #expect(try store.jars.loadJar(uid: 7, now: F.now - 100) == [live])
    }

    @Test(arguments: StoreKind.allCases)
    func changesApplyInOrderWithinAndAcrossBatches(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        let first = F.cookie("a", value: "1")
        let second = F.cookie("a", value: "2")
        let other = F.cookie("b")
        let batch = StateBatch(uid: 5, changes: [.upsert(first), .upsert(other), .delete(other.key), .upsert(second)])
        #expect(store.jars.commitOne(batch).failure == nil)
        #expect(try store.jars.loadJar(uid: 5, now: F.now) == [second])
        // Several batches in one commit: applied in order, each reported.
        let results = store.jars.commit([
            StateBatch(uid: 5, changes: [.delete(second.key)]), F.upserts(5, [other]),
            StateBatch(uid: 6, changes: [.delete(other.key)]),  // another uid's key: this jar is left alone
        ])
        #expect(results.count == 3)
        #expect(results.allSatisfy { $0.failure == nil })
        #expect(try store.jars.loadJar(uid: 5, now: F.now) == [other])
        #expect(store.jars.commit([]).isEmpty)
    }

    /// Many batches that change the same few cookies, committed together, leave what committing them
    /// one by one leaves.
    @Test(arguments: StoreKind.allCases)
    func aGroupLeavesWhatItsBatchesOneByOneLeave(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        let reference = InMemoryJarStore()
        var random = SeededGenerator(state: 0x5EED_0F_C00C1E)
        for round in 0..<20 {
            let batches = (0..<Int.random(in: 1...40, using: &random)).map { _ in
                StateBatch(
                    uid: UInt32.random(in: 1...3, using: &random),
                    changes: (0..<Int.random(in: 1...4, using: &random)).map { _ -> CookieChange in
                        let name = "k\(Int.random(in: 0..<6, using: &random))"
                        guard Bool.random(using: &random) else { return .delete(F.cookie(name).key) }
                        return .upsert(F.cookie(name, value: "r\(round)-\(Int.random(in: 0..<1_000, using: &random))"))
                    })
            }
            #expect(store.jars.commit(batches).allSatisfy { $0.failure == nil })
            for batch in batches { #expect(reference.commitOne(batch).failure == nil) }
            for uid: UInt32 in 1...3 {
                let stored = try store.jars.loadJar(uid: uid, now: F.now)
                #expect(Set(stored) == Set(try reference.loadJar(uid: uid, now: F.now)), "round \(round), uid \(uid)")
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func identityIsOctetsNotUnicodeEquivalence(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        let composed = F.cookie("caf\u{E9}", value: "composed")
        let decomposed = F.cookie("cafe\u{301}", value: "decomposed")
        #expect(store.jars.commitOne(F.upserts(1, [composed, decomposed])).failure == nil)
        let loaded = try store.jars.loadJar(uid: 1, now: F.now)
        #expect(loaded.count == 2)
        #expect(Set(loaded.map { Array($0.name.utf8) }) == [Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8)])
    }

    /// A full store fails the batch that does not fit, keeps everything acknowledged, and works
    /// again once there is room.
    @Test(arguments: StoreKind.allCases)
    func fullStoreFailsTheBatchThatDoesNotFitAndLosesNothing(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        _ = try store.jars.loadJars(bootID: F.bootA, now: F.now)
        #expect(store.jars.commitOne(F.upserts(9, [F.cookie("before")])).failure == nil)
        try store.makeFull()
        var acknowledged: Set<String> = ["before"]
        var failure: StoreError?
        for round in 0..<40 where failure == nil {
            let names = (0..<10).map { "big\(round)-\($0)" }
            let batch = F.upserts(9, names.map { F.cookie($0, value: String(repeating: "x", count: 3_000)) })
            switch store.jars.commitOne(batch) {
            case .success: acknowledged.formUnion(names)
            case .failure(let error): failure = error
            }
        }
        #expect(failure?.code == .diskFull)
        #expect(Set(try store.jars.loadJar(uid: 9, now: F.now).map(\.name)) == acknowledged)
        // Removing cookies fits even now.
        #expect(store.jars.commitOne(StateBatch(uid: 9, changes: [.delete(F.cookie("before").key)])).failure == nil)
        acknowledged.remove("before")

        try store.makeRoom()
        #expect(store.jars.commitOne(F.upserts(9, [F.cookie("after")])).failure == nil)
        acknowledged.insert("after")
        #expect(Set(try store.jars.loadJars(bootID: F.bootA, now: F.now)[9]?.map(\.name) ?? []) == acknowledged)
    }

    @Test(arguments: StoreKind.allCases)
    func callsAfterCloseFailWithClosed(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        store.jars.close()
        store.dns.close()
        store.jars.close()  // a second close does nothing
        #expect(store.jars.commitOne(F.upserts(1, [F.cookie("x")])).failure?.code == .closed)
        let errors: [StoreError?] = [
            #expect(throws: StoreError.self) { try store.jars.loadJar(uid: 1, now: F.now) },
            #expect(throws: StoreError.self) { try store.jars.loadJars(bootID: F.bootA, now: F.now) },
            #expect(throws: StoreError.self) { try store.dns.loadDNSSnapshot() },
            #expect(throws: StoreError.self) { try store.dns.saveDNSSnapshot(DNSSnapshot()) },
        ]
        for error in errors { #expect(error?.code == .closed) }
    }

    // MARK: - DNS snapshot

    static let entries = [
        PersistedDNSEntry(
            host: "a.example", family: .ipv4, addresses: ["192.0.2.1", "192.0.2.2"], upstream: "https://doh.example/",
            expiresAtUnix: 1_800_000_010, negative: false),
        PersistedDNSEntry(
            host: "a.example", family: .ipv6, addresses: ["2001:db8::1"], upstream: nil, expiresAtUnix: 1_800_000_020,
            negative: false),
        PersistedDNSEntry(
            host: "gone.example", family: .ipv4, addresses: [], upstream: "https://doh.example/",
            expiresAtUnix: 1_800_000_030, negative: true),
    ]
    // Per uid least recently used first, deliberately not in IP or expiry order; one address with
    // two hosts for uid 1000, and the same address remembered for another uid.
    static let owners = [
        PersistedAddressOwner(
            uid: 0, ip: "192.0.2.2", host: "a.example", answerExpiresAtUnix: 1_800_000_000,
            expiresAtUnix: 1_800_003_600),
        PersistedAddressOwner(
            uid: 1000, ip: "2001:db8::1", host: "a.example", answerExpiresAtUnix: 1_800_000_050,
            expiresAtUnix: 1_800_000_100),
        PersistedAddressOwner(
            uid: 1000, ip: "192.0.2.1", host: "b.example", answerExpiresAtUnix: 1_799_999_000,
            expiresAtUnix: 1_800_009_000),
        PersistedAddressOwner(
            uid: 1000, ip: "192.0.2.1", host: "a.example", answerExpiresAtUnix: 1_800_000_060,
            expiresAtUnix: 1_800_009_060),
        PersistedAddressOwner(
            uid: 4_294_967_294, ip: "192.0.2.1", host: "c.example", answerExpiresAtUnix: 1_800_000_060,
            expiresAtUnix: 1_800_009_060),
    ]

    @Test(arguments: StoreKind.allCases)
    func dnsSnapshotIsEmptyUntilSaved(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        #expect(try store.dns.loadDNSSnapshot() == DNSSnapshot())
    }

    @Test(arguments: StoreKind.allCases)
    func dnsSnapshotComesBackEarliestExpiryFirstWithOwnersInSavedOrder(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        try store.dns.saveDNSSnapshot(DNSSnapshot(entries: Self.entries.reversed(), owners: Self.owners))
        #expect(try store.dns.loadDNSSnapshot() == DNSSnapshot(entries: Self.entries, owners: Self.owners))
    }

    @Test(arguments: StoreKind.allCases)
    func dnsSaveReplacesThePreviousSnapshot(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        try store.dns.saveDNSSnapshot(DNSSnapshot(entries: Self.entries, owners: Self.owners))
        try store.dns.saveDNSSnapshot(DNSSnapshot(entries: [Self.entries[2]], owners: [Self.owners[0]]))
        #expect(try store.dns.loadDNSSnapshot() == DNSSnapshot(entries: [Self.entries[2]], owners: [Self.owners[0]]))
        try store.dns.saveDNSSnapshot(DNSSnapshot())
        #expect(try store.dns.loadDNSSnapshot() == DNSSnapshot())
    }

    @Test(arguments: StoreKind.allCases)
    func dnsSnapshotsAndCookiesAreSeparate(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        #expect(store.jars.commitOne(F.upserts(1, [F.cookie("x")])).failure == nil)
        try store.dns.saveDNSSnapshot(DNSSnapshot(entries: Self.entries, owners: Self.owners))
        try store.dns.saveDNSSnapshot(DNSSnapshot())
        #expect(try store.jars.loadJar(uid: 1, now: F.now).map(\.name) == ["x"])
        #expect(store.jars.commitOne(StateBatch(uid: 1, changes: [.delete(F.cookie("x").key)])).failure == nil)
        try store.dns.saveDNSSnapshot(DNSSnapshot(entries: Self.entries, owners: Self.owners))
        #expect(try store.dns.loadDNSSnapshot().entries == Self.entries)
    }
}
