import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// Per-domain routing (issue 29), in-process on a manual clock: a name goes to the upstreams of
/// the most specific routed domain it is in, other names to the default route (the system
/// resolver unless `DefaultRoute=` says otherwise), and a routed name falls back only to the
/// upstreams its route lists.
@Suite struct ResolverRoutingTests {
    static let upstreams =
        "Upstream=alibaba http://127.0.0.1:9/1\nUpstream=tencent http://127.0.0.1:9/t\n"
        + "Upstream=doh-json http://127.0.0.1:9/resolve\n"

    /// With only billed upstreams and no route (the README's first configuration before it had
    /// Route=), a `billedRoutesOnly` resolve (the NSS module's) of any name is -32002 not-routed
    /// at once and asks nothing; a plain resolve still goes to the service; a routed name goes
    /// to its route either way, and with a free upstream in the default route nothing changes.
    @Test func billedRoutesOnlyLeavesUnroutedNamesToTheMachine() throws {
        let billed = try ResolverHarness(
            "Upstream=alibaba http://127.0.0.1:9/1\nUpstream=tencent http://127.0.0.1:9/t\n")
        let refused = billed.resolve("mirror.example.test", family: .ipv4, billedRoutesOnly: true)
        #expect(refused.error?.code == .resolutionUnavailable)
        #expect(refused.reason == "not-routed")
        #expect(billed.transport.exchanges.isEmpty, "the billed service was not asked")
        billed.resolve("mirror.example.test", family: .ipv4)
        #expect(billed.transport.pending("mirror.example.test")?.upstream == "alibaba", "plain resolve is unchanged")

        let routed = try ResolverHarness(
            "Upstream=alibaba http://127.0.0.1:9/1\nRoute=alibaba example.com\nDefaultRoute=alibaba\n")
        routed.resolve("app.example.com", family: .ipv4, billedRoutesOnly: true)
        #expect(routed.transport.pending("app.example.com")?.upstream == "alibaba")
        #expect(routed.resolve("other.example.test", family: .ipv4, billedRoutesOnly: true).reason == "not-routed")

        let mixed = try ResolverHarness(
            "Upstream=alibaba http://127.0.0.1:9/1\nUpstream=doh-json http://127.0.0.1:9/r\n")
        mixed.resolve("mirror.example.test", family: .ipv4, billedRoutesOnly: true)
        #expect(mixed.transport.pending("mirror.example.test") != nil, "a free upstream answers any name")
    }

    /// The most specific route wins; names outside every route go to the system resolver; a
    /// route's domain covers the names under it, not names that only end in the same letters.
    @Test func theMostSpecificRouteDecides() throws {
        let harness = try ResolverHarness(
            Self.upstreams + "Route=alibaba example.com\nRoute=tencent api.example.com\n")
        for (host, upstream) in [
            ("example.com", "alibaba"), ("www.example.com", "alibaba"), ("api.example.com", "tencent"),
            ("v1.api.example.com", "tencent"), ("notexample.com", "system"), ("example.org", "system"),
        ] {
            let call = harness.resolve(host, family: .ipv4)
            let exchange = try #require(harness.transport.pending(host), "\(host)")
            #expect(exchange.upstream == upstream, "\(host)")
            exchange.answer(v4: ["203.0.113.1"])
            #expect(call.result?.upstream == upstream, "\(host)")
        }
        #expect(harness.transport.exchanges.allSatisfy { $0.upstream != "doh-json" }, "in no route")
        // The system resolver joined the upstreams, for status.
        #expect(harness.upstreams["system"]?.domains == ["."])
        #expect(harness.upstreams["alibaba"]?.domains == ["example.com"])
        #expect(harness.upstreams["tencent"]?.domains == ["api.example.com"])
        #expect(harness.upstreams["doh-json"]?.domains == [])
        #expect(harness.upstreams["alibaba"]?.answered == 2)
        #expect(harness.upstreams["system"]?.answered == 2)
    }

