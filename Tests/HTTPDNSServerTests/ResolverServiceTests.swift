import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// The resolver service in-process on a manual clock (`ResolverHarness`): what the interpreter
/// adds to the machine, which the Core replay scenarios (Tests/HTTPDNSCoreTests/Resources/replay)
/// test on their own: replies through the loop, latency by the loop's clock, the loop's timers
/// for callers and prefetch, batch exchanges through the transport, and the service's flush and
/// reverse.
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
