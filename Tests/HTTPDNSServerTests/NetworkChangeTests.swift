import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// `OnNetworkChange=` in-process: the resolver service on a manual clock, kernel events handed to
/// the network service as its watcher would, upstreams answered by hand.
struct NetworkChangeTests {
    static let upstream = "Upstream=alibaba http://127.0.0.1:9/100000\n"
    static let newAddress = NetworkEvent.address(
        NetworkAddress(interface: 1, family: .ipv4, bytes: [10, 9, 9, 9], prefixLength: 32), added: true,
        listed: false)

    /// A harness with a cached answer for a.example.com (both families, TTL 300).
    static func cached(_ lines: String) throws -> (ResolverHarness, NetworkChangeService) {
        let harness = try ResolverHarness(upstream + lines)
        let configuration = try DaemonConfiguration.parse(text: "[Resolver]\n" + upstream + lines, path: "t").get().0
        let log = harness.log
        let network = NetworkChangeService(
            policy: configuration.resolver.onNetworkChange, resolver: harness.service, loop: harness.loop,
            logger: Logger(threshold: .debug, rateLimiter: nil) { _, line in log.append(line) })
        harness.resolve("a.example.com")
        harness.transport.pending("a.example.com")?.answer(v4: ["192.0.2.1"], v6: ["2001:db8::1"])
        #expect(harness.resolve("a.example.com").result?.source == .cache)
        #expect(harness.transport.exchanges.count == 1)
        return (harness, network)
    }

    /// Hands `events` over and lets the burst end.
    static func change(_ network: NetworkChangeService, _ harness: ResolverHarness, _ events: [NetworkEvent]) {
        network.received(events)
        harness.advance(milliseconds: Int64(NetworkChangeMachine.quietMilliseconds))
    }

    static func changeLines(_ harness: ResolverHarness) -> [String] {
        harness.log.lines.filter { $0.hasPrefix("Network changed") }
    }

