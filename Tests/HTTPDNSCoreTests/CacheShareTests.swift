import HTTPDNSCore
import HTTPDNSTestSupport
import Testing

/// The cache's fair shares between users, and its families each with their own TTL and kind of
/// "no address".
struct CacheShareTests {
    static func positive(_ family: IPFamily = .ipv4, ttl: Int = 300) -> [CachePart] {
        [CachePart(family: family, addresses: [family == .ipv4 ? "203.0.113.1" : "2001:db8::1"], ttl: ttl)]
    }

    static func isCached(_ cache: DNSCache, _ host: String, now: MonotonicInstant) -> Bool {
        cache.lookup(host: host, family: .ipv4, now: now, allowStale: false) != .miss
    }

    /// One uid's distinct names fill the cache: they evict that uid's own entries, never the name
    /// another uid uses, which stays cached while fresh.
    @Test func oneUsersMissesNeverEvictAnotherUsersFreshEntry() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 4))
        cache.insert(host: "hot.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(0))
        for index in 0..<50 {
            clock.advance(milliseconds: 10)
            cache.insert(
                host: "flood\(index).example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(65534))
            #expect(cache.entryCount <= 4)
        }
        #expect(Self.isCached(cache, "hot.example", now: clock.now))
        #expect(Self.isCached(cache, "flood49.example", now: clock.now), "the flood's newest evicts its oldest")
        #expect(!Self.isCached(cache, "flood0.example", now: clock.now))
    }

    /// A cache hit makes the entry the hitting uid's too: another uid's flood cannot evict an
    /// entry it inserted once it is shared.
    @Test func aCacheHitProtectsTheEntryFromItsInserter() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 2))
        cache.insert(host: "shared.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(1000))
        _ = cache.answer(host: "shared.example", families: [.ipv4], now: clock.now, allowStale: false, user: 0)
        for index in 0..<5 {
            clock.advance(seconds: 1)
            cache.insert(
                host: "own\(index).example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(1000))
        }
        #expect(Self.isCached(cache, "shared.example", now: clock.now))
        #expect(Self.isCached(cache, "own4.example", now: clock.now))
    }

    /// Entries nobody used (prefetched, restored) and entries past their TTL are anyone's to
    /// evict, earliest expiry first.
    @Test func unusedAndExpiredEntriesAreEvictedFirst() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 3))
        cache.insert(host: "prefetched.example", parts: Self.positive(), upstream: nil, now: clock.now)
        cache.insert(host: "short.example", parts: Self.positive(ttl: 1), upstream: nil, now: clock.now, use: .one(0))
        cache.insert(host: "long.example", parts: Self.positive(ttl: 900), upstream: nil, now: clock.now, use: .one(0))
        clock.advance(seconds: 2)
        #expect(
            cache.insert(host: "a.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(7)) == 1)
        #expect(cache.peek(host: "short.example", family: .ipv4) == nil, "past its TTL: fair game")
        #expect(
            cache.insert(host: "b.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(7)) == 1)
        #expect(cache.peek(host: "prefetched.example", family: .ipv4) == nil, "nobody used it")
        #expect(Self.isCached(cache, "long.example", now: clock.now))
    }

    /// With every slot held by other users' fresh entries, an answer is not cached at all (its
    /// callers still get it from the flight); the daemon's own answers evict only nobody's.
    @Test func withNoFairRoomAnAnswerIsNotCached() {
        let clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(capacity: 2))
        cache.insert(host: "one.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(1))
        cache.insert(host: "two.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .several)
        #expect(
            cache.insert(host: "x.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(2)) == 0)
        #expect(cache.insert(host: "y.example", parts: Self.positive(), upstream: nil, now: clock.now) == 0)
        #expect(cache.entryCount == 2)
        #expect(
            Self.isCached(cache, "one.example", now: clock.now) && Self.isCached(cache, "two.example", now: clock.now))
        // A uid's own entry is its to replace.
        #expect(
            cache.insert(host: "z.example", parts: Self.positive(), upstream: nil, now: clock.now, use: .one(1)) == 1)
        #expect(!Self.isCached(cache, "one.example", now: clock.now))
    }

    /// Each family lives for its own TTL: a name with only an A record keeps its IPv4 answer for
    /// 300 s while its "no IPv6" entry expires after the negative TTL, and then only IPv6 is
    /// missing.
    @Test func eachFamilyHasItsOwnTTL() {
        var clock = CacheManualClock()
        let cache = DNSCache(limits: DNSCacheLimits(negativeTTL: 30))
        let answer = UpstreamAnswer(ipv4: [IPAddress("203.0.113.1")!], ttl: 300)
        cache.insert(
            host: "v4only.example", parts: IPFamily.allCases.map { CachePart(answer, family: $0) }, upstream: nil,
            now: clock.now)
        guard
            case .fresh(let entries, let ttlLeft) = cache.answer(
                host: "v4only.example", families: [.ipv4, .ipv6], now: clock.now, allowStale: true)
        else {
            Issue.record("both families are cached")
            return
        }
        #expect(ttlLeft == 30)
        #expect(entries.map { clock.now.secondsRoundedUp(until: $0.expiresAt) } == [300, 30])
        #expect(entries[1].negative && !entries[1].noSuchName)
        clock.advance(seconds: 30)
        guard
            case .partial(let kept, let missing) = cache.answer(
                host: "v4only.example", families: [.ipv4, .ipv6], now: clock.now, allowStale: true)
        else {
            Issue.record("the IPv4 answer outlives the negative IPv6 one")
            return
        }
        #expect(kept.map(\.family) == [.ipv4] && missing == .ipv6)
    }

    /// NXDOMAIN and NODATA are told apart in the cache and across a save and restore.
    @Test func noSuchNameIsKeptApartFromNoData() {
        let clock = CacheManualClock()
        let cache = DNSCache()
        let gone = UpstreamAnswer(ttl: 60, nameExists: false)
        cache.insert(host: "gone.example", parts: [CachePart(gone, family: .ipv4)], upstream: nil, now: clock.now)
        cache.insert(
            host: "nodata.example", parts: [CachePart(family: .ipv4, addresses: [], ttl: 60)], upstream: nil,
            now: clock.now)
        #expect(cache.peek(host: "gone.example", family: .ipv4)?.noSuchName == true)
        #expect(cache.peek(host: "nodata.example", family: .ipv4)?.noSuchName == false)
        let saved = cache.snapshot(now: clock.now, wallNow: clock.wallNow)
        #expect(saved.first { $0.host == "gone.example" }?.noSuchName == true)
        let restored = DNSCache()
        restored.restore(saved, now: clock.now, wallNow: clock.wallNow)
        #expect(restored.peek(host: "gone.example", family: .ipv4)?.noSuchName == true)
        #expect(restored.peek(host: "nodata.example", family: .ipv4)?.noSuchName == false)
    }
}

