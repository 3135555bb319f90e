import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// Last-writer-wins replication of shared jars: convergence, idempotence, tombstones.
struct FleetReplicaTests {
    typealias R = FleetRecordTests
    static let machineC = FleetMachineID(String(repeating: "c", count: 32))!
    static let day: Int64 = 86_400_000
    static let jar = "user:crawler"

    static func key(_ name: String) -> CookieKey { CookieKey(domain: "example.com", path: "/", name: name) }
    static func address(_ name: String) -> FleetCookieAddress { FleetCookieAddress(jar: jar, key: key(name)) }

    /// A jar reduced to what replication decides: value text per cookie.
    struct MiniJar: Equatable {
        var cookies: [FleetCookieAddress: String] = [:]

        mutating func apply(_ outcome: FleetCookieReplica.Outcome) {
            switch outcome {
            case .store(let address, let value): cookies[address] = value.value
            case .remove(let address): cookies[address] = nil
            case .ignored: break
            }
        }
    }

    @Test func concurrentChangesConvergeWhateverTheOrder() {
        var seeds = SeededGeneratorFacade(seed: 2_026)
        for round in 0..<20 {
            // Three machines change four cookies concurrently, with clocks that disagree.
            let machines = [R.machineA, R.machineB, Self.machineC]
            var replicas = machines.map { FleetCookieReplica(machine: $0) }
            var jars = Array(repeating: MiniJar(), count: 3)
            var published: [FleetCookieChange] = []
            var delivered = Array(repeating: Set<Int>(), count: 3)
            let now: Int64 = 1_700_000_000_000  // before the test cookies expire
            for step in 0..<60 {
                let writer = seeds.below(3)
                let name = "c\(seeds.below(4))"
                let skew = Int64(seeds.below(2_000)) - 1_000
                let change: CookieChange =
                    seeds.below(4) == 0
                    ? .delete(Self.key(name))
                    : .upsert(R.cookie(name, value: "r\(round)s\(step)m\(writer)"))
                let record = replicas[writer].recordLocal(change, jar: Self.jar, nowMs: now + Int64(step) * 10 + skew)
                switch change {
                case .upsert(let cookie): jars[writer].cookies[record.address] = cookie.value
                case .delete: jars[writer].cookies[record.address] = nil
                }
                published.append(record)
                delivered[writer].insert(published.count - 1)
                // Some changes reach some machines early, out of order.
                if seeds.below(2) == 0 {
                    let early = seeds.below(published.count)
                    let reader = seeds.below(3)
                    jars[reader].apply(replicas[reader].applyRemote(published[early], nowMs: now))
                    delivered[reader].insert(early)
                }
            }
            // Everyone gets what it has not seen yet, each in its own order, some twice.
            for index in 0..<3 {
                let missing = published.indices.filter { !delivered[index].contains($0) }.map { published[$0] }
                var order = missing + missing.prefix(5)
                for i in order.indices.reversed() { order.swapAt(i, seeds.below(i + 1)) }
                for change in order { jars[index].apply(replicas[index].applyRemote(change, nowMs: now)) }
            }
            #expect(jars[0] == jars[1] && jars[1] == jars[2], "round \(round)")
            #expect(replicas[0].registers == replicas[1].registers && replicas[1].registers == replicas[2].registers)
        }
    }

