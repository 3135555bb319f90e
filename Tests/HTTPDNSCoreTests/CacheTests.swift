import HTTPDNSCore
import HTTPDNSTestSupport
import Testing

struct CacheTests {
    let host = "api.example.com"

    private func fresh(_ lookup: CacheLookup) -> (DNSCacheEntry, Int)? {
        if case .fresh(let entry, let ttl) = lookup { return (entry, ttl) }
        return nil
    }

    private func stale(_ lookup: CacheLookup) -> DNSCacheEntry? {
        if case .stale(let entry) = lookup { return entry }
        return nil
    }

    @Test func freshAnswerWithTTLLeft() throws {
        var clock = CacheManualClock()
        let cache = DNSCache()
        #expect(
            cache.insert(
                host: host, family: .ipv4, addresses: ["203.0.113.10", "203.0.113.11"], ttl: 60, upstream: "alibaba",
                now: clock.now))
        clock.advance(seconds: 3)
        let (entry, ttl) = try #require(
            fresh(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: true)))
        #expect(entry.addresses == ["203.0.113.10", "203.0.113.11"])
        #expect(entry.upstream == "alibaba")
        #expect(!entry.negative)
        #expect(ttl == 57)
        #expect(cache.lookup(host: host, family: .ipv6, now: clock.now, allowStale: true) == .miss)
    }

    @Test func ttlLeftRoundsUpSoAFreshAnswerNeverReportsZero() throws {
        var clock = CacheManualClock()
        let cache = DNSCache()
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 2, upstream: nil, now: clock.now)
        clock.advance(milliseconds: 1_700)
        let (_, ttl) = try #require(fresh(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: true)))
        #expect(ttl == 1)
    }

    @Test func ttlIsClampedToMinAndMax() throws {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(minTTL: 30, maxTTL: 600))
        cache.insert(
            host: "short.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 5, upstream: nil, now: clock.now)
        cache.insert(
            host: "long.example", family: .ipv4, addresses: ["192.0.2.2"], ttl: 7_200, upstream: nil, now: clock.now)
        let short = try #require(
            fresh(cache.lookup(host: "short.example", family: .ipv4, now: clock.now, allowStale: false)))
        let long = try #require(
            fresh(cache.lookup(host: "long.example", family: .ipv4, now: clock.now, allowStale: false)))
        #expect(short.1 == 30)
        #expect(long.1 == 600)
    }

    @Test func defaultMaxTTLIsOneDay() throws {
        let clock = CacheManualClock()
        let cache = DNSCache()
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 604_800, upstream: nil, now: clock.now)
        let (_, ttl) = try #require(fresh(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: false)))
        #expect(ttl == 86_400)
    }

    @Test func zeroTTLIsNotCachedAndDropsTheOlderAnswer() {
        var clock = CacheManualClock()
        let cache = DNSCache()
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 60, upstream: nil, now: clock.now)
        clock.advance(seconds: 1)
        #expect(
            !cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.2"], ttl: 0, upstream: nil, now: clock.now))
        #expect(cache.entryCount == 0)
        #expect(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: true) == .miss)
        // A negative TTL from a broken upstream counts as 0.
        #expect(
            !cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.3"], ttl: -5, upstream: nil, now: clock.now))
        #expect(cache.entryCount == 0)
    }

    @Test func minTTLTurnsZeroIntoCacheable() {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(minTTL: 10))
        #expect(
            cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 0, upstream: nil, now: clock.now))
        #expect(cache.entryCount == 1)
    }

    @Test func expiredAnswerIsStaleWithinTheWindowOnlyWhenAllowed() throws {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(maxStale: 3_600))
        cache.insert(host: host, family: .ipv6, addresses: ["2001:db8::1"], ttl: 60, upstream: "doh", now: clock.now)
        clock.advance(seconds: 60)  // exactly at expiry: no longer fresh
        let entry = try #require(stale(cache.lookup(host: host, family: .ipv6, now: clock.now, allowStale: true)))
        #expect(entry.addresses == ["2001:db8::1"])
        #expect(cache.lookup(host: host, family: .ipv6, now: clock.now, allowStale: false) == .miss)
        // allowStale: false does not throw the entry away; a later stale-tolerant caller gets it.
        clock.advance(seconds: 3_600 - 1)
        #expect(stale(cache.lookup(host: host, family: .ipv6, now: clock.now, allowStale: true)) != nil)
        clock.advance(seconds: 1)  // expiry + maxStale
        #expect(cache.lookup(host: host, family: .ipv6, now: clock.now, allowStale: true) == .miss)
        #expect(cache.entryCount == 0)
    }

    @Test func zeroMaxStaleServesNothingStale() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(maxStale: 0))
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 10, upstream: nil, now: clock.now)
        clock.advance(seconds: 10)
        #expect(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: true) == .miss)
    }

    @Test func negativeEntriesLiveForNegativeTTLAndAreNeverStale() throws {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 30))
        #expect(cache.insertNegative(host: "nx.example", family: .ipv4, now: clock.now))
        clock.advance(seconds: 29)
        let (entry, ttl) = try #require(
            fresh(cache.lookup(host: "nx.example", family: .ipv4, now: clock.now, allowStale: true)))
        #expect(entry.negative)
        #expect(entry.addresses.isEmpty)
        #expect(ttl == 1)
        clock.advance(seconds: 1)
        #expect(cache.lookup(host: "nx.example", family: .ipv4, now: clock.now, allowStale: true) == .miss)
    }

    @Test func negativeTTLIsClampedToo() throws {
        let clock = CacheManualClock()
        let capped = DNSCache(limits: DNSCacheLimits(minTTL: 0, maxTTL: 10, negativeTTL: 30))
        capped.insertNegative(host: "nx.example", family: .ipv4, now: clock.now)
        let (_, ttl) = try #require(
            fresh(capped.lookup(host: "nx.example", family: .ipv4, now: clock.now, allowStale: true)))
        #expect(ttl == 10)
        let disabled = DNSCache(limits: DNSCacheLimits(negativeTTL: 0))
        #expect(!disabled.insertNegative(host: "nx.example", family: .ipv4, now: clock.now))
        #expect(disabled.entryCount == 0)
    }

    @Test func emptyAnswerIsCachedAsNegative() throws {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 30))
        cache.insert(host: host, family: .ipv6, addresses: [], ttl: 600, upstream: "tencent", now: clock.now)
        let (entry, ttl) = try #require(
            fresh(cache.lookup(host: host, family: .ipv6, now: clock.now, allowStale: true)))
        #expect(entry.negative)
        #expect(entry.upstream == "tencent")
        #expect(ttl == 30)
    }

    @Test func familiesAreSeparateEntries() throws {
        let clock = CacheManualClock()
        let cache = DNSCache()
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 60, upstream: nil, now: clock.now)
        cache.insert(host: host, family: .ipv6, addresses: ["2001:db8::1"], ttl: 120, upstream: nil, now: clock.now)
        #expect(cache.entryCount == 2)
        let v4 = try #require(fresh(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: false)))
        let v6 = try #require(fresh(cache.lookup(host: host, family: .ipv6, now: clock.now, allowStale: false)))
        #expect(v4.0.addresses == ["192.0.2.1"] && v4.1 == 60)
        #expect(v6.0.addresses == ["2001:db8::1"] && v6.1 == 120)
    }

    @Test func newerAnswerReplacesOlder() throws {
        var clock = CacheManualClock()
        let cache = DNSCache()
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 60, upstream: "a", now: clock.now)
        clock.advance(seconds: 10)
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.2"], ttl: 30, upstream: "b", now: clock.now)
        let (entry, ttl) = try #require(
            fresh(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: false)))
        #expect(entry.addresses == ["192.0.2.2"] && entry.upstream == "b" && ttl == 30)
        #expect(cache.entryCount == 1)
    }

    /// One request counts once, whatever the number of families it asks for: a cold resolve is
    /// one miss and no hit, as `status` reports it.
    @Test func answerCountsOneHitOrOneMissPerRequest() throws {
        var clock = CacheManualClock()
        let cache = DNSCache()
        #expect(cache.answer(host: host, families: [.ipv4, .ipv6], now: clock.now, allowStale: true) == .miss)
        #expect(cache.hits == 0 && cache.misses == 1)
        cache.insert(
            host: host, parts: [(.ipv4, ["192.0.2.1"]), (.ipv6, [])], ttl: 10, upstream: "alibaba", now: clock.now)
        cache.insertNegative(host: "nx.example", family: .ipv4, now: clock.now)
        guard
            case .fresh(let entries, let ttl) = cache.answer(
                host: host, families: [.ipv4, .ipv6], now: clock.now, allowStale: true)
        else {
            Issue.record("both families are cached and fresh")
            return
        }
        #expect(entries.map(\.family) == [.ipv4, .ipv6] && entries[1].negative && ttl == 10)
        guard
            case .fresh(let negative, _) = cache.answer(
                host: "nx.example", families: [.ipv4], now: clock.now, allowStale: true)
        else {
            Issue.record("a negative entry is a fresh answer too")
            return
        }
        #expect(negative.allSatisfy { $0.negative })
        #expect(cache.hits == 2 && cache.misses == 1)
        // One family cached and the other not: the missing one is to be asked; a miss, counted once.
        #expect(
            cache.answer(host: "nx.example", families: [.ipv4, .ipv6], now: clock.now, allowStale: true)
                == .partial(negative, missing: .ipv6))
        #expect(cache.hits == 2 && cache.misses == 2)
        clock.advance(seconds: 11)
        guard case .stale = cache.answer(host: host, families: [.ipv4], now: clock.now, allowStale: true) else {
            Issue.record("an expired positive entry is stale")
            return
        }
        #expect(cache.hits == 2 && cache.misses == 3)
        #expect(cache.staleServed == 0)  // only the caller knows whether it served it
        cache.noteStaleServed()
        #expect(cache.staleServed == 1)
        // A second look for the same request, lookups and peeks count nothing.
        _ = cache.answer(host: host, families: [.ipv4], now: clock.now, allowStale: true, counted: false)
        _ = cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: true)
        _ = cache.peek(host: host, family: .ipv4)
        #expect(cache.hits == 2 && cache.misses == 3)
    }

    /// At the cap, a dual-family answer whose TTL is the shortest must keep both parts: making room
    /// for one never evicts the other (with the cache full of longer-lived names).
    @Test func anAnswerAtTheCapNeverEvictsItsOwnOtherPart() {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 4))
        for index in 0..<4 {
            cache.insert(
                host: "long\(index).example", family: .ipv4, addresses: ["192.0.2.\(index)"], ttl: 3_600,
                upstream: nil, now: clock.now)
        }
        let stored = cache.insert(
            host: host, parts: [(.ipv4, ["203.0.113.1"]), (.ipv6, ["2001:db8::1"])], ttl: 60, upstream: nil,
            now: clock.now)
        #expect(stored == 2)
        #expect(cache.entryCount == 4)
        #expect(cache.peek(host: host, family: .ipv4)?.addresses == ["203.0.113.1"])
        #expect(cache.peek(host: host, family: .ipv6)?.addresses == ["2001:db8::1"])
        // Replacing the same answer at the cap evicts nothing else.
        cache.insert(
            host: host, parts: [(.ipv4, ["203.0.113.2"]), (.ipv6, ["2001:db8::2"])], ttl: 30, upstream: nil,
            now: clock.now)
        #expect(cache.entryCount == 4)
        #expect(cache.peek(host: host, family: .ipv4)?.addresses == ["203.0.113.2"])
        #expect((0..<4).filter { cache.peek(host: "long\($0).example", family: .ipv4) != nil }.count == 2)
        // A cap below the number of parts keeps the first ones.
        let tiny = DNSCache(limits: DNSCacheLimits(capacity: 1))
        #expect(
            tiny.insert(
                host: host, parts: [(.ipv4, ["203.0.113.1"]), (.ipv6, ["2001:db8::1"])], ttl: 60, upstream: nil,
                now: clock.now) == 1)
        #expect(tiny.peek(host: host, family: .ipv4) != nil && tiny.peek(host: host, family: .ipv6) == nil)
    }

    /// A part with TTL 0 (or a negative part with `NegativeTTL=0`) is used once, not cached; the
    /// other part of the same answer still is.
    @Test func zeroTTLPartsAreNotCachedButTheirSiblingsAre() {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 0))
        #expect(
            cache.insert(
                host: host, parts: [(.ipv4, ["203.0.113.1"]), (.ipv6, [])], ttl: 60, upstream: nil, now: clock.now)
                == 1)
        #expect(cache.peek(host: host, family: .ipv6) == nil)
        let uncached = DNSCache(limits: DNSCacheLimits(maxTTL: 0))
        #expect(
            uncached.insert(host: host, parts: [(.ipv4, ["203.0.113.1"])], ttl: 60, upstream: nil, now: clock.now) == 0)
        #expect(uncached.entryCount == 0)
    }

    /// `MaxTTL=infinity` and other huge settings never make a TTL JSON readers cannot hold.
    @Test func everyTTLStaysWithinRFC2181sMaximum() throws {
        var resolver = DaemonConfiguration.Resolver()
        resolver.maxTTLMs = .max
        resolver.minTTLMs = .max / 2
        resolver.negativeTTLMs = .max
        let limits = DNSCacheLimits(resolver)
        #expect(limits.maxTTL == Int(Int32.max))
        #expect(limits.minTTL <= limits.maxTTL && limits.negativeTTL <= limits.maxTTL)
        #expect(limits.clamp(ttl: .max) == Int(Int32.max))
        let clock = CacheManualClock()
        let cache = DNSCache(limits: limits)
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: .max, upstream: nil, now: clock.now)
        let (_, ttl) = try #require(fresh(cache.lookup(host: host, family: .ipv4, now: clock.now, allowStale: false)))
        #expect(ttl <= (1 << 53) - 1)
        #expect(ttl == Int(Int32.max))
    }

    @Test func fullCacheEvictsEarliestExpiryFirst() {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 3))
        cache.insert(
            host: "a.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 300, upstream: nil, now: clock.now)
        cache.insert(
            host: "b.example", family: .ipv4, addresses: ["192.0.2.2"], ttl: 100, upstream: nil, now: clock.now)
        cache.insert(
            host: "c.example", family: .ipv4, addresses: ["192.0.2.3"], ttl: 200, upstream: nil, now: clock.now)
        cache.insert(host: "d.example", family: .ipv4, addresses: ["192.0.2.4"], ttl: 50, upstream: nil, now: clock.now)
        #expect(cache.entryCount == 3)
        #expect(cache.peek(host: "b.example", family: .ipv4) == nil)
        #expect(cache.peek(host: "d.example", family: .ipv4) != nil)  // the newcomer is kept
        cache.insert(
            host: "e.example", family: .ipv4, addresses: ["192.0.2.5"], ttl: 400, upstream: nil, now: clock.now)
        #expect(cache.peek(host: "d.example", family: .ipv4) == nil)
        #expect(cache.peek(host: "a.example", family: .ipv4) != nil)
        #expect(cache.peek(host: "c.example", family: .ipv4) != nil)
        #expect(cache.peek(host: "e.example", family: .ipv4) != nil)
    }

    @Test func evictionConsidersNegativeEntriesAndUsesTheCurrentExpiry() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 30, capacity: 2))
        cache.insert(host: "a.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 20, upstream: nil, now: clock.now)
        cache.insertNegative(host: "nx.example", family: .ipv4, now: clock.now)
        clock.advance(seconds: 5)
        // Refreshing a.example moves its expiry past the negative entry's.
        cache.insert(host: "a.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 60, upstream: nil, now: clock.now)
        cache.insert(host: "b.example", family: .ipv4, addresses: ["192.0.2.2"], ttl: 60, upstream: nil, now: clock.now)
        #expect(cache.peek(host: "nx.example", family: .ipv4) == nil)
        #expect(cache.peek(host: "a.example", family: .ipv4) != nil)
        #expect(cache.peek(host: "b.example", family: .ipv4) != nil)
    }

    @Test func unservableEntriesGoBeforeServableStaleOnes() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 10, maxStale: 3_600, capacity: 2))
        cache.insert(
            host: "stale.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 5, upstream: nil, now: clock.now)
        cache.insertNegative(host: "nx.example", family: .ipv4, now: clock.now)
        clock.advance(seconds: 20)  // both expired; only the positive one can still be served stale
        cache.insert(
            host: "new.example", family: .ipv4, addresses: ["192.0.2.3"], ttl: 60, upstream: nil, now: clock.now)
        #expect(cache.peek(host: "nx.example", family: .ipv4) == nil)
        #expect(cache.peek(host: "stale.example", family: .ipv4) != nil)
    }

    @Test func replacingEntriesManyTimesKeepsTheCapAndEvictsCorrectly() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 10))
        for round in 0..<1_000 {
            clock.advance(seconds: 1)
            cache.insert(
                host: "h\(round % 10).example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 100 + round % 10,
                upstream: nil, now: clock.now)
        }
        #expect(cache.entryCount == 10)
        // h0 was refreshed last at round 990 with ttl 100: the earliest expiry of the ten.
        cache.insert(
            host: "x.example", family: .ipv4, addresses: ["192.0.2.9"], ttl: 500, upstream: nil, now: clock.now)
        #expect(cache.entryCount == 10)
        #expect(cache.peek(host: "h0.example", family: .ipv4) == nil)
        #expect(cache.peek(host: "h1.example", family: .ipv4) != nil)
    }

    @Test func prunesPositiveEntriesAfterStaleWindowAndNegativeOnesAtExpiry() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 30, maxStale: 100))
        cache.insert(host: "a.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 10, upstream: nil, now: clock.now)
        cache.insert(
            host: "b.example", family: .ipv4, addresses: ["192.0.2.2"], ttl: 500, upstream: nil, now: clock.now)
        cache.insertNegative(host: "nx.example", family: .ipv6, now: clock.now)
        clock.advance(seconds: 30)
        #expect(cache.prune(now: clock.now) == 1)  // the negative entry
        #expect(cache.peek(host: "nx.example", family: .ipv6) == nil)
        #expect(cache.peek(host: "a.example", family: .ipv4) != nil)  // still servable stale
        clock.advance(seconds: 80)  // a: expiry 10 + 100 stale = 110
        #expect(cache.prune(now: clock.now) == 1)
        #expect(cache.peek(host: "a.example", family: .ipv4) == nil)
        #expect(cache.entryCount == 1)
        #expect(cache.prune(now: clock.now) == 0)
    }

    @Test func flushOneHostRemovesBothFamilies() {
        let clock = CacheManualClock()
        let cache = DNSCache()
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 60, upstream: nil, now: clock.now)
        cache.insert(host: host, family: .ipv6, addresses: ["2001:db8::1"], ttl: 60, upstream: nil, now: clock.now)
        cache.insert(
            host: "other.example", family: .ipv4, addresses: ["192.0.2.2"], ttl: 60, upstream: nil, now: clock.now)
        #expect(cache.flush(host: host) == 2)
        #expect(cache.flush(host: host) == 0)
        #expect(cache.flush(host: "never.example") == 0)
        #expect(cache.entryCount == 1)
        #expect(cache.flush(host: nil) == 1)
        #expect(cache.entryCount == 0)
        // The heaps were cleared with the entries: refilling to capacity still works.
        cache.insert(host: host, family: .ipv4, addresses: ["192.0.2.1"], ttl: 60, upstream: nil, now: clock.now)
        #expect(cache.prune(now: clock.now) == 0)
        #expect(cache.entryCount == 1)
    }

    /// Both families of a name share one slot: a random run of answers (one or both families,
    /// positive, negative, zero TTL), expiries, prunes, flushes and lookups keeps `entryCount`
    /// equal to the entries that can be seen, never over the cap, and each family separate.
    @Test func entryCountMatchesTheEntriesThroughoutARandomRun() {
        var rng = SeededGenerator(state: 0x736C_6F74)
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 5, maxStale: 20, capacity: 9))
        let hosts = (0..<7).map { "h\($0).example" }
        for round in 0..<4000 {
            let host = hosts[Int(rng.next() % 7)]
            let address = "192.0.2.\(round % 250)"
            switch rng.next() % 8 {
            case 0, 1:
                cache.insert(
                    host: host, parts: [(.ipv4, [address]), (.ipv6, rng.next() % 3 == 0 ? [] : ["2001:db8::1"])],
                    ttl: Int(rng.next() % 40), upstream: "u", now: clock.now)
            case 2:
                let family: IPFamily = rng.next() % 2 == 0 ? .ipv4 : .ipv6
                let addresses = family == .ipv4 ? [address] : ["2001:db8::2"]
                cache.insert(
                    host: host, family: family, addresses: addresses, ttl: Int(rng.next() % 40), upstream: nil,
                    now: clock.now)
            case 3: clock.advance(seconds: Int(rng.next() % 15))
            case 4: cache.prune(now: clock.now)
            case 5 where rng.next() % 4 == 0: cache.flush(host: host)
            default:
                let families: [IPFamily] = rng.next() % 2 == 0 ? [.ipv4, .ipv6] : [.ipv6]
                _ = cache.answer(host: host, families: families, now: clock.now, allowStale: rng.next() % 2 == 0)
            }
            var visible = 0
            for name in hosts {
                for family in IPFamily.allCases {
                    guard let entry = cache.peek(host: name, family: family) else { continue }
                    visible += 1
                    #expect(entry.host == name && entry.family == family)
                    #expect(entry.negative == entry.addresses.isEmpty)
                }
            }
            #expect(cache.entryCount == visible, "round \(round)")
            #expect(cache.entryCount <= 9)
        }
    }
}

