import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// The resolver in-process on a manual clock (`ResolverHarness`): flights and coalescing,
/// deadlines and per-caller timeouts, failover and health, stale answers, the cache's TTL rules,
/// prefetch timing and the per-uid caps, each at the exact instant it should happen.
@Suite struct ResolverServiceTests {
    static let two = "Upstream=alibaba http://127.0.0.1:9/first\nUpstream=tencent http://127.0.0.1:9/second\n"
    static let one = "Upstream=alibaba http://127.0.0.1:9/only\n"

    // MARK: flights

    /// Concurrent resolves of one name share one upstream exchange, whose answer each gets; the
    /// next one is a cache hit.
    @Test func concurrentResolvesShareOneExchange() throws {
        let harness = try ResolverHarness(Self.one)
        let calls = (0..<8).map { harness.resolve("a.example.com", uid: UInt32($0)) }
        #expect(harness.transport.exchanges.count == 1)
        let exchange = try #require(harness.transport.pending("a.example.com"))
        #expect(exchange.request.family == .both)
        #expect(exchange.request.timeoutMs == 2_000)
        harness.advance(milliseconds: 40)
        exchange.answer(v4: ["203.0.113.10"], v6: ["2001:db8::10"], ttl: 120)
        for call in calls {
            #expect(call.result?.ipv4 == ["203.0.113.10"])
            #expect(call.result?.source == .upstream)
            #expect(call.result?.upstream == "alibaba")
            #expect(call.result?.ttl == 120)
        }
        let cached = harness.resolve("a.example.com")
        #expect(cached.result?.source == .cache)
        #expect(cached.result?.ttl == 120)
        #expect(harness.transport.exchanges.count == 1)
        #expect(harness.upstreams["alibaba"]?.latencyMs == 40)
        #expect(harness.service.isQuiescent)
    }

    /// A cache hit answers as the upstream did, less the time gone: both families, each
    /// family's TTL, and the upstream's name; a name that does not exist is answered from the
    /// cache too, with its reason.
    @Test func aCacheHitAnswersWhatTheUpstreamSaid() throws {
        let harness = try ResolverHarness(Self.one)
        harness.resolve("a.example.com")
        try #require(harness.transport.pending("a.example.com")).answer(
            v4: ["203.0.113.10", "203.0.113.11"], v6: ["2001:db8::10"], ttl: 120)
        harness.resolve("gone.example.com")
        try #require(harness.transport.pending("gone.example.com")).answer(nameExists: false)
        harness.advance(seconds: 5)

        let hit = try #require(harness.resolve("a.example.com").result)
        #expect(hit.source == .cache && hit.upstream == "alibaba" && !hit.stale)
        #expect(hit.ipv4 == ["203.0.113.10", "203.0.113.11"] && hit.ipv6 == ["2001:db8::10"])
        #expect(hit.ttl == 115 && hit.ttls == ResolveResult.FamilyTTLs(ipv4: 115, ipv6: 115))
        let v6 = try #require(harness.resolve("a.example.com", family: .ipv6).result)
        #expect(v6.ipv4.isEmpty && v6.ipv6 == ["2001:db8::10"] && v6.ttls == nil && v6.upstream == "alibaba")