    @Test func aLocalChangeAlwaysBeatsWhatThisMachineAlreadySaw() {
        var replica = FleetCookieReplica(machine: R.machineA)
        // A remote change stamped by a clock an hour ahead.
        let future = FleetCookieChange(
            address: Self.address("sid"), version: FleetVersion(updatedAtMs: 5_000_000, machine: R.machineB),
            content: .set(FleetCookieValue(R.cookie(value: "remote"))))
        #expect(
            replica.applyRemote(future, nowMs: 1_400_000)
                == .store(Self.address("sid"), FleetCookieValue(R.cookie(value: "remote"))))
        let local = replica.recordLocal(.upsert(R.cookie(value: "local")), jar: Self.jar, nowMs: 1_400_000)
        #expect(local.version > future.version)
        #expect(local.version.updatedAtMs == 5_000_001 && local.version.machine == R.machineA)
        // So every other machine ends with the local value too.
        var other = FleetCookieReplica(machine: R.machineB)
        _ = other.applyRemote(local, nowMs: 1_400_000)
        #expect(other.applyRemote(future, nowMs: 1_400_000) == .ignored(.superseded))
    }

    @Test func applyingIsIdempotentAndOwnChangesComeBackAsDuplicates() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let local = replica.recordLocal(.upsert(R.cookie()), jar: Self.jar, nowMs: 1_000)
        #expect(replica.applyRemote(local, nowMs: 1_000) == .ignored(.duplicate))
        var other = FleetCookieReplica(machine: R.machineB)
        #expect(other.applyRemote(local, nowMs: 1_000) == .store(local.address, FleetCookieValue(R.cookie())))
        #expect(other.applyRemote(local, nowMs: 1_000) == .ignored(.duplicate))
    }

    @Test func tombstonesBeatOlderSetsAndLoseToNewerOnes() {
        var replica = FleetCookieReplica(machine: Self.machineC)
        let address = Self.address("sid")
        func change(_ time: Int64, _ machine: FleetMachineID, deleted: Bool) -> FleetCookieChange {
            FleetCookieChange(
                address: address, version: FleetVersion(updatedAtMs: time, machine: machine),
                content: deleted ? .deleted : .set(FleetCookieValue(R.cookie(value: "v\(time)"))))
        }
        #expect(replica.applyRemote(change(10, R.machineA, deleted: true), nowMs: 100) == .remove(address))
        #expect(
            replica.applyRemote(change(9, R.machineB, deleted: false), nowMs: 100)
                == FleetCookieReplica.Outcome.ignored(.superseded))
        // Same time: the larger machine id wins.
        #expect(
            replica.applyRemote(change(10, R.machineB, deleted: false), nowMs: 100)
                == .store(address, FleetCookieValue(R.cookie(value: "v10"))))
        #expect(
            replica.applyRemote(change(10, R.machineA, deleted: true), nowMs: 100)
                == FleetCookieReplica.Outcome.ignored(.superseded))
        #expect(
            replica.registers[address]
                == FleetCookieReplica.Register(
                    version: FleetVersion(updatedAtMs: 10, machine: R.machineB), deleted: false))
    }

    @Test func anAlreadyExpiredCookieDeletes() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let change = FleetCookieChange(
            address: Self.address("old"), version: FleetVersion(updatedAtMs: 2_000_000, machine: R.machineB),
            content: .set(FleetCookieValue(R.cookie("old", expires: 1_000))))
        #expect(replica.applyRemote(change, nowMs: 2_000_000) == .remove(Self.address("old")))
    }

    @Test func changesBeyondTheTombstoneHorizonAreNotApplied() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let now = 100 * Self.day
        let ancient = FleetCookieChange(
            address: Self.address("sid"), version: FleetVersion(updatedAtMs: now - 31 * Self.day, machine: R.machineB),
            content: .set(FleetCookieValue(R.cookie(expires: nil))))
        #expect(replica.applyRemote(ancient, nowMs: now) == .ignored(.beyondHorizon))
        // A local change that waited that long in the outbox is published as made now.
        var writer = FleetCookieReplica(machine: R.machineB)
        let waited = writer.recordLocal(.upsert(R.cookie(expires: nil)), jar: Self.jar, nowMs: now - 31 * Self.day)
        let restamped = writer.prepareForPublishing(waited, nowMs: now)
        #expect(restamped?.version == FleetVersion(updatedAtMs: now, machine: R.machineB))
        #expect(writer.registers[waited.address]?.version.updatedAtMs == now)
        #expect(replica.applyRemote(restamped!, nowMs: now) != .ignored(.beyondHorizon))
    }

    @Test func supersededOutboxEntriesNeedNotTravel() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let first = replica.recordLocal(.upsert(R.cookie(value: "1")), jar: Self.jar, nowMs: 1_000)
        let second = replica.recordLocal(.upsert(R.cookie(value: "2")), jar: Self.jar, nowMs: 1_001)
        #expect(replica.prepareForPublishing(first, nowMs: 1_002) == nil)
        #expect(replica.prepareForPublishing(second, nowMs: 1_002) == second)
        let remote = FleetCookieChange(
            address: second.address, version: FleetVersion(updatedAtMs: 9_999, machine: R.machineB), content: .deleted)
        _ = replica.applyRemote(remote, nowMs: 1_002)
        #expect(replica.prepareForPublishing(second, nowMs: 1_002) == nil)
    }

    @Test func catchingUpFromASnapshotAlsoRemovesWhatWasDeletedMeanwhile() {
        var replica = FleetCookieReplica(machine: R.machineA)
        var jar = MiniJar()
        for name in ["kept", "gone", "pending"] {
            let change = FleetCookieChange(
                address: Self.address(name), version: FleetVersion(updatedAtMs: 10, machine: R.machineB),
                content: .set(FleetCookieValue(R.cookie(name, expires: nil))))
            jar.apply(replica.applyRemote(change, nowMs: 20))
        }
        let pending = replica.recordLocal(.upsert(R.cookie("pending", value: "mine")), jar: Self.jar, nowMs: 30)
        jar.cookies[pending.address] = "mine"
        let snapshot = [
            FleetCookieChange(
                address: Self.address("kept"), version: FleetVersion(updatedAtMs: 15, machine: R.machineB),
                content: .set(FleetCookieValue(R.cookie("kept", value: "newer", expires: nil)))),
            FleetCookieChange(
                address: Self.address("new"), version: FleetVersion(updatedAtMs: 16, machine: Self.machineC),
                content: .set(FleetCookieValue(R.cookie("new", expires: nil)))),
        ]
        for outcome in replica.applySnapshot(snapshot, pending: [pending.address], nowMs: 40) { jar.apply(outcome) }
        #expect(
            jar.cookies == [
                Self.address("kept"): "newer", Self.address("new"): "abc", Self.address("pending"): "mine",
            ])
        #expect(replica.registers[Self.address("gone")] == nil)
    }

    @Test func tombstonesArePurgedAfterTheirLifetime() {
        var replica = FleetCookieReplica(machine: R.machineA, tombstoneLifetimeMs: 1_000)
        _ = replica.recordLocal(.delete(Self.key("a")), jar: Self.jar, nowMs: 100)
        _ = replica.recordLocal(.delete(Self.key("b")), jar: Self.jar, nowMs: 900)
        _ = replica.recordLocal(.upsert(R.cookie("c")), jar: Self.jar, nowMs: 100)
        #expect(replica.purgeTombstones(nowMs: 1_500) == [Self.address("a")])
        #expect(Set(replica.registers.keys) == [Self.address("b"), Self.address("c")])
    }

    @Test func republishingCarriesOriginalVersions() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let set = replica.recordLocal(.upsert(R.cookie("a")), jar: Self.jar, nowMs: 100)
        let deleted = replica.recordLocal(.delete(Self.key("b")), jar: Self.jar, nowMs: 200)
        let expired = replica.recordLocal(.upsert(R.cookie("c")), jar: Self.jar, nowMs: 300)
        let records = replica.republishable { address in
            address == set.address ? FleetCookieValue(R.cookie("a")) : nil
        }
        // The cookie that expired here is left out: its expiry travelled with it.
        #expect(Set(records.map(\.version)) == [set.version, deleted.version])
        #expect(records.first { $0.address == set.address }?.content == set.content)
        #expect(records.first { $0.address == deleted.address }?.content == .deleted)
        #expect(!records.contains { $0.address == expired.address })
    }

    @Test func anExpiredRemoteCookieLeavesATombstone() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let change = FleetCookieChange(
            address: Self.address("old"), version: FleetVersion(updatedAtMs: 5_000, machine: R.machineB),
            content: .set(FleetCookieValue(R.cookie("old", expires: 4))))
        #expect(replica.applyRemote(change, nowMs: 5_000) == .remove(Self.address("old")))
        #expect(replica.registers[Self.address("old")] == .init(version: change.version, deleted: true))
    }

    @Test func aFailedLocalCommitPutsTheRegisterBackUnlessReplaced() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let first = replica.recordLocal(.upsert(R.cookie("a", value: "1")), jar: Self.jar, nowMs: 100)
        let before = replica.registers[first.address]
        let failed = replica.recordLocal(.upsert(R.cookie("a", value: "2")), jar: Self.jar, nowMs: 200)
        replica.restore(failed.address, to: before, ifStill: failed.version)
        #expect(replica.registers[first.address]?.version == first.version)
        // A later change took the register meanwhile: it stays.
        let failedAgain = replica.recordLocal(.upsert(R.cookie("a", value: "3")), jar: Self.jar, nowMs: 300)
        let later = replica.recordLocal(.upsert(R.cookie("a", value: "4")), jar: Self.jar, nowMs: 400)
        replica.restore(failedAgain.address, to: before, ifStill: failedAgain.version)
        #expect(replica.registers[first.address]?.version == later.version)
    }

    @Test func registersOfCookiesTheJarLostAreForgotten() {
        var replica = FleetCookieReplica(machine: R.machineA)
        let kept = replica.recordLocal(.upsert(R.cookie("kept")), jar: Self.jar, nowMs: 100)
        let lost = replica.recordLocal(.upsert(R.cookie("lost")), jar: Self.jar, nowMs: 100)
        let tombstone = replica.recordLocal(.delete(Self.key("gone")), jar: Self.jar, nowMs: 100)
        #expect(replica.forgetMissing { $0 != kept.address } == [lost.address])
        #expect(Set(replica.registers.keys) == [kept.address, tombstone.address])
    }
}

