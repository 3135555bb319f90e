import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSProtocol
import HTTPDNSRedis
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// The sealed Redis operations against a real redis-server.
struct FleetRedisTests {
    typealias F = FleetFixtures

    @Test func answersRoundTripWithTheirRemainingLifetimeAsExpiry() throws {
        let server = try RedisServer()
        let fleet = F.fleetRedis(server)
        let now = WallClock.nowMilliseconds()
        let v4 = F.answer("api.example.com", ["203.0.113.10", "203.0.113.11"], ttlMs: 30_000)
        let v6 = F.answer("api.example.com", ["2001:db8::10"], family: .ipv6, ttlMs: 5_000)
        try fleet.publish([v4, v6], nowUnixMs: now, releasingLock: nil)
        let pttl = try fleet.connection.millisecondsToLive(
            fleet.keyspace.cacheKey(host: "api.example.com", family: .ipv4))
        #expect(pttl > 25_000 && pttl <= 30_000)
        let lookup = try fleet.lookUp(host: "api.example.com", families: [.ipv4, .ipv6], nowUnixMs: now)
        #expect(lookup.rejected.isEmpty)
        #expect(lookup.hits[.ipv4]?.record == v4 && lookup.hits[.ipv6]?.record == v6)
        let left = try #require(lookup.hits[.ipv6]?.millisecondsLeft)
        #expect(left > 0 && left <= 5_000)
        #expect(try fleet.lookUp(host: "other.example.com", families: [.ipv4], nowUnixMs: now).hits.isEmpty)
        // Another machine's later lookup counts down from the same expiry: never extended.
        let later = try fleet.lookUp(host: "api.example.com", families: [.ipv4], nowUnixMs: now + 20_000)
        #expect((later.hits[.ipv4]?.millisecondsLeft ?? 0) <= 10_000)
        // An answer with no time left is not published at all.
        let stale = FleetCacheRecord(
            host: "stale.example.com", family: .ipv4, addresses: ["192.0.2.1"], negative: false, expiresAtUnixMs: now)
        try fleet.publish([stale], nowUnixMs: now, releasingLock: nil)
        #expect(try fleet.connection.get(fleet.keyspace.cacheKey(host: "stale.example.com", family: .ipv4)) == nil)
    }

    @Test func theLockHasOneHolderAndOnlyItsHolderReleasesIt() throws {
        let server = try RedisServer()
        let a = F.fleetRedis(server)
        let b = F.fleetRedis(server)
        let mine = FleetLock(host: "api.example.com", token: "token-a")
        let theirs = FleetLock(host: "api.example.com", token: "token-b")
        #expect(try a.acquireLock(mine, lifetimeMs: 10_000))
        #expect(try b.acquireLock(theirs, lifetimeMs: 10_000) == false)
        try b.releaseLock(theirs)  // not the holder: nothing happens
        #expect(try b.acquireLock(theirs, lifetimeMs: 10_000) == false)
        try a.publish(
            [F.answer("api.example.com", ["192.0.2.7"])], nowUnixMs: WallClock.nowMilliseconds(), releasingLock: mine)
        #expect(try b.acquireLock(theirs, lifetimeMs: 50))
        // An abandoned lock expires by itself.
        #expect(eventually(5) { (try? a.acquireLock(mine, lifetimeMs: 10_000)) == true })
    }

    @Test func valuesDoNotOpenUnderAnotherKeyOrAnotherName() throws {
        let server = try RedisServer()
        let fleet = F.fleetRedis(server)
        let now = WallClock.nowMilliseconds()
        try fleet.publish([F.answer("a.example.com", ["192.0.2.1"])], nowUnixMs: now, releasingLock: nil)
        // A daemon with another fleet key rejects the entry.
        let stranger = F.fleetRedis(server, key: F.key(F.otherKeyHex))
        let strange = try stranger.lookUp(host: "a.example.com", families: [.ipv4], nowUnixMs: now)
        #expect(strange.hits.isEmpty)
        #expect(strange.rejected.count == 0)  // it looks under other key names: it finds nothing at all
        // Someone with Redis access copies the sealed value to another host's key: rejected.
        let from = fleet.keyspace.cacheKey(host: "a.example.com", family: .ipv4)
        let to = fleet.keyspace.cacheKey(host: "b.example.com", family: .ipv4)
        let sealed = try #require(try fleet.connection.get(from))
        try fleet.connection.set(to, sealed, expireMilliseconds: 60_000)
        let moved = try fleet.lookUp(host: "b.example.com", families: [.ipv4], nowUnixMs: now)
        #expect(moved.hits.isEmpty && moved.rejected == ["an answer failed to open"])
        // ...or to the other family of the same host.
        try fleet.connection.set(fleet.keyspace.cacheKey(host: "a.example.com", family: .ipv6), sealed)
        #expect(try fleet.lookUp(host: "a.example.com", families: [.ipv6], nowUnixMs: now).rejected.count == 1)
        // A tampered value is rejected.
        var tampered = sealed
        tampered[tampered.count / 2] ^= 1
        try fleet.connection.set(from, tampered)
        #expect(try fleet.lookUp(host: "a.example.com", families: [.ipv4], nowUnixMs: now).rejected.count == 1)
    }

