import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSStore

/// The fleet records a cookie batch carries: stored and rolled back with it, read back at
/// startup, in the in-memory store and the daemon's SQLite store alike.
struct FleetStoreTests {
    typealias F = StoreFixtures
    static let machine = FleetMachineID(String(repeating: "7", count: 32))!
    static let jar = "uid:9"

    static func address(_ name: String) -> FleetCookieAddress {
        FleetCookieAddress(jar: jar, key: F.cookie(name).key)
    }

    static func register(_ ms: Int64, deleted: Bool = false) -> FleetCookieReplica.Register {
        FleetCookieReplica.Register(version: FleetVersion(updatedAtMs: ms, machine: machine), deleted: deleted)
    }

    static func entry(_ sequence: Int64, _ name: String, value: String? = "v") -> FleetOutboxEntry {
        let content: FleetCookieChange.Content =
            value.map { .set(FleetCookieValue(F.cookie(name, value: $0))) } ?? .deleted
        return FleetOutboxEntry(
            sequence: sequence,
            change: FleetCookieChange(address: address(name), version: register(sequence).version, content: content))
    }

    /// `isEmpty` looks at every member: one set alone makes a write non-empty, and a member added
    /// to the struct fails the count until `isEmpty` reads it too.
    @Test func isEmptyReadsEveryMember() {
        #expect(FleetStoreWrite().isEmpty)
        #expect(Mirror(reflecting: FleetStoreWrite()).children.count == 8)
        let id = FleetStreamID(milliseconds: 1_800_000_000_100, sequence: 0)
        let nonEmpty = [
            FleetStoreWrite(registers: [Self.address("a"): Self.register(1)]),
            FleetStoreWrite(forgottenRegisters: [Self.address("a")]),
            FleetStoreWrite(outbox: [Self.entry(1, "a")]),
            FleetStoreWrite(acknowledgedThrough: 0),
            FleetStoreWrite(cursor: FleetCursor(epoch: "0f1e2d3c", lastID: id)),
            FleetStoreWrite(lastPublishedID: id),
            FleetStoreWrite(seeded: ["a"]),
            FleetStoreWrite(unseeded: ["a"]),
        ]
        for write in nonEmpty { #expect(!write.isEmpty, "\(write)") }
    }

    @Test(arguments: StoreKind.allCases)
    func recordsCommitWithTheirBatchAndLoadBack(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        _ = try store.jars.loadJars(bootID: F.bootA, now: F.now)
        #expect(try store.fleet.loadFleetState() == FleetStoredState())
        let write = FleetStoreWrite(
            registers: [Self.address("a"): Self.register(1), Self.address("gone"): Self.register(2, deleted: true)],
            outbox: [Self.entry(1, "a"), Self.entry(2, "gone", value: nil)], seeded: [Self.jar])
        let batch = StateBatch(uid: 9, changes: [.upsert(F.cookie("a"))], fleet: write)
        #expect(store.jars.commitOne(batch).failure == nil)
        var expected = FleetStoredState(
            registers: write.registers, outbox: write.outbox, seededJars: [Self.jar])
        #expect(try store.fleet.loadFleetState() == expected)

        // A records-only batch: the fleet took the first entry; a stream position; a tombstone purged.
        let cursor = FleetCursor(epoch: "0f1e2d3c", lastID: FleetStreamID(milliseconds: 1_800_000_000_123, sequence: 4))
        let published = FleetStreamID(milliseconds: 1_800_000_000_100, sequence: 0)
        #expect(
            store.jars.commitOne(
                StateBatch(
                    fleetRecords: FleetStoreWrite(
                        forgottenRegisters: [Self.address("gone")], acknowledgedThrough: 1, cursor: cursor,
                        lastPublishedID: published, unseeded: [Self.jar]))
            ).failure == nil)
        expected.registers[Self.address("gone")] = nil
        expected.outbox = [Self.entry(2, "gone", value: nil)]
        expected.cursor = cursor
        expected.lastPublishedID = published
        expected.seededJars = []
        #expect(try store.fleet.loadFleetState() == expected)
        #expect(try store.jars.loadJar(uid: 9, now: F.now).map(\.name) == ["a"])
    }

    @Test(arguments: StoreKind.allCases)
    func batchesOfOneGroupApplyTheirRecordsInOrder(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        let results = store.jars.commit([
            StateBatch(uid: 9, changes: [], fleet: FleetStoreWrite(registers: [Self.address("a"): Self.register(1)])),
            StateBatch(uid: 9, changes: [], fleet: FleetStoreWrite(registers: [Self.address("a"): Self.register(5)])),
        ])
        #expect(results.allSatisfy { $0.failure == nil })
        #expect(try store.fleet.loadFleetState().registers == [Self.address("a"): Self.register(5)])
    }

    @Test(arguments: StoreKind.allCases)
    func aFailedBatchStoresNoneOfItsRecords(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        _ = try store.jars.loadJars(bootID: F.bootA, now: F.now)
        try store.makeFull()
        var stored: [FleetOutboxEntry] = []
        var failed = false
        for round in Int64(0)..<40 where !failed {
            let names = (0..<10).map { "big\(round)-\($0)" }
            let batch = StateBatch(
                uid: 9, changes: names.map { .upsert(F.cookie($0, value: String(repeating: "x", count: 3_000))) },
                fleet: FleetStoreWrite(outbox: [Self.entry(round + 1, names[0])]))
            switch store.jars.commitOne(batch) {
            case .success: stored += batch.fleet.outbox
            case .failure: failed = true
            }
        }
        #expect(failed)
        #expect(try store.fleet.loadFleetState().outbox == stored)
    }

    @Test(arguments: StoreKind.allCases)
    func theMachineIDIsMadeOnce(_ kind: StoreKind) throws {
        let store = try StoreUnderTest(kind)
        var made = 0
        let make = {
            made += 1
            return FleetMachineID(String(repeating: "\(made)", count: 32))!
        }
        let first = try store.fleet.fleetMachineID(orCreate: make)
        #expect(try store.fleet.fleetMachineID(orCreate: make) == first)
        #expect(made == 1)
    }

    @Test func theSQLiteStoreKeepsEverythingAcrossRestarts() throws {
        let directory = TemporaryDirectory()
        let cursor = FleetCursor(epoch: "epoch with spaces", lastID: FleetStreamID(milliseconds: 9, sequence: 1))
        let machine: FleetMachineID
        do {
            let store = try F.open(directory)
            machine = try store.fleetMachineID { FleetMachineID(String(repeating: "e", count: 32))! }
            #expect(
                store.commitOne(
                    StateBatch(
                        uid: 9, changes: [.upsert(F.cookie("a"))],
                        fleet: FleetStoreWrite(
                            registers: [Self.address("a"): Self.register(3)], outbox: [Self.entry(3, "a")],
                            cursor: cursor, seeded: [Self.jar]))
                ).failure == nil)
            store.close()
        }
        let reopened = try F.open(directory)
        #expect(try reopened.fleetMachineID { FleetMachineID(String(repeating: "f", count: 32))! } == machine)
        let state = try reopened.loadFleetState()
        #expect(state.registers == [Self.address("a"): Self.register(3)])
        #expect(state.outbox == [Self.entry(3, "a")])
        #expect(state.cursor == cursor)
        #expect(state.seededJars == [Self.jar])
    }
}