        let gone = harness.resolve("gone.example.com")
        #expect(
            gone.error?.code == .hostNotFound && gone.reason == "no-such-name", "\(String(describing: gone.outcome))")
        #expect(harness.transport.exchanges.count == 2)
        #expect(harness.cache.hits == 3)
    }

    /// A name with A records and no AAAA: a hit's `ttl` is the A records', `ttls` has each
    /// family's; once the negative AAAA entry is dead, the next request counts one miss, drops
    /// that entry and asks only for AAAA, answering with the A records it still has.
    @Test func aHitWithOneFamilyNegativeThenPartiallyGone() throws {
        let harness = try ResolverHarness(Self.one)
        harness.resolve("v4only.example.com")
        try #require(harness.transport.pending("v4only.example.com")).answer(v4: ["203.0.113.50"], ttl: 300)
        harness.advance(seconds: 5)
        let hit = try #require(harness.resolve("v4only.example.com").result)
        #expect(hit.ttl == 295 && hit.ttls == ResolveResult.FamilyTTLs(ipv4: 295, ipv6: 25) && hit.ipv6.isEmpty)
        #expect(harness.cache.entries == 2 && harness.cache.hits == 1)

        harness.advance(seconds: 26)
        let misses = harness.cache.misses
        let partial = harness.resolve("v4only.example.com")
        #expect(harness.cache.misses == misses + 1 && harness.cache.hits == 1)
        #expect(harness.cache.entries == 1, "the dead AAAA entry went")
        let asked = try #require(harness.transport.pending("v4only.example.com"))
        #expect(asked.request.family == .ipv6)
        asked.answer(v6: ["2001:db8::50"], ttl: 60)
        #expect(partial.result?.ipv4 == ["203.0.113.50"] && partial.result?.ipv6 == ["2001:db8::50"])
        #expect(partial.result?.ttls == ResolveResult.FamilyTTLs(ipv4: 269, ipv6: 60))
    }

    /// A hit by another uid makes the entry that uid's too: the uid that inserted it cannot
    /// evict it with its own names once it is shared.
    @Test func aCacheHitSharesTheEntry() throws {
        let harness = try ResolverHarness(Self.one + "CacheSize=2\n")
        harness.resolve("shared.example.com", family: .ipv4, uid: 1000)
        try #require(harness.transport.pending("shared.example.com")).answer(v4: ["203.0.113.30"])
        #expect(harness.resolve("shared.example.com", family: .ipv4, uid: 1001).result?.source == .cache)
        for index in 0..<4 {
            harness.advance(seconds: 1)
            harness.resolve("own\(index).example.com", family: .ipv4, uid: 1000)
            try #require(harness.transport.pending("own\(index).example.com")).answer(v4: ["203.0.113.4\(index)"])
        }
        #expect(harness.resolve("shared.example.com", family: .ipv4, uid: 1001).result?.source == .cache)
    }

    /// A caller's own `timeoutMs` ends its wait at that instant with -32002; the exchange ends
    /// at that deadline too and says nothing about the upstream.
    @Test func aCallersTimeoutEndsItsWaitAndLeavesTheUpstreamHealthy() throws {
        let harness = try ResolverHarness(Self.two)
        let hurried = harness.resolve("a.example.com", timeoutMs: 10)
        let exchange = try #require(harness.transport.pending("a.example.com"))
        #expect(exchange.request.timeoutMs == 10, "cut at the only caller's deadline")
        harness.advance(milliseconds: 9)
        #expect(!hurried.isAnswered)
        harness.advance(milliseconds: 1)
        #expect(hurried.error?.code == .resolutionUnavailable)
        #expect(hurried.reason == "timed out after 10 ms")
        exchange.fail(.timeout)
        #expect(harness.upstreams["alibaba"]?.healthy == true)
        #expect(harness.upstreams["alibaba"]?.lastError == nil)
        #expect(harness.transport.exchanges.count == 1, "abandoned: no other upstream was asked")
        harness.resolve("b.example.com")
        #expect(harness.transport.pending("b.example.com")?.upstream == "alibaba")
    }

    /// Two callers share one exchange: the one in a hurry gets its timeout, the patient one the
    /// answer. The exchange cut at the first deadline is asked again for the second.
    @Test func aCoalescedQueryKeepsItsLongestWaitersDeadline() throws {
        let harness = try ResolverHarness(Self.one + "Timeout=3s\n")
        let hurried = harness.resolve("a.example.com", timeoutMs: 150)
        let patient = harness.resolve("a.example.com", timeoutMs: 3_000)
        let first = try #require(harness.transport.pending("a.example.com"))
        #expect(first.request.timeoutMs == 150)
        harness.advance(milliseconds: 150)
        #expect(hurried.reason == "timed out after 150 ms")
        #expect(!patient.isAnswered)
        first.fail(.timeout)
        let again = try #require(harness.transport.pending("a.example.com"))
        #expect(again.request.timeoutMs == 2_850)
        harness.advance(milliseconds: 350)
        again.answer(v4: ["203.0.113.1"])
        #expect(patient.result?.ipv4 == ["203.0.113.1"])
        #expect(patient.result?.source == .upstream)
        #expect(harness.upstreams["alibaba"]?.healthy == true)
    }

    /// A caller that joins a running exchange after the first caller's deadline is near gets a
    /// flight of its own rather than one about to be given up.
    @Test func aFlightAboutToEndTakesNoNewCallers() throws {
        let harness = try ResolverHarness(Self.one)
        harness.resolve("a.example.com", timeoutMs: 100)
        harness.advance(milliseconds: 99)
        let late = harness.resolve("a.example.com", timeoutMs: 1_000)
        #expect(harness.transport.exchanges(for: "a.example.com").count == 2)
        harness.transport.exchanges(for: "a.example.com")[1].answer(v4: ["203.0.113.2"])
        #expect(late.result?.ipv4 == ["203.0.113.2"])
    }

    // MARK: failover and health

    /// Each upstream gets its fair share of `Timeout=`; a failure fails over at once, counts
    /// against the upstream, and the failed one is skipped for its backoff, then tried again.
    @Test func failoverHealthAndBackoff() throws {
        let harness = try ResolverHarness(Self.two)
        let first = harness.resolve("a.example.com")
        let broken = try #require(harness.transport.pending("a.example.com"))
        #expect(broken.upstream == "alibaba")
        #expect(broken.request.timeoutMs == 1_000, "half of Timeout=2s")
        broken.fail(.httpStatus(500))
        let next = try #require(harness.transport.pending("a.example.com"))
        #expect(next.upstream == "tencent")
        #expect(next.request.timeoutMs == 2_000, "the last upstream gets what is left")
        next.answer(v4: ["203.0.113.10"])
        #expect(first.result?.upstream == "tencent")
        #expect(harness.upstreams["alibaba"]?.healthy == false)
        #expect(harness.upstreams["alibaba"]?.lastError == "HTTP status 500")
        #expect(harness.upstreams["tencent"]?.healthy == true)

        harness.resolve("b.example.com")
        #expect(harness.transport.pending("b.example.com")?.upstream == "tencent", "skipped during its backoff")
        harness.transport.pending("b.example.com")?.answer(v4: ["203.0.113.11"])
        harness.advance(milliseconds: 1_000)
        harness.resolve("c.example.com")
        #expect(harness.transport.pending("c.example.com")?.upstream == "alibaba", "tried again after 1 s")
    }

    /// An upstream that hangs for its whole share fails over within one `Timeout=`.
    @Test func aHangingUpstreamFailsOverWithinItsShare() throws {
        let harness = try ResolverHarness(Self.two)
        let call = harness.resolve("a.example.com")
        harness.advance(milliseconds: 1_000)
        try #require(harness.transport.pending("a.example.com")).fail(.timeout)
        let second = try #require(harness.transport.pending("a.example.com"))
        #expect(second.upstream == "tencent")
        #expect(second.request.timeoutMs == 1_000)
        second.answer(v4: ["203.0.113.70"])
        #expect(call.result?.upstream == "tencent")
    }

    /// Why a resolve failed reaches `data.reason`: the upstream and its error.
    @Test func theFailureReasonNamesTheUpstream() throws {
        let harness = try ResolverHarness(Self.one)
        let call = harness.resolve("broken.example.com")
        harness.transport.pending("broken.example.com")?.fail(.httpStatus(500))
        #expect(call.reason == "alibaba: HTTP status 500")
        #expect(harness.log.lines.contains { $0.contains("Upstream alibaba failed for broken.example.com") })
    }

    // MARK: stale answers

    /// An expired answer is served stale (ttl 0) and refreshed once in the background.
    @Test func staleAnswersAreServedAndRefreshedOnce() throws {
        let harness = try ResolverHarness(Self.one)
        harness.resolve("short.example.com")
        harness.transport.pending("short.example.com")?.answer(v4: ["203.0.113.20"], ttl: 1)
        harness.advance(milliseconds: 1_000)
        let stale = harness.resolve("short.example.com")
        #expect(stale.result?.stale == true)
        #expect(stale.result?.ttl == 0)
        #expect(stale.result?.ipv4 == ["203.0.113.20"])
        let again = harness.resolve("short.example.com")
        #expect(again.result?.stale == true)
        #expect(harness.transport.exchanges.count == 2, "one refresh")
        #expect(harness.cache.staleServed == 2)
        harness.transport.pending("short.example.com")?.answer(v4: ["203.0.113.21"], ttl: 60)
        #expect(harness.resolve("short.example.com").result?.ipv4 == ["203.0.113.21"])
    }

    /// Two names handed out for one address (a load balancer) make it ambiguous for cookie
    /// normalization; flushing one name makes every uid forget it for that address too, and a
    /// flush of everything forgets every name.
    @Test func flushingANameForgetsItsAddressesForEveryUid() throws {
        let harness = try ResolverHarness(Self.one)
        for (host, uid) in [("a.example.com", 1000), ("b.example.com", 1000), ("a.example.com", 1001)] {
            harness.resolve(host, family: .ipv4, uid: UInt32(uid))
            harness.transport.pending(host)?.answer(v4: ["203.0.113.5"])
        }
        let address = ReverseParams(address: "203.0.113.5")
        #expect(try harness.service.reverse(address, uid: 1000).hosts == ["b.example.com", "a.example.com"])
        #expect(try harness.service.flushCache(FlushCacheParams(host: "A.example.com"), uid: 0).flushed >= 1)
        #expect(try harness.service.reverse(address, uid: 1000).hosts == ["b.example.com"])
        #expect(throws: RPCError.self) { try harness.service.reverse(address, uid: 1001) }
        _ = try harness.service.flushCache(FlushCacheParams(host: nil), uid: 0)
        #expect(throws: RPCError.self) { try harness.service.reverse(address, uid: 1000) }
    }

    /// With `staleAfterMs` (RFC 8767's client response timer, what the NSS module asks), an
    /// expired answer waits for its refresh: a healthy upstream's new address comes back, not the
    /// old one; a refresh that does not answer in time leaves the stale answer, served when the
    /// timer ends, and the refresh goes on for the next caller.
    @Test func staleAfterMsWaitsForTheRefreshFirst() throws {
        let harness = try ResolverHarness(Self.one)
        harness.resolve("moved.example.com", family: .ipv4)
        harness.transport.pending("moved.example.com")?.answer(v4: ["203.0.113.30"], ttl: 1)
        harness.advance(milliseconds: 1_500)
        let waiting = harness.resolve("moved.example.com", family: .ipv4, staleAfterMs: 500)
        #expect(!waiting.isAnswered, "it waits for the refresh")
        harness.transport.pending("moved.example.com")?.answer(v4: ["203.0.113.31"], ttl: 1)
        #expect(waiting.result?.ipv4 == ["203.0.113.31"] && waiting.result?.stale == false)

        harness.advance(milliseconds: 1_500)
        let timed = harness.resolve("moved.example.com", family: .ipv4, staleAfterMs: 500)
        harness.advance(milliseconds: 499)
        #expect(!timed.isAnswered)
        harness.advance(milliseconds: 1)
        #expect(timed.result?.ipv4 == ["203.0.113.31"] && timed.result?.stale == true, "stale once the timer ended")
        let refresh = try #require(harness.transport.pending("moved.example.com"), "the refresh goes on")
        refresh.answer(v4: ["203.0.113.32"], ttl: 60)
        #expect(harness.resolve("moved.example.com", family: .ipv4).result?.ipv4 == ["203.0.113.32"])
    }

    /// A service that refuses the account itself (UnsignedInterfaceDisabled, InvalidAccount,
    /// AccountNotExists) is left alone for an hour: names go to the next upstream of their route
    /// at once, nobody's query is billed and refused again, and status names the code; an hour
    /// on, it is asked again. With no other upstream, -32002 at once.
    @Test(arguments: ["UnsignedInterfaceDisabled", "InvalidAccount", "AccountNotExists"])
    func anAccountRefusalLeavesTheUpstreamAloneForAnHour(_ code: String) throws {
        let harness = try ResolverHarness(
            "Upstream=alibaba http://127.0.0.1:9/100000\nUpstream=doh-json http://127.0.0.1:9/resolve\n")
        let first = harness.resolve("a.example.com", family: .ipv4, uid: 1000)
        try #require(harness.transport.pending("a.example.com")).fail(.serviceError(code: code))
        let fallback = try #require(harness.transport.pending("a.example.com"))
        #expect(fallback.upstream == "doh-json")
        fallback.answer(v4: ["203.0.113.40"])
        #expect(first.result?.upstream == "doh-json")
        #expect(harness.upstreams["alibaba"]?.healthy == false)
        #expect(harness.upstreams["alibaba"]?.lastError == "service error \(code)")
        for index in 0..<5 {
            harness.advance(seconds: 300)
            harness.resolve("n\(index).example.com", family: .ipv4, uid: 2000 + UInt32(index))
            #expect(harness.transport.pending("n\(index).example.com")?.upstream == "doh-json", "\(index)")
            harness.transport.pending("n\(index).example.com")?.fail(.httpStatus(503))
        }
        #expect(harness.transport.exchanges.filter { $0.upstream == "alibaba" }.count == 1)
        harness.advance(seconds: 2_100)
        harness.resolve("later.example.com", family: .ipv4)
        #expect(harness.transport.pending("later.example.com")?.upstream == "alibaba", "asked again after the hour")
    }

    @Test func anAccountRefusalOfTheOnlyUpstreamIsUnavailableAtOnce() throws {
        let harness = try ResolverHarness("Upstream=alibaba http://127.0.0.1:9/100000\n")
        harness.resolve("a.example.com", family: .ipv4)
        try #require(harness.transport.pending("a.example.com")).fail(.serviceError(code: "InvalidAccount"))
        let next = harness.resolve("b.example.com", family: .ipv4)
        #expect(next.error?.code == .resolutionUnavailable)
        #expect(harness.transport.exchanges(for: "b.example.com").isEmpty, "not asked at all")
    }

    /// A `staleAfterMs` caller whose refresh may not start (its user at its query cap) gets the
    /// expired answer at once, as without the timer, not -32003.
    @Test func staleAfterMsServesStaleWhenTheRefreshIsRefused() throws {
        let harness = try ResolverHarness(Self.one + "MaxUpstreamQueriesPerUser=1\n")
        harness.resolve("old.example.com", family: .ipv4, uid: 1000)
        harness.transport.pending("old.example.com")?.answer(v4: ["203.0.113.33"], ttl: 1)
        harness.advance(milliseconds: 1_500)
        harness.resolve("hanging.example.com", family: .ipv4, uid: 1000, timeoutMs: 60_000)
        let stale = harness.resolve("old.example.com", family: .ipv4, uid: 1000, staleAfterMs: 500)
        #expect(
            stale.result?.stale == true && stale.result?.ipv4 == ["203.0.113.33"], "\(String(describing: stale.error))")
    }

    /// One user's callers waiting for one name are capped (256): each caller is a reply in the
    /// turn the query ends, and thousands of them held the loop for seconds. Another user still
    /// joins; callers whose own wait ends leave at no cost and get their fallback.
    @Test func callersOfOneUserWaitingForOneNameAreCapped() throws {
        let harness = try ResolverHarness(Self.one + "Timeout=60s\n")
        let cap = ResolverMachine.maxWaitersPerUser
        let calls = (0..<cap).map { _ in harness.resolve("hot.example.com", family: .ipv4, uid: 3000, timeoutMs: 100) }
        let refused = harness.resolve("hot.example.com", family: .ipv4, uid: 3000, timeoutMs: 100)
        #expect(refused.error?.code == .limitExceeded, "\(String(describing: refused.error))")
        let other = harness.resolve("hot.example.com", family: .ipv4, uid: 2000, timeoutMs: 60_000)
        #expect(!other.isAnswered)
        harness.advance(milliseconds: 100)
        #expect(calls.allSatisfy { $0.error?.code == .resolutionUnavailable })
        #expect(harness.transport.exchanges(for: "hot.example.com").count == 1, "one query for all")
        // Their places are free again: the user joins anew, and the answer reaches who waits.
        let again = harness.resolve("hot.example.com", family: .ipv4, uid: 3000)
        harness.transport.pending("hot.example.com")?.answer(v4: ["203.0.113.34"])
        #expect(again.result?.ipv4 == ["203.0.113.34"] && other.result?.ipv4 == ["203.0.113.34"])
    }

    /// With `allowStale: false` the caller waits for the upstream and fails with it; with stale
    /// allowed, a failed refresh still answers from the expired entry.
    @Test func allowStaleFalseWaitsAndFailsWhenUpstreamsAreDown() throws {
        let harness = try ResolverHarness(Self.one + "Timeout=1s\n")
        harness.resolve("short.example.com")
        harness.transport.pending("short.example.com")?.answer(v4: ["203.0.113.20"], ttl: 1)
        harness.advance(milliseconds: 1_500)
        let strict = harness.resolve("short.example.com", allowStale: false)
        harness.transport.pending("short.example.com")?.fail(.transport("connection refused"))
        #expect(strict.error?.code == .resolutionUnavailable)
        let lenient = harness.resolve("short.example.com", timeoutMs: 100)
        #expect(lenient.result?.stale == true)
    }

    /// A caller that refused stale answers gets -32002 when its wait ends, stale entry or not.
    @Test func aStrictCallersTimeoutIsUnavailableEvenWithAStaleEntry() throws {
        let harness = try ResolverHarness(Self.one + "ServeStale=yes\n")
        harness.resolve("s.example.com")
        harness.transport.pending("s.example.com")?.answer(v4: ["203.0.113.22"], ttl: 1)
        harness.advance(milliseconds: 1_000)
        let strictThenStale = harness.resolve("s.example.com", timeoutMs: 50, allowStale: false)
        harness.advance(milliseconds: 50)
        #expect(strictThenStale.reason == "timed out after 50 ms")
        #expect(harness.transport.pending("s.example.com") != nil)
    }

    // MARK: cache rules

    /// `MinTTL=` raises a short TTL and `MaxTTL=` caps a long one: past the upstream's own 1 s
    /// the raised TTL still holds.
    @Test func minTTLRaisesAndMaxTTLCaps() throws {
        let harness = try ResolverHarness(Self.one + "MinTTL=30s\nMaxTTL=100s\n")
        let short = harness.resolve("short.example.com", family: .ipv4)
        harness.transport.pending("short.example.com")?.answer(v4: ["203.0.113.1"], ttl: 1)
        #expect(short.result?.ttl == 30)
        let long = harness.resolve("long.example.com", family: .ipv4)
        harness.transport.pending("long.example.com")?.answer(v4: ["203.0.113.2"], ttl: 3600)
        #expect(long.result?.ttl == 100)
        harness.advance(milliseconds: 1_200)
        let again = harness.resolve("short.example.com", family: .ipv4)
        #expect(again.result?.source == .cache)
        #expect(again.result?.stale == false)
        #expect(again.result?.ttl == 29)
        harness.advance(seconds: 29)
        #expect(harness.resolve("short.example.com", family: .ipv4).result?.stale == true)
        #expect(harness.transport.exchanges.count == 3)
    }

    /// "No such name" is cached for `NegativeTTL=`, then asked again.
    @Test func negativeAnswersAreCachedForNegativeTTL() throws {
        let harness = try ResolverHarness(Self.one + "NegativeTTL=1s\n")
        let first = harness.resolve("nx.example.com", family: .ipv4)
        harness.transport.pending("nx.example.com")?.answer(nameExists: false)
        #expect(first.error?.code == .hostNotFound)
        #expect(harness.resolve("nx.example.com", family: .ipv4).error?.code == .hostNotFound)
        #expect(harness.transport.exchanges.count == 1)
        harness.advance(milliseconds: 999)
        #expect(harness.resolve("nx.example.com", family: .ipv4).error?.code == .hostNotFound)
        #expect(harness.transport.exchanges.count == 1)
        harness.advance(milliseconds: 1)
        harness.resolve("nx.example.com", family: .ipv4)
        #expect(harness.transport.exchanges.count == 2)
    }

    /// `ServeStale=no`: an expired answer is never served; with the upstream down the caller
    /// gets -32002.
    @Test func serveStaleNoNeverAnswersStale() throws {
        let harness = try ResolverHarness(Self.one + "ServeStale=no\nTimeout=1s\n")
        harness.resolve("s.example.com", family: .ipv4)
        harness.transport.pending("s.example.com")?.answer(v4: ["203.0.113.21"], ttl: 1)
        harness.advance(milliseconds: 1_000)
        let refreshed = harness.resolve("s.example.com", family: .ipv4)
        #expect(!refreshed.isAnswered)
        harness.transport.pending("s.example.com")?.answer(v4: ["203.0.113.21"], ttl: 1)
        #expect(refreshed.result?.stale == false)
        #expect(refreshed.result?.source == .upstream)
        harness.advance(milliseconds: 1_000)
        let down = harness.resolve("s.example.com", family: .ipv4)
        harness.transport.pending("s.example.com")?.fail(.transport("connection refused"))
        #expect(down.error?.code == .resolutionUnavailable)
    }

    /// `MaxStale=` bounds how long past expiry an answer is served while the upstreams fail.
    @Test func maxStaleBoundsServingWhenUpstreamsFail() throws {
        let harness = try ResolverHarness(Self.one + "MaxStale=1s\nTimeout=1s\n")
        harness.resolve("s.example.com", family: .ipv4)
        harness.transport.pending("s.example.com")?.answer(v4: ["203.0.113.22"], ttl: 1)
        harness.advance(milliseconds: 1_300)
        let stale = harness.resolve("s.example.com", family: .ipv4)
        #expect(stale.result?.stale == true)
        harness.transport.pending("s.example.com")?.fail(.transport("connection refused"))
        harness.advance(milliseconds: 700)
        let gone = harness.resolve("s.example.com", family: .ipv4)
        harness.transport.pending("s.example.com")?.fail(.transport("connection refused"))
        #expect(gone.error?.code == .resolutionUnavailable)
    }

    // MARK: caps

    /// Over `MaxUpstreamQueriesPerUser=` or `MaxUpstreamQueries=`, a resolve that needs the
    /// upstream is refused at once; joining a running query costs nothing; cache hits and
    /// other users are not affected.
    @Test func upstreamQueriesAreCappedPerUserAndInTotal() throws {
        let harness = try ResolverHarness(Self.one + "Timeout=60s\nMaxUpstreamQueriesPerUser=2\nMaxUpstreamQueries=3\n")
        harness.resolve("slow1.example.com", uid: 1000, timeoutMs: 60_000)
        harness.resolve("slow2.example.com", uid: 1000, timeoutMs: 60_000)
        let refused = harness.resolve("slow3.example.com", uid: 1000, timeoutMs: 60_000)
        #expect(refused.error?.code == .limitExceeded)
        #expect(refused.error?.data["limit"] == 2)
        let joined = harness.resolve("slow1.example.com", uid: 1000, timeoutMs: 200)
        #expect(!joined.isAnswered)
        harness.resolve("slow4.example.com", uid: 2000, timeoutMs: 60_000)
        let refusedToo = harness.resolve("slow5.example.com", uid: 2000, timeoutMs: 500)
        #expect(refusedToo.error?.data["limit"] == 3)
        #expect(harness.transport.exchanges.count == 3)
        harness.advance(milliseconds: 200)
        #expect(joined.error?.code == .resolutionUnavailable)
        // An answer frees its place at once.
        harness.transport.pending("slow1.example.com")?.answer(v4: ["203.0.113.1"])
        #expect(harness.resolve("fast.example.com", uid: 2000).isAnswered == false)
        #expect(harness.transport.exchanges.count == 4)
    }

    /// One uid's hanging names hold at most its share of the workers: another uid's miss, asked
    /// after all of them, goes out at once.
    @Test func oneUsersHangingNamesLeaveWorkersToOthers() throws {
        let harness = try ResolverHarness(Self.one + "Timeout=6s\n")
        for index in 0..<40 { harness.resolve("slow\(index).example.com", uid: 65534, timeoutMs: 6_000) }
        #expect(harness.transport.exchanges.count == ResolverService.workersPerOwner)
        let root = harness.resolve("fast.example.com", uid: 0)
        let exchange = try #require(harness.transport.pending("fast.example.com"))
        exchange.answer(v4: ["203.0.113.1"])
        #expect(root.result?.ipv4 == ["203.0.113.1"])
        // When one of the flood's exchanges ends, the next of its names takes the worker.
        harness.transport.pending("slow0.example.com")?.answer(v4: ["203.0.113.2"])
        #expect(harness.transport.exchanges.count == ResolverService.workersPerOwner + 2)
    }

    // MARK: prefetch

    /// `Prefetch=` names are resolved at start and each refreshed at 75 % of its TTL, without a
    /// client asking; their answers fill the cache.
    @Test func prefetchResolvesAtStartAndRefreshesBeforeExpiry() throws {
        let harness = try ResolverHarness(
            "Upstream=tencent http://127.0.0.1:9/t\nPrefetch=p1.example.com p2.example.com\n")
        harness.service.startPrefetch()
        #expect(Set(harness.transport.pending.map(\.host)) == ["p1.example.com", "p2.example.com"])
        harness.transport.pending("p1.example.com")?.answer(v4: ["203.0.113.31"], v6: ["2001:db8::31"], ttl: 300)
        harness.transport.pending("p2.example.com")?.answer(v4: ["203.0.113.32"], ttl: 2)
        harness.advance(milliseconds: 1_499)
        #expect(harness.transport.pending.isEmpty)
        harness.advance(milliseconds: 1)
        #expect(harness.transport.pending.map(\.host) == ["p2.example.com"])
        #expect(harness.transport.exchanges(for: "p1.example.com").count == 1)
        let cached = harness.resolve("p1.example.com")
        #expect(cached.result?.source == .cache)
        #expect(cached.result?.ipv6 == ["2001:db8::31"])
        harness.advance(seconds: 224)
        #expect(harness.transport.exchanges(for: "p1.example.com").count == 2)
    }

    /// With an Alibaba upstream first, prefetch asks in batches of at most five names, and
    /// names due together are refreshed together.
    @Test func alibabaPrefetchUsesBatchesOfAtMostFive() throws {
        let hosts = (1...6).map { "b\($0).example.com" }
        let harness = try ResolverHarness(Self.one + "Prefetch=\(hosts.joined(separator: " "))\n")
        harness.service.startPrefetch()
        let batches = harness.transport.batches
        #expect(batches.map(\.request.hosts) == [Array(hosts.prefix(5)), [hosts[5]]])
        var answers: [String: UpstreamAnswer] = [:]
        for host in hosts.prefix(5) { answers[host] = UpstreamAnswer(ipv4: [IPAddress("203.0.113.40")!], ttl: 100) }
        batches[0].completion(.success(answers))
        batches[1].completion(.failure(UpstreamError(.httpStatus(500))))
        // The name the failed batch held goes through the normal path.
        #expect(harness.transport.pending.map(\.host) == ["b6.example.com"])
        #expect(harness.resolve("b1.example.com", family: .ipv4).result?.source == .cache)
        harness.advance(seconds: 75)
        #expect(harness.transport.batches.count == 3)
        #expect(harness.transport.batches.last?.request.hosts == Array(hosts.prefix(5)))
    }
}