    @Test func changesGoThroughTheStreamAndTheSnapshotKeepsTheNewest() throws {
        let server = try RedisServer()
        let fleet = F.fleetRedis(server)
        let address = FleetCookieAddress(
            jar: "user:crawler", key: CookieKey(domain: "login.example.com", path: "/", name: "sid"))
        func change(_ time: Int64, _ value: String?) -> FleetCookieChange {
            FleetCookieChange(
                address: address, version: FleetVersion(updatedAtMs: time, machine: F.machine("a")),
                content: value.map { .set(FleetCookieValue(F.cookie("sid", value: $0))) } ?? .deleted)
        }
        let first = try #require(try fleet.publishChanges([change(200, "new")]))
        // An older change published later goes through the stream but does not replace the
        // snapshot's newer one.
        let second = try #require(try fleet.publishChanges([change(100, "old")]))
        #expect(second > first)
        let read = try fleet.readChanges(after: .zero, count: 10, blockMilliseconds: nil)
        #expect(read.map(\.id) == [first, second])
        #expect(try read.map { try $0.change.get() } == [change(200, "new"), change(100, "old")])
        let snapshot = try fleet.readSnapshot()
        #expect(snapshot.changes == [change(200, "new")])
        #expect(snapshot.resumeAfter == second && snapshot.rejected.isEmpty)
        let third = try #require(try fleet.publishChanges([change(300, nil)]))
        #expect(try fleet.readSnapshot().changes == [change(300, nil)])
        #expect(try fleet.readChanges(after: second, count: 10, blockMilliseconds: nil).map(\.id) == [third])
        // Tombstones past the horizon leave the snapshot; newer entries stay.
        #expect(try fleet.sweepSnapshot(horizonMs: 300) == 0)
        #expect(try fleet.sweepSnapshot(horizonMs: 301) == 1)
        #expect(try fleet.readSnapshot().changes.isEmpty)
    }

    @Test func batchesLargerThanOneScriptCallArePublishedInOrder() throws {
        let server = try RedisServer()
        let fleet = F.fleetRedis(server)
        let changes = (0..<250).map { index in
            FleetCookieChange(
                address: FleetCookieAddress(
                    jar: "user:c", key: CookieKey(domain: "example.com", path: "/", name: "n\(index)")),
                version: FleetVersion(updatedAtMs: Int64(index), machine: F.machine("b")), content: .deleted)
        }
        let last = try fleet.publishChanges(changes, batchSize: 100)
        let read = try fleet.readChanges(after: .zero, count: 1_000, blockMilliseconds: nil)
        #expect(read.count == 250 && read.last?.id == last)
        #expect(try read.map { try $0.change.get() } == changes)
        #expect(try fleet.readSnapshot().changes.count == 250)
    }

    @Test func aStrangerReadsNothingFromTheStreamOrTheSnapshot() throws {
        let server = try RedisServer()
        let fleet = F.fleetRedis(server)
        let change = FleetCookieChange(
            address: FleetCookieAddress(jar: "user:c", key: CookieKey(domain: "example.com", path: "/", name: "sid")),
            version: FleetVersion(updatedAtMs: 1, machine: F.machine("a")),
            content: .set(FleetCookieValue(F.cookie("sid", value: "secret"))))
        _ = try fleet.publishChanges([change])
        let stranger = F.fleetRedis(server, key: F.key(F.otherKeyHex))
        let read = try stranger.readChanges(after: .zero, count: 10, blockMilliseconds: nil)
        #expect(read.count == 1)
        #expect(throws: FleetRecordError.self) { try read[0].change.get() }
        let snapshot = try stranger.readSnapshot()
        #expect(snapshot.changes.isEmpty && snapshot.rejected.count == 1)
    }

