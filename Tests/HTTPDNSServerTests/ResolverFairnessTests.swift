import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSRPC
@testable import HTTPDNSServer

/// Nobody steers what another user resolves (issue 23), in-process on a manual clock: a name's
/// failure is that name's, one uid's failures count once, each uid has a rate of new upstream
/// queries and a fair share of the cache. And each family is cached with its own TTL (issue 24).
@Suite struct ResolverFairnessTests {
    static let two = "Upstream=doh-json http://127.0.0.1:9/primary\nUpstream=tencent http://127.0.0.1:9/second\n"
    static let root: UInt32 = 0
    static let nobody: UInt32 = 65534

    /// Root resolves one name through the primary, so the primary answered recently.
    static func warmUp(_ harness: ResolverHarness) throws {
        let call = harness.resolve("known.example.com", uid: root)
        try #require(harness.transport.pending("known.example.com")).answer(v4: ["203.0.113.1"])
        #expect(call.result?.upstream == "doh-json")
    }

    // MARK: a name's failure is that name's

    /// uid 65534's names SERVFAIL: each of them is asked of the next upstream too (for that name
    /// alone), its caller gets -32002 saying SERVFAIL, and the primary stays healthy: root's
    /// names keep going to it.
    @Test func aServfailFloodNeverMovesThePrimary() throws {
        let harness = try ResolverHarness(Self.two)
        try Self.warmUp(harness)
        for index in 0..<20 {
            let call = harness.resolve("bad\(index).evil.example", family: .ipv4, uid: Self.nobody)
            let first = try #require(harness.transport.pending("bad\(index).evil.example"))
            #expect(first.upstream == "doh-json")
            first.fail(.dnsStatus(2))
            let next = try #require(harness.transport.pending("bad\(index).evil.example"), "per-name degradation")
            #expect(next.upstream == "tencent")
            next.fail(.dnsStatus(2))
            #expect(call.error?.code == .resolutionUnavailable)
            #expect(call.reason == "tencent: DNS error SERVFAIL")
        }
        #expect(harness.upstreams["doh-json"]?.healthy == true)
        #expect(harness.upstreams["doh-json"]?.lastError == nil)
        #expect(harness.upstreams["tencent"]?.healthy == true)
        let rootCall = harness.resolve("bank.example.com", uid: Self.root)
        let exchange = try #require(harness.transport.pending("bank.example.com"))
        #expect(exchange.upstream == "doh-json")
        exchange.answer(v4: ["203.0.113.50"])
        #expect(rootCall.result?.upstream == "doh-json")
        #expect(!harness.log.lines.contains { $0.contains("evil.example") }, "no warning per flooded name")
    }

    /// A zone's owner can also make its names' answers loop (CNAME), run too long, or grow past
    /// what is read: each is that name's failure, never the upstream's.
    @Test(arguments: [UpstreamError.Code.unusableChain("CNAME loop"), .truncated, .responseTooLarge])
    func answersAZoneShapesAreItsNamesFailures(_ code: UpstreamError.Code) throws {
        let harness = try ResolverHarness(Self.two)
        try Self.warmUp(harness)
        for index in 0..<10 {
            let call = harness.resolve("z\(index).evil.example", family: .ipv4, uid: Self.nobody)
            try #require(harness.transport.pending("z\(index).evil.example")).fail(code)
            let next = try #require(harness.transport.pending("z\(index).evil.example"), "per-name degradation")
            #expect(next.upstream == "tencent")
            next.fail(code)
            #expect(call.error?.code == .resolutionUnavailable)
        }
        #expect(harness.upstreams["doh-json"]?.healthy == true)
        #expect(harness.upstreams["doh-json"]?.lastError == nil)
        let rootCall = harness.resolve("bank.example.com", uid: Self.root)
        try #require(harness.transport.pending("bank.example.com")).answer(v4: ["203.0.113.50"])
        #expect(rootCall.result?.upstream == "doh-json")
    }

