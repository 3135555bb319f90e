import HTTPDNSCore
import HTTPDNSTestSupport
import Testing

/// The per-uid IP -> host memory behind cookie normalization and `reverse`.
struct CacheAddressOwnerTests {
    static let root: UInt32 = 0
    static let other: UInt32 = 65_534

    /// `uid`'s host names for `text`, most recent first.
    static func hosts(_ memory: AddressOwnerMemory, _ uid: UInt32, _ text: String, _ now: MonotonicInstant) -> [String]
    {
        guard let address = IPAddress(text) else { return ["<not an address>"] }
        return memory.attributions(uid: uid, of: address, now: now).map(\.host)
    }

    /// The caps count accounts: ten subordinate uids of one user hold no more than one uid
    /// may (here 4), evicting their own, so another user's memory is never pushed out (the
    /// review saw a victim keep 33 of its 150 addresses against 1000 uids).
    @Test func subordinateUidsShareTheirOwnersCaps() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacityPerUser: 4, capacity: 8)
        memory.accountOf = { $0 >= 100_000 ? 1000 : $0 }
        memory.record(
            uid: 2000, host: "victim.example", addresses: (1...4).map { "192.0.2.\($0)" }, ttl: 60, now: clock.now)
        for index in 0..<10 {
            memory.record(
                uid: 100_000 + UInt32(index), host: "s\(index).example", addresses: ["198.51.100.\(index)"], ttl: 60,
                now: clock.now)
        }
        #expect(memory.count == 8)
        #expect((1...4).allSatisfy { Self.hosts(memory, 2000, "192.0.2.\($0)", clock.now) == ["victim.example"] })
        #expect(Self.hosts(memory, 100_009, "198.51.100.9", clock.now) == ["s9.example"], "the newest is kept")
        #expect(Self.hosts(memory, 100_000, "198.51.100.0", clock.now) == [], "the account's oldest went")
        // Forgetting them all (a flush) frees the account's share.
        memory.removeAll()
        memory.record(uid: 100_001, host: "again.example", addresses: ["198.51.100.50"], ttl: 60, now: clock.now)
        #expect(memory.count == 1)
    }

    /// At the total cap a new address costs the account that remembers the most, whichever
    /// that is after bulk removals (a flushed name, a uid's forget-all) changed the counts; a
    /// thousand uids of one address each do not make the largest harder to find.
    @Test func theTotalCapTakesFromTheLargestAccountAsTheCountsChange() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacityPerUser: 2_000, capacity: 1_100)
        func record(_ uid: UInt32, _ host: String, _ count: Int, from first: Int = 0) {
            let addresses = (first..<(first + count)).map { "10.\(uid % 250).\($0 / 250).\($0 % 250)" }
            memory.record(uid: uid, host: host, addresses: addresses, ttl: 60, now: clock.now)
        }
        for uid in UInt32(10_000)..<11_000 { record(uid, "one.example", 1) }
        record(2, "big.example", 60)
        record(3, "big.example", 30)
        record(3, "mid.example", 10, from: 30)
        #expect(memory.count == 1_100)
        record(4, "new.example", 1)
        #expect(memory.count(uid: 2) == 59 && memory.count(uid: 4) == 1, "the largest account (uid 2) paid")

        // uid 2 forgets everything: uid 3 (40) is the largest now and pays for the next ones.
        #expect(memory.forgetAll(uid: 2) == 59)
        record(5, "refill.example", 30)
        for uid in UInt32(20_000)..<20_029 { record(uid, "one.example", 1) }
        #expect(memory.count == 1_100)
        record(6, "new.example", 2)
        #expect(memory.count(uid: 3) == 38 && memory.count(uid: 6) == 2)
        // A flushed name takes uid 3's 28 left of big.example: it holds 10, uid 5 (30) is the
        // largest and pays for the next new address.
        #expect(memory.forget(host: "big.example") == 28)
        record(7, "refill.example", 28, from: 100)
        record(8, "new.example", 1)
        #expect(memory.count(uid: 5) == 29 && memory.count(uid: 3) == 10 && memory.count(uid: 7) == 28)
    }

    /// `forget` takes one uid's memory of an address (or all of it) and frees its share: an
    /// account at its cap records again at once, and no other uid loses anything.
    @Test func forgettingFreesOnlyTheCallersShare() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacityPerUser: 2, capacity: 8)
        memory.record(
            uid: Self.root, host: "a.example", addresses: ["192.0.2.1", "192.0.2.2"], ttl: 60, now: clock.now)
        memory.record(uid: Self.other, host: "a.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        #expect(memory.forget(uid: Self.root, address: IPAddress("::ffff:192.0.2.1")!) == 1)
        #expect(memory.forget(uid: Self.root, address: IPAddress("192.0.2.1")!) == 0)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == [])
        #expect(Self.hosts(memory, Self.root, "192.0.2.2", clock.now) == ["a.example"])
        #expect(Self.hosts(memory, Self.other, "192.0.2.1", clock.now) == ["a.example"])
        #expect(memory.count == 2 && memory.count(uid: Self.root) == 1)
        // The freed place is root's again: two addresses fit without evicting 192.0.2.2.
        memory.record(uid: Self.root, host: "b.example", addresses: ["192.0.2.3"], ttl: 60, now: clock.now)
        #expect(Self.hosts(memory, Self.root, "192.0.2.2", clock.now) == ["a.example"])
        #expect(memory.forgetAll(uid: Self.root) == 2)
        #expect(memory.forgetAll(uid: Self.root) == 0)
        #expect(memory.count == 1 && memory.count(uid: Self.root) == 0)
        #expect(Self.hosts(memory, Self.other, "192.0.2.1", clock.now) == ["a.example"])
    }

    @Test func everyHostOfAnAddressMostRecentFirst() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory()
        memory.record(
            uid: Self.root, host: "a.example", addresses: ["192.0.2.1", "2001:db8::1"], ttl: 60, now: clock.now)
        clock.advance(seconds: 5)
        memory.record(uid: Self.root, host: "b.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == ["b.example", "a.example"])
        #expect(Self.hosts(memory, Self.root, "2001:db8::1", clock.now) == ["a.example"])
        #expect(Self.hosts(memory, Self.root, "198.51.100.1", clock.now) == [])
        // Resolving a.example again makes it the most recent, without a second copy.
        memory.record(uid: Self.root, host: "a.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == ["a.example", "b.example"])
        #expect(memory.count == 2)
    }

    /// Every remembered name is a normalization candidate, within its TTL or past it: a name
    /// resolved to the address after another's answer expired does not take the address over.
    @Test func everyRememberedNameIsANormalizationCandidate() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory(retention: 3_600)
        let ip = IPAddress("192.0.2.7")!
        memory.record(uid: Self.root, host: "bank.example", addresses: ["192.0.2.7"], ttl: 1, now: clock.now)
        #expect(memory.normalizationCandidates(uid: Self.root, of: ip, now: clock.now) == ["bank.example"])
        clock.advance(seconds: 2)
        // Past its TTL, still remembered: still the only candidate.
        #expect(memory.normalizationCandidates(uid: Self.root, of: ip, now: clock.now) == ["bank.example"])
        memory.record(uid: Self.root, host: "other.example", addresses: ["192.0.2.7"], ttl: 60, now: clock.now)
        #expect(
            memory.normalizationCandidates(uid: Self.root, of: ip, now: clock.now) == [
                "other.example", "bank.example",
            ])
        // Once every answer has expired, the retained names are still all candidates.
        clock.advance(seconds: 120)
        #expect(
            memory.normalizationCandidates(uid: Self.root, of: ip, now: clock.now) == [
                "other.example", "bank.example",
            ])
        // A name is a candidate until it is forgotten (TTL plus retention).
        clock.advance(seconds: 3_600 - 122 + 1)
        #expect(memory.normalizationCandidates(uid: Self.root, of: ip, now: clock.now) == ["other.example"])
        clock.advance(seconds: 3_600)
        #expect(memory.normalizationCandidates(uid: Self.root, of: ip, now: clock.now) == [])
    }

    /// What another uid resolves never shows in root's memory, nor the other way round.
    @Test func anotherUsersAnswersNeverFeedThisUsersMemory() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory()
        memory.record(uid: Self.root, host: "bank.example", addresses: ["203.0.113.10"], ttl: 60, now: clock.now)
        memory.record(uid: Self.other, host: "evil.example", addresses: ["203.0.113.10"], ttl: 60, now: clock.now)
        #expect(Self.hosts(memory, Self.root, "203.0.113.10", clock.now) == ["bank.example"])
        #expect(Self.hosts(memory, Self.other, "203.0.113.10", clock.now) == ["evil.example"])
        #expect(Self.hosts(memory, 1000, "203.0.113.10", clock.now) == [])
        #expect(memory.count(uid: Self.root) == 1 && memory.count(uid: Self.other) == 1 && memory.count == 2)
    }

    /// An attribution lives for the answer's TTL plus the retention; past that its host is no
    /// longer a candidate, even though the address still has other hosts.
    @Test func keptForTTLPlusRetentionEachHostOnItsOwn() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory(retention: 3_600)
        memory.record(uid: Self.root, host: "a.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        clock.advance(seconds: 100)
        memory.record(uid: Self.root, host: "b.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        let both = memory.attributions(uid: Self.root, of: IPAddress("192.0.2.1")!, now: clock.now)
        #expect(both.map(\.host) == ["b.example", "a.example"])
        #expect(both[0].answerExpiresAt == clock.now.advanced(bySeconds: 60))
        #expect(both[1].forgetAt == clock.now.advanced(bySeconds: 60 + 3_600 - 100))
        clock.advance(seconds: 60 + 3_600 - 100 - 1)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == ["b.example", "a.example"])
        clock.advance(seconds: 1)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == ["b.example"])
        clock.advance(seconds: 100)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == [])
        #expect(memory.count == 0)
    }

    @Test func anIPv4MappedAddressFindsTheIPv4Entry() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory()
        memory.record(uid: Self.root, host: "a.example", addresses: ["203.0.113.10"], ttl: 60, now: clock.now)
        memory.record(uid: Self.root, host: "m.example", addresses: ["::ffff:198.51.100.7"], ttl: 60, now: clock.now)
        #expect(Self.hosts(memory, Self.root, "::ffff:203.0.113.10", clock.now) == ["a.example"])
        #expect(Self.hosts(memory, Self.root, "198.51.100.7", clock.now) == ["m.example"])
        #expect(memory.count == 2)
    }

    @Test func hostsPerAddressAreBounded() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory()
        for index in 0..<20 {
            memory.record(uid: Self.root, host: "h\(index).example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        }
        let hosts = Self.hosts(memory, Self.root, "192.0.2.1", clock.now)
        #expect(hosts.count == AddressOwnerMemory.maxHostsPerAddress)
        #expect(hosts.first == "h19.example" && hosts.last == "h12.example")
    }

    /// A cache hit records the same answer again (the in-place lane): the host's expiry moves on,
    /// older names of the address stay behind it, and the address becomes the most recently used.
    @Test func recordingTheSameHostAgainRefreshesItInPlace() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacityPerUser: 3, retention: 100)
        let ip = IPAddress("192.0.2.1")!
        memory.record(uid: Self.root, host: "old.example", addresses: ["192.0.2.1"], ttl: 10, now: clock.now)
        memory.record(uid: Self.root, host: "new.example", addresses: ["192.0.2.1"], ttl: 10, now: clock.now)
        memory.record(uid: Self.root, host: "b.example", addresses: ["192.0.2.2"], ttl: 60, now: clock.now)
        memory.record(uid: Self.root, host: "c.example", addresses: ["192.0.2.3"], ttl: 60, now: clock.now)
        clock.advance(seconds: 8)
        memory.record(uid: Self.root, host: "new.example", addresses: ["192.0.2.1"], ttl: 10, now: clock.now)
        // 192.0.2.1 was used last: a fourth address evicts 192.0.2.2, the least recently used.
        memory.record(uid: Self.root, host: "d.example", addresses: ["192.0.2.4"], ttl: 60, now: clock.now)
        #expect(memory.count(uid: Self.root) == 3)
        #expect(Self.hosts(memory, Self.root, "192.0.2.2", clock.now) == [])
        let refreshed = memory.attributions(uid: Self.root, of: ip, now: clock.now)
        #expect(refreshed.map(\.host) == ["new.example", "old.example"])
        #expect(refreshed.first?.answerExpiresAt == clock.now.advanced(bySeconds: 10))
        #expect(refreshed.first?.forgetAt == clock.now.advanced(bySeconds: 110))
        // Past the first answer's TTL, both names are still candidates.
        clock.advance(seconds: 5)
        #expect(
            memory.normalizationCandidates(uid: Self.root, of: ip, now: clock.now) == ["new.example", "old.example"])
    }

    @Test func eachUserIsBoundedWithLeastRecentlyUsedEviction() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacityPerUser: 3)
        for (index, host) in ["a", "b", "c"].enumerated() {
            memory.record(
                uid: Self.root, host: "\(host).example", addresses: ["192.0.2.\(index)"], ttl: 60, now: clock.now)
        }
        // Reading 192.0.2.0 makes 192.0.2.1 the least recently used.
        #expect(Self.hosts(memory, Self.root, "192.0.2.0", clock.now) == ["a.example"])
        memory.record(uid: Self.root, host: "d.example", addresses: ["192.0.2.3"], ttl: 60, now: clock.now)
        #expect(memory.count(uid: Self.root) == 3)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == [])
        #expect(Self.hosts(memory, Self.root, "192.0.2.0", clock.now) == ["a.example"])
        #expect(Self.hosts(memory, Self.root, "192.0.2.3", clock.now) == ["d.example"])
    }

    /// A uid that floods the memory only ever evicts its own entries while it remembers the most:
    /// the other uids keep theirs.
    @Test func aFloodingUserCannotEvictAnotherUsersEntries() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacityPerUser: 1_000, capacity: 1_200)
        for index in 0..<200 {
            memory.record(
                uid: Self.root, host: "r\(index).example", addresses: ["10.1.\(index / 256).\(index % 256)"], ttl: 60,
                now: clock.now)
        }
        for index in 0..<10_000 {
            memory.record(
                uid: Self.other, host: "x\(index).example", addresses: ["10.2.\(index / 256 % 256).\(index % 256)"],
                ttl: 60, now: clock.now)
        }
        #expect(memory.count(uid: Self.root) == 200)
        #expect(memory.count(uid: Self.other) == 1_000)
        #expect(memory.count <= 1_200)
        #expect(Self.hosts(memory, Self.root, "10.1.0.0", clock.now) == ["r0.example"])
        // A third uid arriving when the total is full takes room from the largest holder, not root.
        for index in 0..<300 {
            memory.record(
                uid: 1000, host: "t\(index).example", addresses: ["10.3.\(index / 256).\(index % 256)"], ttl: 60,
                now: clock.now)
        }
        #expect(memory.count(uid: 1000) == 300)
        #expect(memory.count(uid: Self.root) == 200)
        #expect(memory.count(uid: Self.other) == 700)
        #expect(memory.count == 1_200)
    }

    @Test func pruneForgetsExpired() {
        var clock = CacheManualClock()
        let memory = AddressOwnerMemory(retention: 10)
        memory.record(uid: Self.root, host: "a.example", addresses: ["192.0.2.1", "192.0.2.2"], ttl: 5, now: clock.now)
        memory.record(uid: Self.other, host: "b.example", addresses: ["192.0.2.3"], ttl: 100, now: clock.now)
        clock.advance(seconds: 15)
        #expect(memory.prune(now: clock.now) == 2)
        #expect(memory.count == 1)
        #expect(Self.hosts(memory, Self.other, "192.0.2.3", clock.now) == ["b.example"])
    }

    @Test func snapshotAndRestoreAcrossARestartKeepUsersHostsAndRecency() {
        var clock = CacheManualClock()
        let before = AddressOwnerMemory(capacityPerUser: 10, retention: 1_000)
        before.record(uid: Self.root, host: "a.example", addresses: ["192.0.2.1"], ttl: 0, now: clock.now)
        clock.advance(seconds: 10)
        before.record(uid: Self.root, host: "b.example", addresses: ["192.0.2.2"], ttl: 0, now: clock.now)
        before.record(uid: Self.root, host: "c.example", addresses: ["192.0.2.3"], ttl: 0, now: clock.now)
        before.record(uid: Self.root, host: "d.example", addresses: ["192.0.2.3"], ttl: 500, now: clock.now)
        before.record(uid: Self.other, host: "x.example", addresses: ["192.0.2.3"], ttl: 500, now: clock.now)
        let snapshot = before.snapshot(now: clock.now, wallNow: clock.wallNow)
        #expect(snapshot.map(\.uid) == [Self.root, Self.root, Self.root, Self.root, Self.other])
        #expect(snapshot.map(\.ip) == ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.3", "192.0.2.3"])
        #expect(snapshot.map(\.host) == ["a.example", "b.example", "c.example", "d.example", "x.example"])
        #expect(snapshot[0].expiresAtUnix == clock.wallNow + 990)
        #expect(snapshot[3].answerExpiresAtUnix == clock.wallNow + 500)

        let restarted = CacheManualClock(now: MonotonicInstant(seconds: 1), wallNow: clock.wallNow + 995)
        let after = AddressOwnerMemory(capacityPerUser: 2, retention: 1_000)
        // a.example expired during the downtime; the rest fits root's cap of two addresses.
        #expect(after.restore(snapshot, now: restarted.now, wallNow: restarted.wallNow) == 4)
        #expect(Self.hosts(after, Self.root, "192.0.2.1", restarted.now) == [])
        #expect(Self.hosts(after, Self.root, "192.0.2.2", restarted.now) == ["b.example"])
        #expect(Self.hosts(after, Self.root, "192.0.2.3", restarted.now) == ["d.example", "c.example"])
        #expect(Self.hosts(after, Self.other, "192.0.2.3", restarted.now) == ["x.example"])
        let latest = after.attributions(uid: Self.root, of: IPAddress("192.0.2.3")!, now: restarted.now)[0]
        #expect(latest.answerExpiresAt == restarted.now.advanced(bySeconds: 500 - 995))
        #expect(Self.hosts(after, Self.root, "192.0.2.2", restarted.now.advanced(bySeconds: 5)) == [])
    }

    @Test func restoreDoesNotOverrideNewerKnowledgeNorTrustJunk() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory()
        memory.record(uid: Self.root, host: "new.example", addresses: ["192.0.2.1"], ttl: 60, now: clock.now)
        let persisted = [
            PersistedAddressOwner(
                uid: Self.root, ip: "192.0.2.1", host: "old.example", answerExpiresAtUnix: clock.wallNow + 50,
                expiresAtUnix: clock.wallNow + 100),
            PersistedAddressOwner(
                uid: Self.root, ip: "not-an-ip", host: "junk.example", answerExpiresAtUnix: clock.wallNow + 50,
                expiresAtUnix: clock.wallNow + 100),
            PersistedAddressOwner(
                uid: Self.other, ip: "192.0.2.1", host: "theirs.example", answerExpiresAtUnix: .max,
                expiresAtUnix: .max),
        ]
        #expect(memory.restore(persisted, now: clock.now, wallNow: clock.wallNow) == 1)
        #expect(Self.hosts(memory, Self.root, "192.0.2.1", clock.now) == ["new.example"])
        // A far-future expiry (a clock set backwards, a damaged file) is believed for a week plus
        // the retention at most.
        let theirs = memory.attributions(uid: Self.other, of: IPAddress("192.0.2.1")!, now: clock.now)
        #expect(theirs.map(\.host) == ["theirs.example"])
        #expect(theirs[0].forgetAt == clock.now.advanced(bySeconds: 604_800 + 86_400))
    }

    /// The caps follow `CacheSize=`: never below the defaults, as many addresses per uid as cache
    /// entries above them, twice that in all.
    @Test func capacitiesFollowTheCacheSize() {
        #expect(AddressOwnerMemory.capacities(forCacheSize: 100) == (4_096, 32_768))
        #expect(AddressOwnerMemory.capacities(forCacheSize: 4_096) == (4_096, 32_768))
        #expect(AddressOwnerMemory.capacities(forCacheSize: 40_000) == (40_000, 80_000))
        #expect(AddressOwnerMemory.capacities(forCacheSize: 1_000_000) == (65_536, 131_072))
        #expect(AddressOwnerMemory.capacities(forCacheSize: .max) == (65_536, 131_072))
        let memory = AddressOwnerMemory(forCacheSize: 40_000)
        #expect(memory.capacityPerUser == 40_000 && memory.capacity == 80_000)
    }

    /// A uid that resolves as many addresses as the cache holds keeps every attribution, so a
    /// cache hit refreshes its address in place instead of evicting another.
    @Test func aUserKeepsAsManyAddressesAsTheCacheHolds() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(forCacheSize: 10_000)
        for index in 0..<10_000 {
            memory.record(
                uid: Self.root, host: "n\(index).example",
                addresses: ["10.\(index / 65_536).\(index / 256 % 256).\(index % 256)"],
                ttl: 60, now: clock.now)
        }
        #expect(memory.count(uid: Self.root) == 10_000)
        #expect(Self.hosts(memory, Self.root, "10.0.0.0", clock.now) == ["n0.example"])
    }

    /// A reload that shrinks the caps drops what is over them at once, least recently used first,
    /// and from the uid that remembers the most when the total is over.
    @Test func resizingDownEvictsTheLeastRecentlyUsed() {
        let clock = CacheManualClock()
        let memory = AddressOwnerMemory(capacityPerUser: 10, capacity: 20)
        for index in 0..<10 {
            memory.record(
                uid: Self.root, host: "r\(index).example", addresses: ["10.1.0.\(index)"], ttl: 60, now: clock.now)
        }
        for index in 0..<6 {
            memory.record(
                uid: Self.other, host: "o\(index).example", addresses: ["10.2.0.\(index)"], ttl: 60, now: clock.now)
        }
        memory.resize(capacityPerUser: 8, capacity: 12)
        #expect(memory.capacityPerUser == 8 && memory.capacity == 12)
        // Per uid first: root keeps its 8 newest; then the total: root, holding the most, gives up 2 more.
        #expect(memory.count(uid: Self.root) == 6)
        #expect(memory.count(uid: Self.other) == 6)
        #expect(memory.count == 12)
        #expect(Self.hosts(memory, Self.root, "10.1.0.3", clock.now) == [])
        #expect(Self.hosts(memory, Self.root, "10.1.0.4", clock.now) == ["r4.example"])
        #expect(Self.hosts(memory, Self.other, "10.2.0.0", clock.now) == ["o0.example"])
        // Growing keeps everything and lets new addresses in.
        memory.resize(capacityPerUser: 100, capacity: 200)
        memory.record(uid: Self.root, host: "new.example", addresses: ["10.1.1.1"], ttl: 60, now: clock.now)
        #expect(memory.count(uid: Self.root) == 7)
    }
}

/// The resolver sizes its address memory from `CacheSize=` and resizes it on reload.
@Suite struct ResolverAddressMemorySizeTests {
    static func settings(cacheSize: Int) throws -> ResolverSettings {
        let text = "[Resolver]\nUpstream=alibaba http://127.0.0.1:9/1\nCacheSize=\(cacheSize)\n"
        let configuration = try DaemonConfiguration.parse(text: text, path: "test").get().0
        return ResolverSettings(configuration.resolver, workers: 4, workersPerOwner: 2, daemonUID: 0)
    }

    @Test func theMemoryFollowsCacheSizeAtStartAndOnReload() throws {
        var machine = ResolverMachine(settings: try Self.settings(cacheSize: 40_000), rules: BasicDomainRules())
        #expect(machine.owners.capacityPerUser == 40_000 && machine.owners.capacity == 80_000)
        machine.apply(try Self.settings(cacheSize: 100))
        #expect(machine.owners.capacityPerUser == 4_096 && machine.owners.capacity == 32_768)
    }
}