    @Test func observationCreatesTheEpochOnceAndFindsMissingEntries() throws {
        let server = try RedisServer()
        let fleet = F.fleetRedis(server)
        let empty = try fleet.observe(remembering: [])
        #expect(empty.epoch.count == 32 && empty.firstID == nil && empty.lastGeneratedID == nil && empty.length == 0)
        #expect(try fleet.observe(remembering: []).epoch == empty.epoch)
        let change = FleetCookieChange(
            address: FleetCookieAddress(jar: "user:c", key: CookieKey(domain: "example.com", path: "/", name: "x")),
            version: FleetVersion(updatedAtMs: 1, machine: F.machine("a")), content: .deleted)
        let id = try #require(try fleet.publishChanges([change]))
        let gone = FleetStreamID(milliseconds: id.milliseconds, sequence: id.sequence + 5)
        let seen = try fleet.observe(remembering: [id, gone])
        #expect(seen.firstID == id && seen.lastGeneratedID == id && seen.length == 1 && seen.entriesAdded == 1)
        #expect(seen.missing == [gone])
        // Restarted empty: another epoch.
        try server.restart()
        let fresh = F.fleetRedis(server)
        #expect(try fresh.observe(remembering: []).epoch != empty.epoch)
    }

    @Test func nothingInRedisRevealsHostsAddressesOrCookies() throws {
        let server = try RedisServer()
        let fleet = F.fleetRedis(server)
        let now = WallClock.nowMilliseconds()
        try fleet.publish(
            [
                F.answer("api.example.com", ["203.0.113.10"]),
                F.answer("api.example.com", ["2001:db8::10"], family: .ipv6),
            ],
            nowUnixMs: now, releasingLock: nil)
        #expect(try fleet.acquireLock(FleetLock(host: "api.example.com", token: "t"), lifetimeMs: 60_000))
        _ = try fleet.publishChanges([
            FleetCookieChange(
                address: FleetCookieAddress(
                    jar: "user:crawler",
                    key: CookieKey(domain: "login.example.com", path: "/account", name: "SESSIONID")),
                version: FleetVersion(updatedAtMs: now, machine: F.machine("a")),
                content: .set(FleetCookieValue(F.cookie("SESSIONID", value: "s3cr3t-session-value")))),
            FleetCookieChange(
                address: FleetCookieAddress(
                    jar: "user:crawler", key: CookieKey(domain: "login.example.com", path: "/", name: "gone")),
                version: FleetVersion(updatedAtMs: now, machine: F.machine("a")), content: .deleted),
        ])
        _ = try fleet.observe(remembering: [])
        let everything = try RedisDump.everything(fleet.connection)
        #expect(everything.count > 8)
        for secret in [
            "example", "api.", "203.0.113", "2001:db8", "SESSIONID", "s3cr3t", "login", "/account", "crawler", "gone",
        ] {
            #expect(!RedisDump.contains(everything, secret), "\(secret) is readable in Redis")
        }
        // Every key carries the fleet's hash tag.
        let (_, keys) = try fleet.connection.scan(cursor: "0", count: 1_000)
        #expect(keys.allSatisfy { String(decoding: $0, as: UTF8.self).hasPrefix("httpdnsd:{gateways}:") })
    }