    /// uid 65534's names hang for the primary's whole share: each time-out has a probe ask the
    /// primary a name it answered recently; it answers, so the time-out was the name's and the
    /// primary stays healthy. One probe at a time, however many names hang.
    @Test func aHangingZoneFloodIsCheckedByAProbeAndMovesNothing() throws {
        let harness = try ResolverHarness(Self.two)
        try Self.warmUp(harness)
        harness.advance(seconds: 5)
        let flood = (0..<10).map { harness.resolve("hang\($0).evil.example", family: .ipv4, uid: Self.nobody) }
        #expect(harness.transport.pending.count == 4, "its share of the workers")
        harness.advance(milliseconds: 1_000)
        for exchange in harness.transport.pending where exchange.upstream == "doh-json" { exchange.fail(.timeout) }
        let probes = harness.transport.pending.filter { $0.host == "known.example.com" }
        #expect(probes.count == 1)
        #expect(probes.first?.upstream == "doh-json")
        #expect(probes.first?.request.timeoutMs == 2_000)
        #expect(harness.upstreams["doh-json"]?.healthy == true)
        probes.first?.answer(v4: ["203.0.113.1"])
        #expect(harness.upstreams["doh-json"]?.healthy == true)
        // Every hanging name is asked of the next upstream too.
        #expect(harness.transport.pending.contains { $0.host == "hang0.evil.example" && $0.upstream == "tencent" })
        let rootCall = harness.resolve("bank.example.com", uid: Self.root)
        try #require(harness.transport.pending("bank.example.com")).answer(v4: ["203.0.113.50"])
        #expect(rootCall.result?.upstream == "doh-json")
        #expect(!flood[0].isAnswered)
    }

    /// When the probe of a recently answered name times out too, the time-out was the
    /// upstream's: it counts, once for each owner whose time-out the probe confirmed.
    @Test func aProbeThatFailsTooConfirmsTheTimeOut() throws {
        let harness = try ResolverHarness(Self.two)
        try Self.warmUp(harness)
        harness.advance(seconds: 1)
        harness.resolve("a.example.com", family: .ipv4, uid: 1000)
        harness.resolve("b.example.com", family: .ipv4, uid: 1001)
        harness.advance(milliseconds: 1_000)
        for exchange in harness.transport.pending { exchange.fail(.timeout) }
        let probe = try #require(harness.transport.pending("known.example.com"))
        #expect(harness.transport.exchanges(for: "known.example.com").count == 2, "one probe for both")
        harness.advance(milliseconds: 2_000)
        probe.fail(.timeout)
        #expect(harness.upstreams["doh-json"]?.healthy == false)
        #expect(harness.upstreams["doh-json"]?.lastError == "timed out")
        // Two owners' time-outs: the second backoff, 2 s.
        harness.resolve("c.example.com", family: .ipv4, uid: Self.root)
        #expect(harness.transport.pending("c.example.com")?.upstream == "tencent")
        harness.transport.pending("c.example.com")?.answer(v4: ["203.0.113.3"])
        harness.advance(milliseconds: 1_999)
        harness.resolve("d.example.com", family: .ipv4, uid: Self.root)
        #expect(harness.transport.pending("d.example.com")?.upstream == "tencent")
        harness.transport.pending("d.example.com")?.answer(v4: ["203.0.113.4"])
        harness.advance(milliseconds: 1)
        harness.resolve("e.example.com", family: .ipv4, uid: Self.root)
        #expect(harness.transport.pending("e.example.com")?.upstream == "doh-json")
    }

    /// A uid whose own name was answered last, and which then makes its zone hang, cannot have
    /// the probe ask that name: the probe asks the newest name answered for someone else. With
    /// only its own names answered recently there is no probe: a failing owner's name vouches
    /// for nobody.
    @Test func theProbeAsksANameSomebodyElseAsked() throws {
        let harness = try ResolverHarness(Self.two)
        try Self.warmUp(harness)
        /// uid 65534 gets `own` answered, then `hanging` times out at the primary.
        func ownNameThenAHang(_ own: String, _ hanging: String) throws {
            harness.resolve(own, family: .ipv4, uid: Self.nobody)
            try #require(harness.transport.pending(own)).answer(v4: ["198.51.100.1"])
            harness.advance(seconds: 1)
            harness.resolve(hanging, family: .ipv4, uid: Self.nobody)
            harness.advance(milliseconds: 1_000)
            try #require(harness.transport.pending(hanging)).fail(.timeout)
        }
        harness.advance(seconds: 1)
        try ownNameThenAHang("mine.evil.example", "hang.evil.example")
        #expect(harness.transport.pending("mine.evil.example") == nil)
        try #require(harness.transport.pending("known.example.com")).answer(v4: ["203.0.113.1"])
        #expect(harness.upstreams["doh-json"]?.healthy == true)

        // Ten minutes on, root's name is too old to vouch, and 65534's own never does.
        harness.advance(seconds: 601)
        try ownNameThenAHang("mine2.evil.example", "hang2.evil.example")
        #expect(harness.transport.pending("known.example.com") == nil)
        #expect(harness.transport.pending("mine2.evil.example") == nil)
        #expect(harness.upstreams["doh-json"]?.healthy == true)
    }