struct FleetOutboxTests {
    @Test func entriesAreNumberedAndAcknowledgedInOrder() {
        let address = FleetReplicaTests.address("x")
        let change = FleetCookieChange(
            address: address, version: FleetVersion(updatedAtMs: 1, machine: FleetRecordTests.machineA),
            content: .deleted)
        let outbox = InMemoryFleetOutbox()
        outbox.append((1...3).map { FleetOutboxEntry(sequence: $0, change: change) })
        #expect(outbox.lastSequence == 3)
        #expect(outbox.pending(limit: 2).map(\.sequence) == [1, 2])
        outbox.acknowledge(through: 2)
        #expect(outbox.count == 1 && outbox.pending(limit: 10).map(\.sequence) == [3])
        // Reloaded from storage (in any order), numbering goes on from the last entry.
        let reloaded = InMemoryFleetOutbox(entries: [
            FleetOutboxEntry(sequence: 7, change: change), FleetOutboxEntry(sequence: 5, change: change),
        ])
        #expect(reloaded.pending(limit: 10).map(\.sequence) == [5, 7] && reloaded.lastSequence == 7)
    }

    @Test func thePumpKeepsOneBatchInFlightAndBacksOff() {
        var pump = FleetOutboxPump(backoff: FleetBackoff(initialMilliseconds: 100, maximumMilliseconds: 1_000))
        #expect(pump.entriesAdded() == .publish)
        #expect(pump.entriesAdded() == .none)  // one batch at a time
        #expect(pump.published(through: 5, batchWasFull: false) == .acknowledge(through: 5, andPublish: true))
        #expect(pump.published(through: 6, batchWasFull: false) == .acknowledge(through: 6, andPublish: false))
        #expect(!pump.isBusy)
        #expect(pump.entriesAdded() == .publish)
        #expect(pump.failed(random: 0) == .retry(afterMilliseconds: 50))
        #expect(pump.entriesAdded() == .none)  // the retry will take them
        #expect(pump.retryDue() == .publish)
        #expect(pump.failed(random: 0) == .retry(afterMilliseconds: 100))
        #expect(pump.retryDue() == .publish)
        #expect(pump.published(through: 9, batchWasFull: true) == .acknowledge(through: 9, andPublish: true))
        #expect(pump.nothingPending() == .none)
        #expect(!pump.isBusy)
        // Success resets the backoff.
        #expect(pump.entriesAdded() == .publish)
        #expect(pump.failed(random: 0) == .retry(afterMilliseconds: 50))
    }