struct CachePersistenceTests {
    /// The snapshot is restored after the daemon starts serving: an answer stored since (a
    /// prefetch, a resolve) is newer knowledge and stays, even with an earlier expiry than the
    /// saved one.
    @Test func anAnswerStoredSinceTheStartWinsOverTheSnapshot() {
        let clock = CacheManualClock()
        let before = DNSCache(limits: DNSCacheLimits())
        before.insert(
            host: "api.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 3_000, upstream: "old", now: clock.now)
        let snapshot = before.snapshot(now: clock.now, wallNow: clock.wallNow)
        let after = DNSCache(limits: DNSCacheLimits())
        after.insert(
            host: "api.example", family: .ipv4, addresses: ["192.0.2.99"], ttl: 60, upstream: "new", now: clock.now)
        #expect(after.restore(snapshot, now: clock.now, wallNow: clock.wallNow) == 0)
        guard
            case .fresh(let entry, let ttl) = after.lookup(
                host: "api.example", family: .ipv4, now: clock.now, allowStale: false)
        else {
            Issue.record("the fresh answer should still be cached")
            return
        }
        #expect(entry.addresses == ["192.0.2.99"] && ttl == 60)
    }

    @Test func snapshotAndRestoreAcrossARestart() throws {
        let clock = CacheManualClock()
        let before = DNSCache(limits: DNSCacheLimits(negativeTTL: 30, maxStale: 3_600))
        before.insert(
            host: "a.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 300, upstream: "alibaba", now: clock.now)
        before.insert(
            host: "b.example", family: .ipv6, addresses: ["2001:db8::2"], ttl: 10, upstream: nil, now: clock.now)
        before.insertNegative(host: "nx.example", family: .ipv4, now: clock.now)
        let snapshot = before.snapshot(now: clock.now, wallNow: clock.wallNow)
        #expect(snapshot.count == 3)
        let a = try #require(snapshot.first { $0.host == "a.example" })
        #expect(a.expiresAtUnix == clock.wallNow + 300)
        #expect(a.family == .ipv4 && a.addresses == ["192.0.2.1"] && a.upstream == "alibaba" && !a.negative)
        #expect(snapshot.first { $0.host == "nx.example" }?.negative == true)

        // Restart: the monotonic clock starts over, the wall clock has moved on 100 s.
        let restarted = CacheManualClock(now: MonotonicInstant(seconds: 5), wallNow: clock.wallNow + 100)
        let after = DNSCache(limits: DNSCacheLimits(negativeTTL: 30, maxStale: 3_600))
        #expect(after.restore(snapshot, now: restarted.now, wallNow: restarted.wallNow) == 2)
        guard
            case .fresh(let entry, let ttl) = after.lookup(
                host: "a.example", family: .ipv4, now: restarted.now, allowStale: false)
        else {
            Issue.record("a.example should be fresh with 200 s left")
            return
        }
        #expect(ttl == 200)
        #expect(entry.upstream == "alibaba")
        // b.example expired 90 s ago: stale but inside the window. The negative entry is gone.
        guard case .stale = after.lookup(host: "b.example", family: .ipv6, now: restarted.now, allowStale: true) else {
            Issue.record("b.example should be served stale")
            return
        }
        #expect(after.peek(host: "nx.example", family: .ipv4) == nil)
        #expect(after.hits == 0 && after.misses == 0)  // restoring and looking up count nothing
    }

    @Test func restoreDropsWhatIsBeyondMaxStaleAndClampsToMaxTTL() throws {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(maxTTL: 600, maxStale: 3_600))
        let entries = [
            PersistedDNSEntry(
                host: "old.example", family: .ipv4, addresses: ["192.0.2.1"], upstream: nil,
                expiresAtUnix: clock.wallNow - 3_600, negative: false),
            PersistedDNSEntry(
                host: "future.example", family: .ipv4, addresses: ["192.0.2.2"], upstream: nil,
                expiresAtUnix: clock.wallNow + 1_000_000, negative: false),
        ]
        #expect(cache.restore(entries, now: clock.now, wallNow: clock.wallNow) == 1)
        #expect(cache.peek(host: "old.example", family: .ipv4) == nil)
        guard
            case .fresh(_, let ttl) = cache.lookup(
                host: "future.example", family: .ipv4, now: clock.now, allowStale: false)
        else {
            Issue.record("future.example should be fresh")
            return
        }
        #expect(ttl == 600)
    }

    @Test func restoreRejectsInvalidEntries() {
        let clock = CacheManualClock()
        let cache = DNSCache()
        let entries = [
            PersistedDNSEntry(
                host: "junk.example", family: .ipv4, addresses: ["not-an-ip"], upstream: nil,
                expiresAtUnix: clock.wallNow + 60, negative: false),
            PersistedDNSEntry(
                host: "empty.example", family: .ipv4, addresses: [], upstream: nil,
                expiresAtUnix: clock.wallNow + 60, negative: false),
            PersistedDNSEntry(
                host: "ok.example", family: .ipv4, addresses: ["192.0.2.1"], upstream: nil,
                expiresAtUnix: clock.wallNow + 60, negative: false),
        ]
        let restored = cache.restore(entries, now: clock.now, wallNow: clock.wallNow) { address, _ in
            address.first?.isNumber == true
        }
        #expect(restored == 1)
        #expect(cache.peek(host: "ok.example", family: .ipv4) != nil)
        #expect(cache.entryCount == 1)
    }

    @Test func restoreKeepsAFresherLiveEntry() throws {
        let clock = CacheManualClock()
        let cache = DNSCache()
        cache.insert(
            host: "a.example", family: .ipv4, addresses: ["192.0.2.9"], ttl: 600, upstream: nil, now: clock.now)
        let old = PersistedDNSEntry(
            host: "a.example", family: .ipv4, addresses: ["192.0.2.1"], upstream: nil,
            expiresAtUnix: clock.wallNow + 60, negative: false)
        #expect(cache.restore([old], now: clock.now, wallNow: clock.wallNow) == 0)
        #expect(cache.peek(host: "a.example", family: .ipv4)?.addresses == ["192.0.2.9"])
    }

    @Test func restoreRespectsCapacity() {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 2))
        let entries = (1...4).map { index in
            PersistedDNSEntry(
                host: "h\(index).example", family: .ipv4, addresses: ["192.0.2.\(index)"], upstream: nil,
                expiresAtUnix: clock.wallNow + Int64(index * 100), negative: false)
        }
        cache.restore(entries, now: clock.now, wallNow: clock.wallNow)
        #expect(cache.entryCount == 2)
        #expect(cache.peek(host: "h3.example", family: .ipv4) != nil)
        #expect(cache.peek(host: "h4.example", family: .ipv4) != nil)
    }

    @Test func snapshotLeavesOutUnservableEntries() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 10, maxStale: 50))
        cache.insert(
            host: "gone.example", family: .ipv4, addresses: ["192.0.2.1"], ttl: 10, upstream: nil, now: clock.now)
        cache.insert(
            host: "stale.example", family: .ipv4, addresses: ["192.0.2.2"], ttl: 40, upstream: nil, now: clock.now)
        cache.insertNegative(host: "nx.example", family: .ipv4, now: clock.now)
        clock.advance(seconds: 60)
        let snapshot = cache.snapshot(now: clock.now, wallNow: clock.wallNow)
        #expect(snapshot.map(\.host) == ["stale.example"])
        #expect(snapshot.first?.expiresAtUnix == clock.wallNow - 20)
    }

    /// Over many names of both families, fresh, stale and negative: the snapshot holds exactly the
    /// entries worth keeping, earliest expiry first, each with its own Unix expiry.
    @Test func snapshotHoldsEveryKeptEntryEarliestExpiryFirst() {
        var clock = CacheManualClock()
        var random = SeededGenerator(state: 28)
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 50, maxStale: 10, capacity: 1_000))
        // Per entry: its TTL, and whether it is negative.
        var inserted: [String: (ttl: Int, negative: Bool)] = [:]
        for index in 0..<300 {
            let host = "h\(index).example"
            for family in IPFamily.allCases {
                if Int.random(in: 0..<4, using: &random) == 0 {
                    cache.insertNegative(host: host, family: family, now: clock.now)
                    inserted["\(host) \(family)"] = (50, true)
                } else {
                    let ttl = Int.random(in: 1...100, using: &random)
                    let address = family == .ipv4 ? "192.0.2.\(index % 250 + 1)" : "2001:db8::\(index + 1)"
                    cache.insert(
                        host: host, family: family, addresses: [address], ttl: ttl, upstream: nil, now: clock.now)
                    inserted["\(host) \(family)"] = (ttl, false)
                }
            }
        }
        clock.advance(seconds: 40)
        let snapshot = cache.snapshot(now: clock.now, wallNow: clock.wallNow)
        // Fresh (expiring after 40 s), or positive and within maxStale (10 s) of its expiry.
        let kept = inserted.filter { $0.value.ttl > 40 || (!$0.value.negative && $0.value.ttl + 10 > 40) }
        #expect(kept.count > 100 && kept.count < inserted.count, "the run covers kept and dropped entries")
        #expect(Set(snapshot.map { "\($0.host) \($0.family)" }) == Set(kept.keys))
        #expect(snapshot.count == kept.count)
        #expect(zip(snapshot, snapshot.dropFirst()).allSatisfy { $0.expiresAtUnix <= $1.expiresAtUnix })
        for entry in snapshot {
            let made = inserted["\(entry.host) \(entry.family)"]
            #expect(entry.expiresAtUnix == clock.wallNow - 40 + Int64(made?.ttl ?? -1))
            #expect(entry.negative == made?.negative)
        }
    }
}

struct CacheMonotonicInstantTests {
    @Test func arithmeticAndOrdering() {
        let start = MonotonicInstant(seconds: 10)
        #expect(start.nanoseconds == 10_000_000_000)
        #expect(start + 5 == MonotonicInstant(seconds: 15))
        #expect(start.advanced(byMilliseconds: 1_500).nanoseconds == 11_500_000_000)
        #expect(start < start + 1)
        #expect((start + 2).nanoseconds(since: start) == 2_000_000_000)
        #expect(start.secondsRoundedUp(until: start.advanced(byMilliseconds: 1)) == 1)
        #expect(start.secondsRoundedUp(until: start + 3) == 3)
        #expect((start + 3).secondsRoundedUp(until: start) == 0)
    }

    @Test func arithmeticSaturatesInsteadOfTrapping() {
        let start = MonotonicInstant(seconds: 10)
        #expect(start.advanced(bySeconds: .max).nanoseconds == .max)
        #expect(MonotonicInstant(seconds: -10).advanced(bySeconds: .min).nanoseconds == .min)
        #expect(MonotonicInstant(nanoseconds: .max).nanoseconds(since: MonotonicInstant(nanoseconds: -1)) == .max)
    }
}