    /// Two (and four) colluding uids whose zones hang: each one's name was answered, then each
    /// makes its zone hang. A probe with a colluder's name would confirm the other's time-out
    /// (20% and 35% of a victim's misses went to the fallback); now only a name of an owner with
    /// no time-out vouches, so the primary stays healthy and the victim's names stay on it.
    @Test(arguments: [2, 4]) func colludingUidsCannotVouchForEachOther(colluders: Int) throws {
        let harness = try ResolverHarness(Self.two)
        let uids = (0..<colluders).map { 3_000 + UInt32($0) }
        for uid in uids {
            harness.resolve("own.z\(uid).example", family: .ipv4, uid: uid)
            try #require(harness.transport.pending("own.z\(uid).example")).answer(v4: ["198.51.100.\(uid % 200)"])
        }
        harness.advance(seconds: 1)
        var victimOnPrimary = 0
        for round in 0..<10 {
            for uid in uids {
                harness.resolve("h\(round).z\(uid).example", family: .ipv4, uid: uid)
                harness.advance(milliseconds: 1_000)
                for exchange in harness.transport.pending
                where exchange.host.hasPrefix("h") && exchange.upstream == "doh-json" {
                    exchange.fail(.timeout)
                }
                for probe in harness.transport.pending where probe.host.hasPrefix("own.") { probe.fail(.timeout) }
            }
            let victim = harness.resolve("v\(round).bank.example", family: .ipv4, uid: 2_000)
            if let exchange = harness.transport.pending("v\(round).bank.example") {
                if exchange.upstream == "doh-json" { victimOnPrimary += 1 }
                exchange.answer(v4: ["203.0.113.\(round + 1)"])
            }
            #expect(victim.isAnswered)
        }
        #expect(victimOnPrimary == 10, "\(10 - victimOnPrimary) of 10 victim misses went to the fallback")
        #expect(harness.upstreams["doh-json"]?.healthy == true)
    }

    /// Two colluders alone, with no other name answered lately: each one's time-out has the
    /// probe ask the other's name, which hangs too, and then there is no name left. Names the
    /// failing users chose confirm nothing (the review confirmed with two such uids): the
    /// primary stays healthy until ten minutes pass without an answer.
    @Test func namesOnlyColludersChoseConfirmNothing() throws {
        let harness = try ResolverHarness(Self.two)
        for uid in [UInt32(3_000), 3_001] {
            harness.resolve("own.z\(uid).example", family: .ipv4, uid: uid)
            try #require(harness.transport.pending("own.z\(uid).example")).answer(v4: ["198.51.100.7"])
        }
        harness.advance(seconds: 1)
        for round in 0..<6 {
            for uid in [UInt32(3_000), 3_001] {
                harness.resolve("h\(round).z\(uid).example", family: .ipv4, uid: uid)
                harness.advance(milliseconds: 1_000)
                for exchange in harness.transport.pending where exchange.upstream == "doh-json" {
                    exchange.fail(.timeout)
                }
                for _ in 0..<3 {
                    for probe in harness.transport.pending where probe.host.hasPrefix("own.") { probe.fail(.timeout) }
                }
            }
            #expect(harness.upstreams["doh-json"]?.healthy == true, "round \(round)")
        }
    }

    /// A real outage on a machine with one user: nobody else's name can vouch, so the
    /// time-outs count once the primary has answered nothing for ten minutes, and names go to
    /// the fallback first from then on.
    @Test func aRealOutageWithOneUserStillFailsOver() throws {
        let harness = try ResolverHarness(Self.two)
        harness.resolve("first.example.com", family: .ipv4, uid: 1_000)
        try #require(harness.transport.pending("first.example.com")).answer(v4: ["203.0.113.1"])
        for minute in 0..<12 {
            harness.advance(seconds: 60)
            harness.resolve("m\(minute).example.com", family: .ipv4, uid: 1_000)
            harness.advance(milliseconds: 1_000)
            harness.transport.pending("m\(minute).example.com")?.fail(.timeout)
            harness.transport.pending("m\(minute).example.com")?.answer(v4: ["203.0.113.2"])
        }
        #expect(harness.upstreams["doh-json"]?.healthy == false, "ten minutes of time-outs and no answer")
        #expect(harness.upstreams["doh-json"]?.lastError == "timed out")
    }