    @Test func refreshServesTheAnswerAndAsksAgainAtItsNextUse() throws {
        let (harness, network) = try Self.cached("")
        Self.change(network, harness, [Self.newAddress, Self.newAddress])
        #expect(
            Self.changeLines(harness) == [
                "Network changed: 1 address added (+10.9.9.9/32); 2 cached answer(s) marked for refresh"
            ])
        #expect(harness.transport.exchanges.count == 1, "marking asks nothing by itself")
        // The next use is answered at once from the cache, and asks again behind it.
        let next = harness.resolve("a.example.com")
        #expect(next.result?.source == .cache && next.result?.ipv4 == ["192.0.2.1"])
        let refresh = try #require(harness.transport.pending("a.example.com"))
        #expect(refresh.request.family == .both)
        refresh.answer(v4: ["198.51.100.1"], v6: ["2001:db8::2"])
        // The new answer is not marked: it is used without asking again.
        let after = harness.resolve("a.example.com")
        #expect(after.result?.source == .cache && after.result?.ipv4 == ["198.51.100.1"])
        #expect(harness.transport.exchanges.count == 2)
        #expect(network.changes == 1 && network.lastChangeUnix != nil)
    }

    @Test func flushDropsTheAnswers() throws {
        let (harness, network) = try Self.cached("OnNetworkChange=flush\n")
        Self.change(network, harness, [Self.newAddress])
        #expect(Self.changeLines(harness).first?.hasSuffix("; 2 cached answer(s) flushed") == true)
        #expect(harness.cache.entries == 0)
        let next = harness.resolve("a.example.com")
        #expect(!next.isAnswered, "a flushed name waits for its upstream")
        harness.transport.pending("a.example.com")?.answer(v4: ["198.51.100.1"])
        #expect(next.result?.source == .upstream)
    }

    @Test func ignoreKeepsTheAnswersAndReloadChangesThePolicy() throws {
        let (harness, network) = try Self.cached("OnNetworkChange=ignore\n")
        Self.change(network, harness, [Self.newAddress])
        #expect(
            Self.changeLines(harness) == [
                "Network changed: 1 address added (+10.9.9.9/32); cached answers kept (OnNetworkChange=ignore)"
            ])
        #expect(harness.resolve("a.example.com").result?.source == .cache)
        #expect(harness.transport.exchanges.count == 1)
        // A reload to refresh applies to the next change.
        network.apply(try DaemonConfiguration.parse(text: "[Resolver]\n" + Self.upstream, path: "t").get().0)
        harness.advance(seconds: 5)
        Self.change(network, harness, [.lost])
        _ = harness.resolve("a.example.com")
        #expect(harness.transport.pending("a.example.com") != nil)
        #expect(Self.changeLines(harness).count == 2)
    }

    @Test func staticAnswersAreNeverTouched() throws {
        let (harness, network) = try Self.cached("Static=fixed.example.com 192.0.2.10\nOnNetworkChange=flush\n")
        Self.change(network, harness, [Self.newAddress])
        let fixed = harness.resolve("fixed.example.com")
        #expect(fixed.result?.source == .static && fixed.result?.ipv4 == ["192.0.2.10"])
        #expect(harness.transport.exchanges(for: "fixed.example.com").isEmpty)
    }

    /// An answer asked for on the old network comes marked; Prefetch= names are asked again at once.
    @Test func answersInFlightComeMarkedAndPrefetchedNamesAreAskedAgain() throws {
        let (harness, network) = try Self.cached("Prefetch=p.example.com\n")
        let waiting = harness.resolve("b.example.com")
        Self.change(network, harness, [Self.newAddress])
        #expect(harness.transport.pending("p.example.com") != nil, "the prefetched name is asked at once")
        harness.transport.pending("b.example.com")?.answer(v4: ["192.0.2.2"])
        #expect(waiting.result?.ipv4 == ["192.0.2.2"])
        #expect(harness.resolve("b.example.com").result?.source == .cache)
        #expect(harness.transport.exchanges(for: "b.example.com").count == 2, "the late answer is asked again")
    }

    /// A prefetch batch asked on the old network brings its answers marked too: when the names'
    /// own flights on the new network fail, the batch's answers are served, and their next use
    /// asks again.
    @Test func aBatchInFlightBringsMarkedAnswers() throws {
        let (harness, network) = try Self.cached("Prefetch=b1.example.com b2.example.com\n")
        harness.service.startPrefetch()
        let batch = try #require(harness.transport.batches.first)
        Self.change(network, harness, [Self.newAddress])
        let address = UpstreamAnswer(ipv4: [IPAddress("203.0.113.60")!], ttl: 100)
        batch.completion(.success(["b1.example.com": address, "b2.example.com": address]))
        for host in ["b1.example.com", "b2.example.com"] { harness.transport.pending(host)?.fail(.httpStatus(500)) }
        harness.advance(seconds: 2)
        let asked = harness.transport.exchanges(for: "b1.example.com").count
        let served = harness.resolve("b1.example.com")
        #expect(served.result?.source == .cache && served.result?.ipv4 == ["203.0.113.60"])
        #expect(
            harness.transport.exchanges(for: "b1.example.com").count == asked + 1, "the marked answer is asked again")
    }

    /// A burst of the kernel's messages is logged once, and the next change no sooner than 5 s later.
    @Test func aBurstIsLoggedOnce() throws {
        let (harness, network) = try Self.cached("")
        for _ in 0..<5 {
            network.received([Self.newAddress, .lost])
            harness.advance(milliseconds: 500)
        }
        #expect(Self.changeLines(harness).isEmpty)
        harness.advance(milliseconds: 500)
        #expect(Self.changeLines(harness).count == 1)
        network.received([.lost])
        harness.advance(seconds: 2)
        #expect(Self.changeLines(harness).count == 1)
        harness.advance(seconds: 3)
        #expect(Self.changeLines(harness).count == 2)
    }
}
