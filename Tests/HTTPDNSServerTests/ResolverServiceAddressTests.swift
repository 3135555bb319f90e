import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

@testable import HTTPDNSServer

/// Service addresses through the resolver service, in-process on a manual clock (issue 29): the
/// URL each query is sent to, the lists in `status` and a reload's lists. Which failures rotate an
/// address is the machine's, in the Core replay scenarios (service-address-*.rpl).
@Suite struct ResolverServiceAddressTests {
    static let tencent = "Upstream=tencent http://127.0.0.2:8053\nTencentBackupAddresses=127.0.0.3 127.0.0.4\n"

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