    /// Without a name the upstream answered recently there is nothing to probe with: a time-out
    /// is no verdict at all.
    @Test func withoutARecentAnswerATimeOutIsNoVerdict() throws {
        let harness = try ResolverHarness(Self.two)
        harness.resolve("a.example.com", family: .ipv4, uid: Self.nobody)
        harness.advance(milliseconds: 1_000)
        try #require(harness.transport.pending("a.example.com")).fail(.timeout)
        #expect(harness.transport.pending.map(\.upstream) == ["tencent"])
        #expect(harness.upstreams["doh-json"]?.healthy == true)
    }

    /// Upstream failures a uid causes count once, however many: its errors give the primary one
    /// second of backoff, never more, and root's names go back to it after that second.
    @Test func oneUsersFailuresCountOnce() throws {
        let harness = try ResolverHarness(Self.two)
        for index in 0..<30 {
            harness.resolve("e\(index).evil.example", family: .ipv4, uid: Self.nobody)
            harness.transport.pending("e\(index).evil.example")?.fail(.httpStatus(502))
            harness.transport.pending("e\(index).evil.example")?.answer(v4: ["198.51.100.1"])
        }
        #expect(harness.upstreams["doh-json"]?.healthy == false)
        #expect(harness.upstreams["doh-json"]?.lastError == "HTTP status 502")
        harness.advance(milliseconds: 1_000)
        let rootCall = harness.resolve("bank.example.com", uid: Self.root)
        try #require(harness.transport.pending("bank.example.com")).answer(v4: ["203.0.113.50"])
        #expect(rootCall.result?.upstream == "doh-json")
        #expect(harness.upstreams["doh-json"]?.healthy == true)
    }

    // MARK: fair shares

    /// Each uid's new upstream queries are bounded by its rate: past the burst a resolve that
    /// needs one is -32003 with the milliseconds until the next is allowed; joining a running
    /// query, cache hits and other uids are not charged.
    @Test func theRateRefusesPastTheBurstWithRetryAfter() throws {
        let harness = try ResolverHarness(Self.two + "UpstreamQueryRatePerUser=2\nUpstreamQueryBurstPerUser=3\n")
        for index in 0..<3 { harness.resolve("n\(index).example.com", uid: Self.nobody) }
        let refused = harness.resolve("n3.example.com", uid: Self.nobody)
        #expect(refused.error?.code == .limitExceeded)
        #expect(refused.error?.data["retryAfterMs"] == 500)
        #expect(refused.error?.data["limit"] == 2)
        #expect(!harness.resolve("n0.example.com", uid: Self.nobody).isAnswered, "joined the running query")
        #expect(!harness.resolve("other.example.com", uid: Self.root).isAnswered, "root has its own rate")
        harness.transport.pending("n0.example.com")?.answer(v4: ["203.0.113.9"])
        #expect(harness.resolve("n0.example.com", uid: Self.nobody).result?.source == .cache)
        harness.advance(milliseconds: 499)
        #expect(harness.resolve("n3.example.com", uid: Self.nobody).error?.data["retryAfterMs"] == 1)
        harness.advance(milliseconds: 1)
        #expect(!harness.resolve("n3.example.com", uid: Self.nobody).isAnswered)
        #expect(harness.transport.exchanges(for: "n3.example.com").count == 1)
    }

