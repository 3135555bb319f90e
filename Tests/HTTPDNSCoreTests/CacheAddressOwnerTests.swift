import HTTPDNSCore
import Testing

struct CacheAddressOwnerTests {
    @Test func mostRecentHostWins() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory()
        memory.record(host: "a.example", addresses: ["192.0.2.1", "2001:db8::1"], ttl: 60, now: clock.now)
        clock.advance(seconds: 5)
        memory.record(host: "b.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        #expect(memory.owner(of: "192.0.2.1", now: clock.now) == "b.example")
        #expect(memory.owner(of: "2001:db8::1", now: clock.now) == "a.example")
        #expect(memory.owner(of: "198.51.100.1", now: clock.now) == nil)
        #expect(memory.count == 2)
    }

    @Test func keptForTTLPlusRetention() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory(retention: 3_600)
        memory.record(host: "a.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        clock.advance(seconds: 60 + 3_600 - 1)
        #expect(memory.owner(of: "192.0.2.1", now: clock.now) == "a.example")
        clock.advance(seconds: 1)
        #expect(memory.owner(of: "192.0.2.1", now: clock.now) == nil)
        #expect(memory.count == 0)
    }

    @Test func reRecordingExtendsTheLifetime() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory(retention: 100)
        memory.record(host: "a.example", addresses: ["192.0.2.1"], ttl: 0, now: clock.now)
        clock.advance(seconds: 90)
        memory.record(host: "a.example", addresses: ["192.0.2.1"], ttl: 0, now: clock.now)
        clock.advance(seconds: 90)
        #expect(memory.owner(of: "192.0.2.1", now: clock.now) == "a.example")
    }

    @Test func boundedWithLeastRecentlyUsedEviction() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacity: 3)
        memory.record(host: "a.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        memory.record(host: "b.example", addresses: ["192.0.2.2"], ttl: 60, now: clock.now)
        memory.record(host: "c.example", addresses: ["192.0.2.3"], ttl: 60, now: clock.now)
        // Using 192.0.2.1 makes 192.0.2.2 the least recently used.
        #expect(memory.owner(of: "192.0.2.1", now: clock.now) == "a.example")
        memory.record(host: "d.example", addresses: ["192.0.2.4"], ttl: 60, now: clock.now)
        #expect(memory.count == 3)
        #expect(memory.owner(of: "192.0.2.2", now: clock.now) == nil)
        #expect(memory.owner(of: "192.0.2.1", now: clock.now) == "a.example")
        #expect(memory.owner(of: "192.0.2.3", now: clock.now) == "c.example")
        #expect(memory.owner(of: "192.0.2.4", now: clock.now) == "d.example")
    }

    @Test func staysBoundedUnderChurn() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacity: 100)
        for index in 0..<10_000 {
            memory.record(
                host: "h\(index).example", addresses: ["10.0.\(index / 256 % 256).\(index % 256)"], ttl: 60,
                now: clock.now)
        }
        #expect(memory.count == 100)
        #expect(memory.owner(of: "10.0.39.15", now: clock.now) == "h9999.example")
        #expect(memory.owner(of: "10.0.38.171", now: clock.now) == nil)  // index 9899, the 101st most recent
        #expect(memory.owner(of: "10.0.38.172", now: clock.now) == "h9900.example")  // the 100th
    }

    @Test func pruneForgetsExpired() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory(retention: 10)
        memory.record(host: "a.example", addresses: ["192.0.2.1", "192.0.2.2"], ttl: 5, now: clock.now)
        memory.record(host: "b.example", addresses: ["192.0.2.3"], ttl: 100, now: clock.now)
        clock.advance(seconds: 15)
        #expect(memory.prune(now: clock.now) == 2)
        #expect(memory.count == 1)
        #expect(memory.owner(of: "192.0.2.3", now: clock.now) == "b.example")
    }

    @Test func snapshotAndRestoreAcrossARestartKeepRecencyOrder() {
        var clock = CacheManualClock()
        let before = AddressOwnerMemory(capacity: 10, retention: 1_000)
        before.record(host: "a.example", addresses: ["192.0.2.1"], ttl: 0, now: clock.now)
        clock.advance(seconds: 10)
        before.record(host: "b.example", addresses: ["192.0.2.2"], ttl: 0, now: clock.now)
        before.record(host: "c.example", addresses: ["192.0.2.3"], ttl: 0, now: clock.now)
        let snapshot = before.snapshot(now: clock.now, wallNow: clock.wallNow)
        #expect(snapshot.map(\.ip) == ["192.0.2.1", "192.0.2.2", "192.0.2.3"])
        #expect(snapshot[0].expiresAtUnix == clock.wallNow + 990)

        let restarted = CacheManualClock(now: MonotonicInstant(seconds: 1), wallNow: clock.wallNow + 995)
        let after = AddressOwnerMemory(capacity: 2, retention: 1_000)
        // a.example expired during the downtime; b and c fit.
        #expect(after.restore(snapshot, now: restarted.now, wallNow: restarted.wallNow) == 2)
        #expect(after.owner(of: "192.0.2.1", now: restarted.now) == nil)
        #expect(after.owner(of: "192.0.2.2", now: restarted.now) == "b.example")
        #expect(after.owner(of: "192.0.2.3", now: restarted.now) == "c.example")
        #expect(after.owner(of: "192.0.2.2", now: restarted.now.advanced(bySeconds: 5)) == nil)
    }

    @Test func restoreDoesNotOverrideNewerKnowledge() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory()
        memory.record(host: "new.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        let persisted = [
            PersistedAddressOwner(ip: "192.0.2.1", host: "old.example", expiresAtUnix: clock.wallNow + 100)
        ]
        #expect(memory.restore(persisted, now: clock.now, wallNow: clock.wallNow) == 0)
        #expect(memory.owner(of: "192.0.2.1", now: clock.now) == "new.example")
    }
}
