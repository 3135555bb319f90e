import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// Service addresses through the resolver, in-process on a manual clock (issue 29): which
/// failures rotate an address (the service's, never a name's or a user's), the URL each query is
/// sent to, and `status`.
@Suite struct ResolverServiceAddressTests {
    static let tencent = "Upstream=tencent http://127.0.0.2:8053\nTencentBackupAddresses=127.0.0.3 127.0.0.4\n"
    static let nobody: UInt32 = 65534

    /// The address a query went to.
    static func address(_ exchange: FakeUpstreamTransport.Exchange) -> String? {
        exchange.request.endpoint.url.flatMap { ServiceURL.host(of: $0) }
    }

    /// Resolves `host` and fails its one query with `code`.
    static func fail(_ harness: ResolverHarness, _ host: String, uid: UInt32 = 0, _ code: UpstreamError.Code) throws
        -> String?
    {
        harness.resolve(host, family: .ipv4, uid: uid)
        let exchange = try #require(harness.transport.pending(host))
        let address = address(exchange)
        exchange.fail(code)
        return address
    }

    @Test func transportFailuresRotateToTheNextAddressAndStatusShowsTheList() throws {
        let harness = try ResolverHarness(Self.tencent)
        let first = harness.resolve("www.example.com", family: .ipv4)
        let exchange = try #require(harness.transport.pending("www.example.com"))
        #expect(exchange.request.endpoint.url == "http://127.0.0.2:8053")
        #expect(exchange.upstream == "tencent")
        exchange.answer(v4: ["203.0.113.1"])
        #expect(first.result?.ipv4 == ["203.0.113.1"])
        // Each of three users' names meets a refused connection: the third rotates.
        for (index, uid) in [UInt32(1000), 1001, 1002].enumerated() {
            #expect(try Self.fail(harness, "n\(index).example.com", uid: uid, .transport("refused")) == "127.0.0.2")
        }
        harness.resolve("next.example.com", family: .ipv4)
        let next = try #require(harness.transport.pending("next.example.com"))
        #expect(next.request.endpoint.url == "http://127.0.0.3:8053")
        next.answer(v4: ["203.0.113.2"])
        let list = try #require(harness.upstreams["tencent"]?.serviceAddresses)
        #expect(list.source == "configured")
        #expect(list.current == "127.0.0.3")
        #expect(list.addresses.map(\.address) == ["127.0.0.2", "127.0.0.3", "127.0.0.4"])
        #expect(list.addresses.map(\.backingOff) == [true, false, false])
        #expect(list.schedulerError == nil && list.nextRefresh == nil)
        #expect(harness.log.lines.contains { $0.contains("service address 127.0.0.2 failed 3 times in a row") })
        // The backoff over, the address is tried again only when the current one fails.
        harness.advance(seconds: 30)
        #expect(harness.upstreams["tencent"]?.serviceAddresses?.addresses[0].backingOff == false)
        #expect(try Self.fail(harness, "later.example.com", .httpStatus(503)) == "127.0.0.3")
    }

    /// A service address that refuses the connection costs no failed resolve: the same upstream
    /// is asked again at once at its next address, within the resolve, once (Alibaba's SDKs
    /// retry so); what a later request starts with still follows the rotation rule.
    @Test func aRefusedConnectionIsAskedAgainAtTheNextAddressInTheSameResolve() throws {
        let harness = try ResolverHarness(Self.tencent)
        let call = harness.resolve("www.example.com", family: .ipv4)
        try #require(harness.transport.pending("www.example.com")).fail(.transport("connection refused"))
        let again = try #require(harness.transport.pending("www.example.com"), "asked again in the same resolve")
        #expect(Self.address(again) == "127.0.0.3" && again.upstream == "tencent")
        again.answer(v4: ["203.0.113.7"])
        #expect(call.result?.ipv4 == ["203.0.113.7"])
        #expect(harness.upstreams["tencent"]?.serviceAddresses?.current == "127.0.0.2", "one failure rotates nothing")
        // Once per resolve: a second refusal ends its tries at this upstream.
        let twice = harness.resolve("twice.example.com", family: .ipv4)
        try #require(harness.transport.pending("twice.example.com")).fail(.transport("connection refused"))
        try #require(harness.transport.pending("twice.example.com")).fail(.transport("connection refused"))
        #expect(twice.error?.code == .resolutionUnavailable)
        #expect(harness.transport.exchanges(for: "twice.example.com").count == 2)
    }

    /// However many names fail on their own (SERVFAIL, the service refusing a name, a 4xx of the
    /// service's), whoever asks them, the address stays.
    @Test func namesThatFailNeverRotateTheAddress() throws {
        let harness = try ResolverHarness(Self.tencent)
        for index in 0..<12 {
            let code: UpstreamError.Code =
                [
                    .dnsStatus(2), .serviceError(code: "InvalidHost"), .httpStatus(400),
                    .serviceError(code: "Throttled"),
                ][
                    index % 4]
            #expect(try Self.fail(harness, "bad\(index).evil.example", uid: Self.nobody, code) == "127.0.0.2")
        }
        let list = try #require(harness.upstreams["tencent"]?.serviceAddresses)
        #expect(list.current == "127.0.0.2")
        #expect(list.addresses.allSatisfy { $0.failures == 0 && !$0.backingOff })
    }