/// Each uid's rate of new upstream queries.
struct UpstreamQueryRateTests {
    /// A burst, then one query per 1/rate second, with the wait until the next told exactly.
    @Test func aBurstThenTheRate() {
        var clock = CacheManualClock()
        var rate = UpstreamQueryRate(perSecond: 10, burst: 5)
        for _ in 0..<5 { #expect(rate.take(uid: 1, now: clock.now) == nil) }
        #expect(rate.take(uid: 1, now: clock.now) == 100)
        #expect(rate.take(uid: 2, now: clock.now) == nil, "another uid has its own bucket")
        clock.advance(milliseconds: 60)
        #expect(rate.take(uid: 1, now: clock.now) == 40)
        clock.advance(milliseconds: 40)
        #expect(rate.take(uid: 1, now: clock.now) == nil)
        #expect(rate.take(uid: 1, now: clock.now) == 100)
        rate.refund(uid: 1)
        #expect(rate.take(uid: 1, now: clock.now) == nil)
        clock.advance(seconds: 60)
        for _ in 0..<5 { #expect(rate.take(uid: 1, now: clock.now) == nil) }
        #expect(rate.take(uid: 1, now: clock.now) != nil, "refilled to its burst, no more")
    }

    /// Buckets of uids that have refilled are forgotten: memory stays bounded however many uids
    /// come by.
    @Test func refilledBucketsAreForgotten() {
        var clock = CacheManualClock()
        var rate = UpstreamQueryRate(perSecond: 1, burst: 1)
        for uid in 0..<5_000 {
            #expect(rate.take(uid: UInt32(uid), now: clock.now) == nil)
            clock.advance(milliseconds: 2)
        }
        #expect(rate.trackedUsers <= 1_024)
    }
}
