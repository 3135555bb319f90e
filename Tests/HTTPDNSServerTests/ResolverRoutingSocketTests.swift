import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Per-domain routing against the real daemon (issue 29): two loopback fakes, a billed HTTPDNS
/// service routed only the names under one domain and a second service for every other name
/// (`DefaultRoute=`, so nothing here reaches the system resolver). The rules themselves are the
/// Core replay scenarios' (routing-*.rpl).
struct ResolverRoutingSocketTests {
    @Test func namesGoOnlyWhereTheirRouteSends() throws {
        let httpdns = try FakeHTTPServer.alibaba(answers: [
            "www.corp.example": (["203.0.113.10"], [], 300),
            "api.corp.example": (["203.0.113.11"], [], 300),
        ])
        let other = try FakeHTTPServer.tencent(answers: [
            "mirror.example.org": (["198.51.100.20"], [], 300),
            "api.corp.example": (["198.51.100.11"], [], 300),
        ])
        let daemon = try DaemonHarness(
            config: """
                [Resolver]
                Upstream=alibaba \(httpdns.alibabaURL())
                Upstream=tencent \(other.baseURL)
                Route=alibaba ~corp.example
                DefaultRoute=tencent
                Static=fixed.corp.example 192.0.2.30
                """)
        let client = try daemon.connectReady()
        func resolve(_ host: String, id: Int) throws -> JSON {
            try #require(try client.call("resolve", ["host": .string(host), "family": "ipv4"], id: id))
        }

        let routed = try resolve("www.corp.example", id: 1)
        #expect(routed["result"]?["ipv4"] == ["203.0.113.10"], "\(routed.encodedString)")
        #expect(routed["result"]?["upstream"] == "alibaba")
        let outside = try resolve("mirror.example.org", id: 2)
        #expect(outside["result"]?["ipv4"] == ["198.51.100.20"], "\(outside.encodedString)")
        #expect(outside["result"]?["upstream"] == "tencent")
        let fixed = try resolve("fixed.corp.example", id: 3)
        #expect(fixed["result"]?["source"] == "static")
        // A routed name the service refuses (InvalidHost) fails: its route lists no other upstream.
        let unknown = try resolve("new.corp.example", id: 4)
        #expect(unknown["error"]?["code"] == .int(-32002), "\(unknown.encodedString)")
        #expect(unknown["error"]?["data"]?["reason"]?.stringValue?.hasPrefix("alibaba: ") == true)

        #expect(httpdns.requests.compactMap { $0.queryValue("host") } == ["www.corp.example", "new.corp.example"])
        #expect(other.requests.compactMap { $0.queryValue("dn") } == ["mirror.example.org"])

        let status = try #require(try client.call("status", [:], id: 5)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.map { $0["name"] } == ["alibaba", "tencent"], "no system resolver: DefaultRoute= names tencent")
        #expect(status.first?["domains"] == ["corp.example"])
        #expect(status.first?["answered"] == 1)
        #expect(status.last?["domains"] == ["."])
        #expect(status.last?["answered"] == 1)
        let human = try CtlEndToEndTests.ctl(["--socket", daemon.socketPath, "status"])
        #expect(human.stdout.contains("upstream alibaba (alibaba): healthy, for corp.example\n"), "\(human.stdout)")
        #expect(human.stdout.contains("upstream tencent (tencent): healthy, for .\n"), "\(human.stdout)")
    }
}

/// A billed upstream that every name goes to is what `status` warns of (and `--check-config`
/// and the start-up log, from the same rule); a `Route=` for its domains ends the warning.
struct BilledDefaultStatusTests {
    @Test func statusWarnsOfABilledUpstreamThatGetsEveryName() throws {
        let httpdns = try FakeHTTPServer.alibaba(answers: ["www.corp.example": (["203.0.113.10"], [], 300)])
        let config = "[Resolver]\nUpstream=alibaba \(httpdns.alibabaURL())\n"
        let daemon = try DaemonHarness(config: config)
        let client = try daemon.connectReady()
        let status = try #require(try client.call("status", [:])?["result"]?["upstreams"]?.arrayValue)
        let warning = try #require(status.first?["warning"]?.stringValue, "\(status)")
        #expect(warning.hasPrefix("every name (no Route= is set) goes to billed upstreams only"), "\(warning)")
        #expect(daemon.log.contains("goes to the billed upstream(s) alibaba"), "\(daemon.log)")
        let human = try CtlEndToEndTests.ctl(["--socket", daemon.socketPath, "status"])
        #expect(human.stdout.contains("\n  warning: every name (no Route= is set) goes to billed"), "\(human.stdout)")

        let routed = try DaemonHarness(config: config + "Route=alibaba corp.example\n")
        let routedClient = try routed.connectReady()
        let upstreams = try #require(try routedClient.call("status", [:])?["result"]?["upstreams"]?.arrayValue)
        #expect(upstreams.count == 2 && upstreams.allSatisfy { $0["warning"] == nil }, "\(upstreams)")
    }
}