    @Test func backoffGrowsToItsCeilingWithJitter() {
        var backoff = FleetBackoff(initialMilliseconds: 100, maximumMilliseconds: 30_000)
        var delays: [Int] = []
        for _ in 0..<12 { delays.append(backoff.nextDelayMilliseconds(random: 0.999)) }
        #expect(delays.first! >= 50 && delays.first! < 100)
        #expect(delays == delays.sorted())
        #expect(delays.last! <= 30_000 && delays.last! >= 15_000)
        var low = FleetBackoff()
        #expect(low.nextDelayMilliseconds(random: 0) == 50)
        #expect(low.failures == 1)
        low.reset()
        #expect(low.nextDelayMilliseconds(random: 0.5) == 75)
    }
}

struct FleetSyncTests {
    static func id(_ text: String) -> FleetStreamID { FleetStreamID(text)! }

    static func observed(
        epoch: String = "e1", first: String?, last: String?, added: Int64? = nil, length: Int64 = 10,
        missing: Set<String> = []
    ) -> FleetStreamObservation {
        FleetStreamObservation(
            epoch: epoch, firstID: first.map(id), lastGeneratedID: last.map(id), entriesAdded: added, length: length,
            missing: Set(missing.map(id)))
    }

    @Test func streamIDsParseAndOrderLikeRedis() {
        #expect(FleetStreamID("1700000000000-3") == FleetStreamID(milliseconds: 1_700_000_000_000, sequence: 3))
        #expect(Self.id("5-10") > Self.id("5-9") && Self.id("6-0") > Self.id("5-99") && Self.id("0-0") == .zero)
        for bad in ["", "5", "5-", "-5", "a-1", "1-2-3", "+1-2"] { #expect(FleetStreamID(bad) == nil, "\(bad)") }
        #expect(Self.id("12-3").description == "12-3")
    }

    @Test func plans() {
        let cursor = FleetCursor(epoch: "e1", lastID: Self.id("100-0"))
        func plan(_ observation: FleetStreamObservation, cursor: FleetCursor? = cursor, published: String? = nil)
            -> FleetSyncPlan
        {
            FleetSyncPlanner.plan(cursor: cursor, lastPublishedID: published.map(Self.id), observed: observation)
        }
        #expect(plan(Self.observed(first: "1-0", last: "200-0"), cursor: nil) == .catchUp(.firstStart))
        // Caught up or behind within the stream: tail.
        #expect(plan(Self.observed(first: "50-0", last: "200-0")) == .tail(after: Self.id("100-0")))
        #expect(plan(Self.observed(first: "100-0", last: "100-0")) == .tail(after: Self.id("100-0")))
        // Trimmed past the cursor.
        #expect(
            plan(Self.observed(first: "150-0", last: "200-0", added: 500, length: 100)) == .catchUp(.trimmedPastCursor))
        #expect(plan(Self.observed(first: "150-0", last: "200-0")) == .catchUp(.trimmedPastCursor))
        // ...unless nothing was ever removed (a cursor from a snapshot taken before the first entry).
        #expect(
            plan(Self.observed(first: "150-0", last: "200-0", added: 10, length: 10)) == .tail(after: Self.id("100-0")))
        // Empty stream.
        #expect(plan(Self.observed(first: nil, last: "100-0", length: 0)) == .tail(after: Self.id("100-0")))
        #expect(plan(Self.observed(first: nil, last: "300-0", length: 0)) == .catchUp(.trimmedPastCursor))
        // Another dataset, or Redis restarted empty.
        #expect(
            plan(Self.observed(epoch: "e2", first: nil, last: nil, length: 0)) == .republishAndCatchUp(.epochChanged))
        // Restarted from an older save: the stream is behind the cursor...
        #expect(plan(Self.observed(first: "1-0", last: "90-0")) == .republishAndCatchUp(.rolledBack))
        // ...or others added entries since, but the cursor's entry is gone without trimming.
        #expect(
            plan(Self.observed(first: "1-0", last: "900-0", missing: ["100-0"])) == .republishAndCatchUp(.rolledBack))
        // A trimmed cursor entry is not a loss.
        #expect(
            plan(Self.observed(first: "120-0", last: "900-0", added: 20, length: 10, missing: ["100-0"]))
                == .catchUp(.trimmedPastCursor))
        // This daemon's last published entry is gone: republish what it holds.
        #expect(
            plan(Self.observed(first: "1-0", last: "900-0", missing: ["150-0"]), published: "150-0")
                == .republishAndCatchUp(.rolledBack))
        #expect(plan(Self.observed(first: "1-0", last: "900-0"), published: "150-0") == .tail(after: Self.id("100-0")))
    }
}
