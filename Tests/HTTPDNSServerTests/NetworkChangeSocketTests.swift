import Foundation
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// `OnNetworkChange=` end to end: the real daemon in a network namespace of the test's own, with a
/// loopback fake Alibaba service inside it, while the test adds an address and a route there
/// (`ip addr add`, `ip route add`): nothing reaches the machine's network.
@Suite(.enabled(if: getuid() == 0, "creating a network namespace needs root"))
struct NetworkChangeSocketTests {
    /// The daemon and its fake upstream, both inside `namespace`.
    struct World {
        let namespace: NetworkNamespace
        let upstream: FakeHTTPServer
        let daemon: DaemonHarness
        let client: LineClient

        init(_ lines: String) throws {
            let directory = TemporaryDirectory()
            namespace = try NetworkNamespace(directory: directory)
            upstream = try namespace.inside {
                try FakeHTTPServer.alibaba(answers: ["app.example.com": (v4: ["192.0.2.1"], v6: [], ttl: 300)])
            }
            daemon = try DaemonHarness(
                config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n\(lines)[Server]\nIdleExit=0\n",
                directory: directory, launcher: namespace.launcher)
            client = try daemon.connectReady()
        }

        func stop() {
            daemon.stop()
            upstream.stop()
            namespace.stop()
        }

        func resolve(_ host: String) throws -> JSON? {
            try client.call("resolve", ["host": .string(host), "family": "ipv4"])?["result"]
        }

        /// Asks `ip` to change the namespace's network.
        func ip(_ arguments: String) throws {
            let result = try namespace.run(["/usr/sbin/ip"] + arguments.split(separator: " ").map(String.init))
            #expect(result.status == 0, "ip \(arguments): \(result.stderr)")
        }

        var changeLines: [Substring] { daemon.log.split(separator: "\n").filter { $0.contains("Network changed") } }

        /// Waits for the `count`th change's log line (the debounce ends a second after the last
        /// message, and changes are 5 s apart: real time is what is waited for here).
        func waitForChange(_ count: Int) {
            #expect(eventually(30) { changeLines.count >= count }, "log: \(daemon.log)")
        }
    }

    @Test func anAddressAndARouteRefreshTheCachedAnswerEachLoggedOnce() throws {
        let world = try World("Static=fixed.example.com 192.0.2.10\n")
        defer { world.stop() }
        #expect(try world.resolve("app.example.com")?["source"] == "upstream")
        #expect(try world.resolve("app.example.com")?["source"] == "cache")
        #expect(world.upstream.requestCount == 1)
        #expect(try world.client.call("status")?["result"]?["network"]?["lastChange"] == .null)

        try world.ip("addr add 10.9.9.9/32 dev lo")
        world.waitForChange(1)
        #expect(world.changeLines.last?.contains("1 address added (+10.9.9.9/32)") == true, "\(world.changeLines)")
        // Served as it was, and asked again behind the answer.
        let served = try world.resolve("app.example.com")
        #expect(served?["source"] == "cache" && served?["ipv4"] == ["192.0.2.1"])
        #expect(eventually(20) { world.upstream.requestCount == 2 })
        #expect(try world.client.call("status")?["result"]?["network"]?["lastChange"]?.numberValue != nil)

        try world.ip("route add 10.8.0.0/16 dev lo")
        world.waitForChange(2)
        #expect(world.changeLines.last?.contains("1 route added") == true, "\(world.changeLines)")
        #expect(try world.resolve("app.example.com")?["source"] == "cache")
        #expect(eventually(20) { world.upstream.requestCount == 3 })
        // The refreshed answer is used as it is; a Static= name never left the machine.
        #expect(try world.resolve("app.example.com")?["source"] == "cache")
        #expect(try world.resolve("fixed.example.com")?["source"] == "static")
        #expect(world.upstream.requestCount == 3)
        #expect(world.upstream.requests.allSatisfy { $0.queryValue("host") == "app.example.com" })
        #expect(world.changeLines.count == 2, "each change is logged once: \(world.changeLines)")
    }

    @Test func flushMakesTheNextLookupMiss() throws {
        let world = try World("OnNetworkChange=flush\n")
        defer { world.stop() }
        #expect(try world.resolve("app.example.com")?["source"] == "upstream")
        try world.ip("addr add 10.9.9.9/32 dev lo")
        world.waitForChange(1)
        #expect(world.changeLines.last?.contains("cached answer(s) flushed") == true, "\(world.changeLines)")
        #expect(try world.resolve("app.example.com")?["source"] == "upstream")
        #expect(world.upstream.requestCount == 2)
    }
}