    /// A user's names that hang make time-outs; while the upstream answered a name recently, a
    /// probe of that name decides: it answers, so the address stays however many hang. A probe
    /// that times out too counts against the address the time-out happened at.
    @Test func timeOutsCountOnlyWhenAProbeConfirmsThem() throws {
        let harness = try ResolverHarness(Self.tencent)
        harness.resolve("known.example.com", family: .ipv4)
        try #require(harness.transport.pending("known.example.com")).answer(v4: ["203.0.113.1"])
        for round in 0..<4 {
            harness.advance(seconds: 1)
            harness.resolve("hang\(round).evil.example", family: .ipv4, uid: Self.nobody)
            harness.advance(milliseconds: 2_000)
            try #require(harness.transport.pending("hang\(round).evil.example")).fail(.timeout)
            let probe = try #require(harness.transport.pending("known.example.com"))
            #expect(Self.address(probe) == "127.0.0.2")
            probe.answer(v4: ["203.0.113.1"])
        }
        #expect(harness.upstreams["tencent"]?.serviceAddresses?.current == "127.0.0.2")
        harness.advance(seconds: 1)
        for round in 0..<3 {
            harness.resolve("slow\(round).example.com", family: .ipv4, uid: UInt32(1000 + round))
            harness.advance(milliseconds: 2_000)
            try #require(harness.transport.pending("slow\(round).example.com")).fail(.timeout)
            let probe = try #require(harness.transport.pending("known.example.com"))
            harness.advance(milliseconds: 2_000)
            probe.fail(.timeout)
        }
        #expect(harness.upstreams["tencent"]?.serviceAddresses?.current == "127.0.0.3")
    }

    /// An upstream that answered nothing for 10 minutes serves nobody: its time-outs count
    /// without a probe (there is no name to probe with), so a hanging address is left.
    @Test func withoutARecentAnswerTimeOutsRotate() throws {
        let harness = try ResolverHarness(Self.tencent)
        for round in 0..<3 {
            harness.resolve("www\(round).example.com", family: .ipv4)
            harness.advance(milliseconds: 2_000)
            let exchange = try #require(harness.transport.pending("www\(round).example.com"))
            #expect(Self.address(exchange) == "127.0.0.2")
            exchange.fail(.timeout)
        }
        harness.resolve("www.example.com", family: .ipv4)
        let exchange = try #require(harness.transport.pending("www.example.com"))
        #expect(Self.address(exchange) == "127.0.0.3")
    }

    /// Without `AlibabaRegion=` an alibaba upstream has its URL only: no list, no scheduler.
    @Test func unscheduledUpstreamsKeepTheirURL() throws {
        let harness = try ResolverHarness("Upstream=alibaba http://127.0.0.2:8053/100000\n")
        harness.service.startServiceAddresses()
        harness.resolve("www.example.com", family: .ipv4)
        let exchange = try #require(harness.transport.pending("www.example.com"))
        #expect(exchange.request.endpoint.url == "http://127.0.0.2:8053/100000")
        #expect(harness.upstreams["alibaba"]?.serviceAddresses == nil)
    }
}

extension ResolverServiceAddressTests {
    /// A reload keeps an unchanged list with its rotation state; new backups start a new list.
    @Test func aReloadKeepsAnUnchangedListAndTakesNewAddresses() throws {
        let harness = try ResolverHarness(Self.tencent)
        for index in 0..<3 { _ = try Self.fail(harness, "n\(index).example.com", .transport("refused")) }
        #expect(harness.upstreams["tencent"]?.serviceAddresses?.current == "127.0.0.3")
        func reload(_ lines: String) throws {
            let configuration = try DaemonConfiguration.parse(text: "[Resolver]\n" + lines, path: "test").get().0
            harness.service.apply(configuration)
        }
        try reload(Self.tencent + "Timeout=3s\n")
        #expect(harness.upstreams["tencent"]?.serviceAddresses?.current == "127.0.0.3")
        #expect(harness.upstreams["tencent"]?.serviceAddresses?.addresses.first?.backingOff == true)
        try reload("Upstream=tencent http://127.0.0.2:8053\nTencentBackupAddresses=127.0.0.6\n")
        let list = try #require(harness.upstreams["tencent"]?.serviceAddresses)
        #expect(list.addresses.map(\.address) == ["127.0.0.2", "127.0.0.6"])
        #expect(list.current == "127.0.0.2")
        try reload("Upstream=tencent http://127.0.0.2:8053\n")
        #expect(harness.upstreams["tencent"]?.serviceAddresses == nil)
    }
}
