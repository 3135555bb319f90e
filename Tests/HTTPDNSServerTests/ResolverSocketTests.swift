import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// `resolve`, `flushCache` and `status` over the real socket, with fake upstreams on 127.0.0.1.
@Suite(.serialized)
struct ResolverSocketTests {
    static let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "a.example.com": (["203.0.113.10", "203.0.113.11"], ["2001:db8::10"], 120),
        "short.example.com": (["203.0.113.20"], [], 1),
        "empty.example.com": ([], [], 60),
    ]

    func resolve(_ client: LineClient, _ params: JSON, id: Int = 1) throws -> JSON {
        try #require(try client.call("resolve", params, id: id))
    }

    @Test func alibabaAnswersThenTheCacheDoes() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let client = try daemon.connectReady()

        let first = try resolve(client, ["host": "A.Example.COM."])
        let result = try #require(first["result"], "\(first.encodedString)")
        #expect(result["host"] == "a.example.com")
        #expect(result["ipv4"] == ["203.0.113.10", "203.0.113.11"])
        #expect(result["ipv6"] == ["2001:db8::10"])
        #expect(result["source"] == "upstream")
        #expect(result["upstream"] == "alibaba")
        #expect(result["stale"] == false)
        let ttl = try #require(result["ttl"]?.numberValue?.int64Value)
        #expect(ttl > 0 && ttl <= 120)
        let target = try #require(upstream.requests.first?.target)
        #expect(target.hasPrefix("/100000/d?"))
        #expect(target.contains("host=a.example.com"))
        #expect(target.contains("query=4,6") || target.contains("query=4%2C6"))

        let second = try resolve(client, ["host": "a.example.com"], id: 2)
        #expect(second["result"]?["source"] == "cache")
        #expect(second["result"]?["ipv4"] == ["203.0.113.10", "203.0.113.11"])
        #expect(upstream.requestCount == 1)

        let v4 = try resolve(client, ["host": "a.example.com", "family": "ipv4"], id: 3)
        #expect(v4["result"]?["ipv6"] == [])
        #expect(v4["result"]?["ipv4"] == ["203.0.113.10", "203.0.113.11"])

        let status = try #require(try client.call("status")?["result"])
        #expect(status["cache"]?["hits"]?.numberValue?.int64Value ?? 0 >= 1)
        #expect(status["cache"]?["entries"]?.numberValue?.int64Value ?? 0 >= 2)
        let upstreams = try #require(status["upstreams"]?.arrayValue)
        #expect(upstreams.first?["name"] == "alibaba")
        #expect(upstreams.first?["kind"] == "alibaba")
        #expect(upstreams.first?["healthy"] == true)
    }

    @Test func failoverToTheNextUpstreamAndHealth() throws {
        let broken = try FakeHTTPServer { _ in .respond(status: 500, headers: [], body: Array("oops".utf8)) }
        let working = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(broken.baseURL)/100000\nUpstream=alibaba \(working.alibabaURL())\n")
        let client = try daemon.connectReady()
        let response = try resolve(client, ["host": "a.example.com"])
        #expect(response["result"]?["ipv4"] == ["203.0.113.10", "203.0.113.11"])
        #expect(broken.requestCount == 1)
        let status = try #require(try client.call("status")?["result"]?["upstreams"]?.arrayValue)
        #expect(status.count == 2)
        #expect(status[0]["healthy"] == false)
        #expect(status[0]["lastError"]?.stringValue?.contains("500") == true)
        #expect(status[1]["healthy"] == true)
        #expect(response["result"]?["upstream"] == status[1]["name"])
    }

    @Test func noAddressIsHostNotFoundAndFailureIsUnavailable() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let client = try daemon.connectReady()
        let empty = try resolve(client, ["host": "empty.example.com"])
        #expect(empty["error"]?["code"] == .int(-32001))
        #expect(empty["error"]?["data"]?["name"] == "HostNotFound")
        // An Alibaba error body (InvalidHost for a name it does not serve) is a failure, not "no address".
        let unknown = try resolve(client, ["host": "unknown.example.com"], id: 2)
        #expect(unknown["error"]?["code"] == .int(-32002), "\(unknown.encodedString)")
        #expect(unknown["error"]?["data"]?["name"] == "ResolutionUnavailable")
    }

    /// The wiring of worker threads and the loop: a real upstream that hangs holds a worker, not
    /// the loop. Real time is involved (the hang ends at the caller's 5 s); the order of the
    /// replies is what is tested, with a margin no loaded machine uses up.
    @Test func aHangingUpstreamDelaysNothingElse() throws {
        let upstream = try FakeHTTPServer { request in
            request.target.contains("slow") ? .hang : .json(#"{"host":"x","ips":["203.0.113.1"],"ttl":60}"#)
        }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\nTimeout=5s\n")
        let client = try daemon.connectReady()
        try client.sendLine(
            #"{"jsonrpc":"2.0","id":"slow","method":"resolve","params":{"host":"slow.example.com","timeoutMs":5000}}"#)
        try client.sendLine(#"{"jsonrpc":"2.0","id":"fast","method":"resolve","params":{"host":"fast.example.com"}}"#)
        try client.sendLine(
            #"{"jsonrpc":"2.0","id":"jar","method":"getCookieHeader","params":{"url":"https://a.example.com/"}}"#)
        let first = try #require(client.readJSON())
        let second = try #require(client.readJSON())
        #expect(Set([first["id"], second["id"]].compactMap { $0?.stringValue }) == ["fast", "jar"])
        let last = try #require(client.readJSON(timeout: 60))
        #expect(last["id"] == "slow")
        #expect(last["error"]?["code"] == .int(-32002))
        upstream.stop()
    }

    @Test func invalidNamesAreInvalidParams() throws {
        let daemon = try DaemonHarness()
        let client = try daemon.connectReady()
        let long = String(repeating: "a.", count: 127) + "com"
        let label = String(repeating: "x", count: 64) + ".example"
        for (i, host) in ["", "a..b", long, label, "bad_chars!.example", "sp ace.example", "-lead.example"].enumerated()
        {
            let response = try resolve(client, ["host": .string(host)], id: i)
            #expect(response["error"]?["code"] == .int(-32602), "\(host): \(response.encodedString)")
            #expect(response["error"]?["data"]?["field"] == "host")
        }
        let missing = try #require(try client.call("resolve", [:], id: 99))
        #expect(missing["error"]?["data"]?["field"] == "host")
        let family = try resolve(client, ["host": "a.example", "family": "ipv5"], id: 100)
        #expect(family["error"]?["data"]?["field"] == "family")
    }

    @Test func literalsLocalhostAndStaticAnswers() throws {
        let daemon = try DaemonHarness(config: "[Resolver]\nStatic=intranet.example 10.0.0.5 fd00::5\n")
        let client = try daemon.connectReady()
        let v4 = try resolve(client, ["host": "192.0.2.1"])
        #expect(v4["result"]?["source"] == "literal")
        #expect(v4["result"]?["ipv4"] == ["192.0.2.1"])
        let v6 = try resolve(client, ["host": "2001:DB8::1"], id: 2)
        #expect(v6["result"]?["ipv6"] == ["2001:db8::1"])
        let local = try resolve(client, ["host": "localhost", "family": "ipv4"], id: 3)
        #expect(local["result"]?["ipv4"] == ["127.0.0.1"], "\(local.encodedString)")
        #expect(local["result"]?["source"] == "system")
        let fixed = try resolve(client, ["host": "intranet.example"], id: 4)
        #expect(fixed["result"]?["source"] == "static")
        #expect(fixed["result"]?["ipv4"] == ["10.0.0.5"])
        #expect(fixed["result"]?["ipv6"] == ["fd00::5"])
    }

    @Test func flushCacheForgetsAnswers() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let client = try daemon.connectReady()
        _ = try resolve(client, ["host": "a.example.com"])
        let flushed = try #require(try client.call("flushCache", ["host": "a.example.com"], id: 2))
        #expect(flushed["result"]?["flushed"] == 2)
        _ = try resolve(client, ["host": "a.example.com"], id: 3)
        #expect(upstream.requestCount == 2)
        let all = try #require(try client.call("flushCache", [:], id: 4))
        #expect(all["result"]?["flushed"] == 2)
    }

    @Test func signedRequestsCarryAValidSignatureAndTheSecretStaysOutOfLogs() throws {
        let secret = "s3cr3t-key-for-test"
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers) { signed, t, s in
            // s = md5(host-secret-t), computed here with the system's md5sum, not the daemon's code.
            guard
                let result = try? runCommand(
                    "/bin/sh", ["-c", "printf '%s' \"$0\" | md5sum", "\(signed)-\(secret)-\(t)"])
            else { return false }
            return result.stdout.hasPrefix(s)
        }
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nSecretKey=\(secret)\n")
        let client = try daemon.connectReady()
        let response = try resolve(client, ["host": "a.example.com"])
        #expect(response["result"]?["ipv4"] == ["203.0.113.10", "203.0.113.11"], "\(response.encodedString)")
        let target = try #require(upstream.requests.first?.target)
        #expect(target.contains("/sign_d?"))
        #expect(!target.contains(secret))
        _ = try resolve(client, ["host": "unknown.example.com"], id: 2)
        let status = try #require(try client.call("status", [:], id: 3))
        #expect(!status.encodedString.contains(secret))
        daemon.stop()
        #expect(!daemon.log.contains(secret))
    }

    @Test func prefetchUsesAlibabaBatchesAndFillsTheCache() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: Self.answers)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nPrefetch=a.example.com short.example.com\n")
        let client = try daemon.connectReady()
        #expect(eventually(5) { upstream.requestCount > 0 })
        let target = try #require(upstream.requests.first?.target)
        #expect(target.hasPrefix("/100000/resolve?"), "\(target)")
        #expect(
            target.contains("a.example.com,short.example.com") || target.contains("a.example.com%2Cshort.example.com"))
        // The fake has answered; wait until the daemon has cached both names (v4 and v6 each).
        #expect(
            try eventually(5) {
                (try client.call("status", id: 50)?["result"]?["cache"]?["entries"]?.numberValue?.int64Value ?? 0) >= 4
            })
        let response = try resolve(client, ["host": "a.example.com"])
        #expect(response["result"]?["source"] == "cache", "\(response.encodedString)")
        // short.example.com has a 1 s TTL: the loop's timer refreshes it without a client asking
        // again (when exactly is ResolverServiceTests' to check; real time passes here).
        #expect(eventually(30) { upstream.requests.filter { $0.target.contains("short.example.com") }.count >= 2 })
    }

    /// Addresses handed out from the cache count as much as upstream answers: a cache hit makes its
    /// name the most recent host of the address.
    @Test func aCacheHitMakesItsNameTheMostRecentHostOfTheIP() throws {
        let upstream = try FakeHTTPServer.alibaba(answers: [
            "one.example.com": (["203.0.113.90"], [], 300), "two.example.com": (["203.0.113.90"], [], 300),
        ])
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let client = try daemon.connectReady()
        _ = try resolve(client, ["host": "one.example.com"], id: 1)
        _ = try resolve(client, ["host": "two.example.com"], id: 2)
        let again = try resolve(client, ["host": "one.example.com"], id: 3)
        #expect(again["result"]?["source"] == "cache")
        let reverse = try #require(try client.call("reverse", ["address": "203.0.113.90"], id: 4))
        #expect(reverse["result"]?["hosts"] == ["one.example.com", "two.example.com"], "\(reverse.encodedString)")
    }
}