    @Test func aFullRedisRefusesPublishingButAnswersReads() throws {
        // Room for an empty Redis and the fleet's scripts (about 1 MB), then the ballast fills it.
        let server = try RedisServer(arguments: ["--maxmemory", "4mb", "--maxmemory-policy", "noeviction"])
        let fleet = F.fleetRedis(server)
        let now = WallClock.nowMilliseconds()
        try fleet.publish([F.answer("a.example.com", ["192.0.2.1"])], nowUnixMs: now, releasingLock: nil)
        let epoch = try fleet.observe(remembering: []).epoch
        // Checked before each command: a write below the limit takes Redis above it (unless an
        // empty Redis is above it already).
        _ = try? fleet.connection.set("ballast", [UInt8](repeating: 1, count: 5_000_000))
        let change = FleetCookieChange(
            address: FleetCookieAddress(jar: "user:c", key: CookieKey(domain: "example.com", path: "/", name: "x")),
            version: FleetVersion(updatedAtMs: 1, machine: F.machine("a")), content: .deleted)
        let error = try #require(throws: RedisError.self) { try fleet.publishChanges([change]) }
        #expect(error.code == .outOfMemory)
        let cacheError = try #require(throws: RedisError.self) {
            try fleet.publish([F.answer("b.example.com", ["192.0.2.2"])], nowUnixMs: now, releasingLock: nil)
        }
        #expect(cacheError.code == .outOfMemory)
        #expect(try fleet.lookUp(host: "a.example.com", families: [.ipv4], nowUnixMs: now).hits.count == 1)
        // Replication keeps reading: observing writes nothing once the epoch exists.
        #expect(try fleet.observe(remembering: []).epoch == epoch)
        #expect(try fleet.readChanges(after: .zero, count: 10, blockMilliseconds: nil).isEmpty)
    }

    /// Values someone wrote into Redis past the documented size (a cache answer, a stream
    /// entry, a snapshot value of 4 MiB each) are skipped without being read: each is rejected,
    /// what follows is read, and none of their bytes crossed the socket.
    @Test func oversizedValuesAreSkippedUnreadAndRejected() throws {
        let server = try RedisServer()
        let proxy = try SocketProxy(to: server.socketPath, in: server.directory)
        var options = F.redisOptions(server)
        options.endpoint = .unix(path: proxy.socketPath)
        options.replyLimits = RESPReader.Limits(maxBulkBytes: FleetRedis.maxValueBytes)
        let fleet = FleetRedis(connection: RedisConnection(options: options), key: F.key(), fleetName: "gateways")
        let writer = F.fleetRedis(server)
        let huge = [UInt8](repeating: 0x41, count: 4 << 20)
        let now = WallClock.nowMilliseconds()

        try fleet.publish([F.answer("a.example.com", ["192.0.2.1"])], nowUnixMs: now, releasingLock: nil)
        try writer.connection.set(fleet.keyspace.cacheKey(host: "a.example.com", family: .ipv4), huge)
        let lookup = try fleet.lookUp(host: "a.example.com", families: [.ipv4], nowUnixMs: now)
        #expect(lookup.hits.isEmpty && lookup.rejected == ["an answer over 65536 bytes"])

        let before = try writer.connection.streamAdd(
            fleet.keyspace.changesKey, maxLength: nil, fields: [RedisFieldValue(field: Array("c".utf8), value: [1])])
        let big = try writer.connection.streamAdd(
            fleet.keyspace.changesKey, maxLength: nil, fields: [RedisFieldValue(field: Array("c".utf8), value: huge)])
        let after = try writer.connection.streamAdd(
            fleet.keyspace.changesKey, maxLength: nil, fields: [RedisFieldValue(field: Array("c".utf8), value: [2])])
        let first = try fleet.readChanges(after: .zero, count: 10, blockMilliseconds: nil)
        #expect(first.map(\.id.description) == [before, big])
        #expect(first.last.map { (try? $0.change.get()) == nil } == true, "the big one is rejected")
        let rest = try fleet.readChanges(after: try #require(first.last).id, count: 10, blockMilliseconds: nil)
        #expect(rest.map(\.id.description) == [after])

        _ = try writer.connection.hashSet(
            fleet.keyspace.snapshotKey, [RedisFieldValue(field: Array("x".utf8), value: huge)])
        let snapshot = try fleet.readSnapshot()
        #expect(snapshot.oversized == 1)
        #expect(proxy.bytesToClients < 1 << 20, "\(proxy.bytesToClients) bytes read past three 4 MiB values")
    }

    @Test func authenticatesWithTheFleetPassword() throws {
        let server = try RedisServer(password: "fleet-password")
        let fleet = F.fleetRedis(server)
        try fleet.publish(
            [F.answer("a.example.com", ["192.0.2.1"])], nowUnixMs: WallClock.nowMilliseconds(), releasingLock: nil)
        let wrong = FleetRedis(
            connection: RedisConnection(
                options: RedisOptions(
                    endpoint: .unix(path: server.socketPath), password: RedisPassword(Array("nope".utf8)))),
            key: F.key(), fleetName: "gateways")
        let error = try #require(throws: RedisError.self) {
            try wrong.lookUp(host: "a.example.com", families: [.ipv4], nowUnixMs: 0)
        }
        #expect(error.code == .authenticationFailed && !error.message.contains("nope"))
    }
}