    /// A routed name falls back only to the upstreams its route lists: with one upstream its
    /// failure is the caller's -32002; a route that lists a second one degrades to it, for that
    /// name alone. Names outside the route are never sent to the route's upstreams.
    @Test func aRoutedNameFallsBackOnlyWithinItsRoute() throws {
        let harness = try ResolverHarness(
            Self.upstreams + "Route=alibaba example.com\nRoute=alibaba,doh-json shop.example.com\n"
                + "DefaultRoute=tencent\n")
        let alone = harness.resolve("www.example.com", family: .ipv4)
        try #require(harness.transport.pending("www.example.com")).fail(.httpStatus(502))
        #expect(harness.transport.pending("www.example.com") == nil, "no other upstream for it")
        #expect(alone.error?.code == .resolutionUnavailable)
        #expect(alone.reason == "alibaba: HTTP status 502")

        harness.advance(seconds: 2)
        let shop = harness.resolve("shop.example.com", family: .ipv4)
        try #require(harness.transport.pending("shop.example.com")).fail(.dnsStatus(2))
        let next = try #require(harness.transport.pending("shop.example.com"))
        #expect(next.upstream == "doh-json")
        next.answer(v4: ["203.0.113.7"])
        #expect(shop.result?.upstream == "doh-json")

        let other = harness.resolve("example.net", family: .ipv4)
        let exchange = try #require(harness.transport.pending("example.net"))
        #expect(exchange.upstream == "tencent")
        exchange.fail(.httpStatus(500))
        #expect(other.error?.code == .resolutionUnavailable)
        #expect(harness.transport.exchanges(for: "example.net").count == 1)
        #expect(harness.upstreams["system"] == nil, "the default route is tencent: no system resolver")
    }

    /// An unhealthy upstream is skipped within a route like everywhere, but a route never
    /// borrows another route's upstream: when all of its own are backing off, they are tried
    /// anyway.
    @Test func healthOrdersARouteWithoutLeavingIt() throws {
        let harness = try ResolverHarness(
            Self.upstreams + "Route=alibaba,tencent example.com\nDefaultRoute=doh-json\n")
        harness.resolve("a.example.com", family: .ipv4)
        try #require(harness.transport.pending("a.example.com")).fail(.httpStatus(503))
        try #require(harness.transport.pending("a.example.com")).answer(v4: ["203.0.113.2"])
        harness.resolve("b.example.com", family: .ipv4)
        #expect(harness.transport.pending("b.example.com")?.upstream == "tencent", "alibaba is backing off")
        harness.transport.pending("b.example.com")?.fail(.httpStatus(503))
        harness.resolve("c.example.com", family: .ipv4)
        #expect(
            harness.transport.pending("c.example.com")?.upstream == "alibaba", "both backing off: the route as written")
        #expect(harness.transport.exchanges.allSatisfy { $0.upstream != "doh-json" })
    }

    /// `Static=` names and localhost never leave the machine, whatever the routes say.
    @Test func staticNamesNeverLeaveTheMachine() throws {
        let harness = try ResolverHarness(
            Self.upstreams + "Route=alibaba example.com\nDefaultRoute=tencent\n"
                + "Static=fixed.example.com 192.0.2.10\n")
        let fixed = harness.resolve("fixed.example.com")
        #expect(fixed.result?.source == .static)
        #expect(fixed.result?.ipv4 == ["192.0.2.10"])
        let local = harness.resolve("localhost", family: .ipv4)
        #expect(harness.transport.pending("localhost")?.upstream == "system")
        harness.transport.pending("localhost")?.answer(v4: ["127.0.0.1"])
        #expect(local.result?.source == .system)
        #expect(harness.transport.exchanges.map(\.host) == ["localhost"])
    }

    /// Prefetched names follow their routes: Alibaba's batches hold only the names routed to it.
    @Test func prefetchFollowsTheRoutes() throws {
        let harness = try ResolverHarness(
            Self.upstreams + "Route=alibaba example.com\nDefaultRoute=tencent\n"
                + "Prefetch=a.example.com b.example.com other.example.net\n")
        harness.service.startPrefetch()
        #expect(harness.transport.batches.map(\.request.hosts) == [["a.example.com", "b.example.com"]])
        #expect(harness.transport.pending.map(\.host) == ["other.example.net"])
        #expect(harness.transport.pending.map(\.upstream) == ["tencent"])
    }
}
