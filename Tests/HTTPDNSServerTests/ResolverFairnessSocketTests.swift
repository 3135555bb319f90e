import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Issue 23 end to end: uid 65534 (another local user, `OtherUser`) floods the real daemon while
/// root resolves; the exact rules are the Core replay scenarios' (fairness-*.rpl, probe-*.rpl).
@Suite(.serialized)
struct ResolverFairnessSocketTests {
    /// The primary: answers root's names; names under evil.example SERVFAIL or hang (by their
    /// first label). The secondary answers every name with another address, so an answer says
    /// which upstream gave it.
    static func upstreams() throws -> (primary: FakeHTTPServer, secondary: FakeHTTPServer) {
        let zone = FakeDNSZone(records: [
            FakeDNSRecord("known.example.com", ttl: 300, .a("203.0.113.1")),
            FakeDNSRecord("bank.example.com", ttl: 300, .a("203.0.113.50")),
        ])
        let primary = try FakeHTTPServer.dohJSON(zone: zone) { request in
            guard let name = request.queryValue("name"), name.hasSuffix("evil.example") else { return nil }
            return name.hasPrefix("hang") ? .hang : .json(#"{"Status":2,"TC":false}"#)
        }
        let secondary = try FakeHTTPServer { request in
            let host = request.queryValue("dn") ?? "x"
            return .text(host.hasPrefix("bank") ? "198.51.100.50,60" : "198.51.100.7,60")
        }
        return (primary, secondary)
    }

    static func config(_ primary: FakeHTTPServer, _ secondary: FakeHTTPServer) -> String {
        "[Resolver]\nUpstream=doh-json \(primary.baseURL)/resolve\nUpstream=tencent \(secondary.baseURL)\nTimeout=2s\n"
    }

    static func resolve(_ client: LineClient, _ host: String, id: Int) throws -> JSON {
        try #require(try client.call("resolve", ["host": .string(host), "family": "ipv4"], id: id))
    }

    /// uid 65534 resolves names whose zone SERVFAILs: root's next name still goes to the
    /// primary (HTTPDNS), not to the next upstream.
    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func aServfailFloodOfAnotherUserLeavesRootOnThePrimary() throws {
        let (primary, secondary) = try Self.upstreams()
        let daemon = try DaemonHarness(config: Self.config(primary, secondary))
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        #expect(try Self.resolve(client, "known.example.com", id: 1)["result"]?["ipv4"] == ["203.0.113.1"])
        let flood = try OtherUser.exchange(
            daemon, (0..<20).map { ("resolve", ["host": .string("bad\($0).evil.example"), "family": "ipv4"]) })
        #expect(flood.count == 20)
        #expect(primary.requests.filter { $0.queryValue("name")?.hasSuffix("evil.example") == true }.count == 20)
        let bank = try Self.resolve(client, "bank.example.com", id: 2)
        #expect(bank["result"]?["ipv4"] == ["203.0.113.50"], "\(bank.encodedString)")
        #expect(bank["result"]?["upstream"] == "doh-json")
        let status = try #require(try client.call("status", [:], id: 3)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.first?["healthy"] == true, "\(status)")
    }

    /// uid 65534 resolves names whose servers hang: each hang uses up the primary's share of
    /// `Timeout=` and the name goes on to the next upstream, but a probe of a name the primary
    /// answered shows it works: root's next name still goes to it. Real time is involved (a
    /// hang is given up after the primary's share, 1 s); the test only waits for events.
    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func aHangingZoneFloodOfAnotherUserLeavesRootOnThePrimary() throws {
        let (primary, secondary) = try Self.upstreams()
        let daemon = try DaemonHarness(config: Self.config(primary, secondary))
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        #expect(try Self.resolve(client, "known.example.com", id: 1)["result"]?["ipv4"] == ["203.0.113.1"])
        let flood = try OtherUser.start(
            daemon, (0..<8).map { ("resolve", ["host": .string("hang\($0).evil.example"), "family": "ipv4"]) },
            in: daemon.directory)
        defer { flood.signal(SIGKILL) }
        // The hangs were given up at the primary and went on to the secondary; the probe that
        // followed asked the primary for root's name again.
        #expect(
            eventually(60) { secondary.requests.filter { $0.queryValue("dn")?.hasPrefix("hang") == true }.count >= 4 })
        #expect(eventually(60) { primary.requests.filter { $0.queryValue("name") == "known.example.com" }.count >= 2 })
        let bank = try Self.resolve(client, "bank.example.com", id: 2)
        #expect(bank["result"]?["ipv4"] == ["203.0.113.50"], "\(bank.encodedString)")
        #expect(bank["result"]?["upstream"] == "doh-json")
    }

    /// uid 65534 resolves distinct names as fast as it can: past its burst it gets -32003 with
    /// `retryAfterMs`, and root's hot name stays in the (small) cache meanwhile.
    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func aDistinctNameFloodOfAnotherUserLeavesRootsHotNameCached() throws {
        let upstream = try FakeHTTPServer { request in
            let host = request.queryValue("host") ?? "x"
            return .json(#"{"host":"\#(host)","ips":["203.0.113.9"],"ipsv6":["2001:db8::9"],"ttl":300}"#)
        }
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nCacheSize=16\n"
                + "UpstreamQueryRatePerUser=1\nUpstreamQueryBurstPerUser=20\n")
        let client = try daemon.connectReady()
        try OtherUser.admit(daemon)
        let hot = try #require(try client.call("resolve", ["host": "hot.example.com"], id: 1))
        #expect(hot["result"]?["source"] == "upstream", "\(hot.encodedString)")
        let flood = try OtherUser.exchange(
            daemon, (0..<40).map { ("resolve", ["host": .string("flood\($0).example.com")]) })
        let refused = flood.filter { $0["error"]?["code"] == .int(-32003) }
        #expect(refused.count >= 15, "\(flood.map(\.encodedString))")
        #expect(refused.allSatisfy { ($0["error"]?["data"]?["retryAfterMs"]?.numberValue?.int64Value ?? 0) > 0 })
        let again = try #require(try client.call("resolve", ["host": "hot.example.com"], id: 2))
        #expect(again["result"]?["source"] == "cache", "\(again.encodedString)")
        #expect(upstream.requests.filter { $0.queryValue("host") == "hot.example.com" }.count == 1)
    }
}