    /// Subordinate uids of one user share that user's rate (the account of `CallContext`), and
    /// each keeps its own address memory: a hundred uids of one person get one person's queries.
    @Test func subordinateUidsShareTheirOwnersRate() throws {
        let harness = try ResolverHarness(Self.two + "UpstreamQueryRatePerUser=2\nUpstreamQueryBurstPerUser=3\n")
        for index in 0..<3 { harness.resolve("s\(index).example.com", uid: 100_000 + UInt32(index), account: 1000) }
        let refused = harness.resolve("s3.example.com", uid: 100_003, account: 1000)
        #expect(refused.error?.code == .limitExceeded, "the fourth subordinate uid is past its owner's burst")
        #expect(!harness.resolve("s4.example.com", uid: 2000).isAnswered, "another user has its own rate")
        harness.transport.pending("s0.example.com")?.answer(v4: ["203.0.113.20"])
        #expect(harness.resolve("s0.example.com", uid: 100_000, account: 1000).result?.source == .cache)
        #expect(throws: RPCError.self, "another subordinate uid's memory does not hold the answer") {
            try harness.service.reverse(ReverseParams(address: "203.0.113.20"), uid: 100_001)
        }
        #expect(
            try harness.service.reverse(ReverseParams(address: "203.0.113.20"), uid: 100_000).hosts == [
                "s0.example.com"
            ])
    }

    /// uid 65534 resolves distinct names as fast as it can: it gets -32003 past its rate, and
    /// the names it does resolve evict only its own entries: root's hot name stays cached.
    @Test func aDistinctNameFloodLeavesAnotherUsersHotNameCached() throws {
        let harness = try ResolverHarness(
            "Upstream=alibaba http://127.0.0.1:9/1\nCacheSize=8\nUpstreamQueryBurstPerUser=30\n")
        let hot = harness.resolve("hot.example.com", family: .ipv4, uid: Self.root)
        harness.transport.pending("hot.example.com")?.answer(v4: ["203.0.113.80"])
        #expect(hot.result?.source == .upstream)
        var refused: [ResolveCall] = []
        for index in 0..<40 {
            harness.advance(milliseconds: 1)
            let call = harness.resolve("flood\(index).example.com", family: .ipv4, uid: Self.nobody)
            harness.transport.pending("flood\(index).example.com")?.answer(v4: ["198.51.100.7"])
            if call.error != nil { refused.append(call) }
            #expect(harness.resolve("hot.example.com", family: .ipv4, uid: Self.root).result?.source == .cache)
        }
        #expect(refused.count == 10)
        #expect(refused.allSatisfy { $0.error?.code == .limitExceeded && $0.error?.data["retryAfterMs"] != nil })
        #expect(harness.cache.entries <= 8)
    }

    // MARK: per-family answers

    /// A name with only an A record (TTL 300): the dual answer says `ttl` 300 (its addresses'
    /// TTL; the negative IPv6 part does not shorten it) and `ttls` for each; after 30 s only IPv6
    /// is asked again, and the IPv4 answer keeps its own TTL. `family: ipv6` is -32001 `no-data`, a missing name `no-such-name`.
    @Test func eachFamilyIsCachedWithItsOwnTTL() throws {
        let harness = try ResolverHarness(Self.two)
        let first = harness.resolve("v4only.example.com")
        let exchange = try #require(harness.transport.pending("v4only.example.com"))
        #expect(exchange.request.family == .both)
        exchange.answer(v4: ["203.0.113.62"], ttl: 300)
        #expect(first.result?.ttl == 300)
        #expect(first.result?.ttls == ResolveResult.FamilyTTLs(ipv4: 300, ipv6: 30))
        let noData = harness.resolve("v4only.example.com", family: .ipv6)
        #expect(noData.error?.code == .hostNotFound)
        #expect(noData.reason == "no-data")
        #expect(harness.resolve("v4only.example.com", family: .ipv4).result?.ttls == nil)

        harness.advance(seconds: 30)
        let later = harness.resolve("v4only.example.com")
        let again = try #require(harness.transport.pending("v4only.example.com"))
        #expect(again.request.family == .ipv6, "only the expired family is asked")
        again.answer(ttl: 300)
        #expect(later.result?.ipv4 == ["203.0.113.62"])
        #expect(later.result?.ttls == ResolveResult.FamilyTTLs(ipv4: 270, ipv6: 30))
        #expect(later.result?.ttl == 270)
        #expect(later.result?.source == .upstream)
        #expect(harness.transport.exchanges.count == 2)

        let gone = harness.resolve("gone.example.com", family: .ipv6)
        harness.transport.pending("gone.example.com")?.answer(nameExists: false)
        #expect(gone.reason == "no-such-name")
        #expect(harness.resolve("gone.example.com", family: .ipv6).reason == "no-such-name", "from the cache too")
    }

    /// An answer the upstream's kind does not define is its failure: a malformed answer counts
    /// against it like a transport error (the codecs decide what is malformed).
    @Test func aMalformedAnswerCountsAgainstTheUpstream() throws {
        let harness = try ResolverHarness(Self.two)
        let call = harness.resolve("a.example.com", uid: Self.root)
        harness.transport.pending("a.example.com")?.fail(.malformed(#"the answer has neither "ips" nor "ipsv6""#))
        harness.transport.pending("a.example.com")?.answer(v4: ["203.0.113.1"])
        #expect(call.result?.upstream == "tencent")
        #expect(harness.upstreams["doh-json"]?.healthy == false)
        #expect(harness.upstreams["doh-json"]?.lastError?.hasPrefix("malformed answer") == true)
    }
}
