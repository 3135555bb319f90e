import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Every upstream kind end to end through the real daemon, and how each one fails.
/// Fakes speak each provider's wire format (Alibaba and Tencent HTTP APIs, RFC 8484 DoH, DoH JSON) on 127.0.0.1.
@Suite(.serialized)
struct UpstreamKindsTests {
    static let tencentAnswers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "t.example.com": (["203.0.113.30", "203.0.113.31"], ["2001:db8::30"], 300),
        "u.example.com": (["203.0.113.32"], ["2001:db8::32", "2001:db8::33"], 240),
    ]

    // MARK: each kind

    @Test func tencentPlainTextInEachFamilyForm() throws {
        let upstream = try FakeHTTPServer.tencent(answers: Self.tencentAnswers) { request in
            switch request.queryValue("dn") {
            case "c.example.com": return .text("203.0.113.40;203.0.113.41,60|198.51.100.7")
            // Both families with different TTLs: the answer lives as long as the shorter one.
            case "m.example.com": return .text("203.0.113.50,300-2001:db8::50,120")
            default: return nil
            }
        }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=tencent \(upstream.baseURL)\n")
        let client = try daemon.connectReady()

        let v4 = try result(client, ["host": "t.example.com", "family": "ipv4"])
        #expect(v4["ipv4"] == ["203.0.113.30", "203.0.113.31"])
        #expect(v4["ipv6"] == [])
        #expect(v4["source"] == "upstream")
        #expect(v4["upstream"] == "tencent")
        #expect((290...300).contains(v4["ttl"]?.numberValue?.int64Value ?? -1), "\(v4.encodedString)")
        let first = try #require(upstream.requests.first)
        #expect(first.path == "/d")
        #expect(first.queryValue("dn") == "t.example.com")
        #expect(first.queryValue("ttl") == "1")
        #expect(first.queryValue("type") == nil)

        let v6 = try result(client, ["host": "t.example.com", "family": "ipv6"], id: 2)
        #expect(v6["ipv6"] == ["2001:db8::30"])
        #expect(v6["ipv4"] == [])
        #expect(upstream.requests.last?.queryValue("type") == "aaaa")
        #expect(upstream.requestCount == 2)

        // Both families are now cached: no third request.
        let cached = try result(client, ["host": "t.example.com"], id: 3)
        #expect(cached["source"] == "cache")
        #expect(cached["ipv4"] == ["203.0.113.30", "203.0.113.31"])
        #expect(cached["ipv6"] == ["2001:db8::30"])
        #expect(upstream.requestCount == 2)

        let both = try result(client, ["host": "u.example.com"], id: 4)
        #expect(upstream.requests.last?.queryValue("type") == "addrs")
        #expect(both["ipv4"] == ["203.0.113.32"])
        #expect(both["ipv6"] == ["2001:db8::32", "2001:db8::33"])
        #expect(upstream.requestCount == 3)

        // `|clientIP` is not an address of the host.
        let withClient = try result(client, ["host": "c.example.com", "family": "ipv4"], id: 5)
        #expect(withClient["ipv4"] == ["203.0.113.40", "203.0.113.41"])
        #expect(!withClient.encodedString.contains("198.51.100.7"))

        let mixedTTL = try result(client, ["host": "m.example.com"], id: 6)
        #expect(mixedTTL["ipv4"] == ["203.0.113.50"])
        #expect(mixedTTL["ipv6"] == ["2001:db8::50"])
        #expect((110...120).contains(mixedTTL["ttl"]?.numberValue?.int64Value ?? -1), "\(mixedTTL.encodedString)")

        // An empty body is how Tencent says "no answer for this host".
        let unknown = try response(client, ["host": "nobody.example.com", "family": "ipv4"], id: 7)
        #expect(unknown["error"]?["code"] == .int(-32001), "\(unknown.encodedString)")
        #expect(unknown["error"]?["data"]?["name"] == "HostNotFound")
    }

    @Test func dohJSONFiltersCNAMERowsAndMapsNXDOMAIN() throws {
        let zone = FakeDNSZone(
            records: [
                FakeDNSRecord("www.example.org", ttl: 300, .cname("edge.example.net")),
                FakeDNSRecord("edge.example.net", ttl: 200, .a("192.0.2.10")),
                FakeDNSRecord("edge.example.net", ttl: 200, .a("192.0.2.11")),
                FakeDNSRecord("edge.example.net", ttl: 250, .aaaa("2001:db8::a")),
            ],
            nonexistent: ["nx.example.org"])
        let upstream = try FakeHTTPServer.dohJSON(zone: zone) { request in
            request.queryValue("name") == "servfail.example.org" ? .json(#"{"Status":2,"TC":false}"#) : nil
        }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=doh-json \(upstream.baseURL)/resolve\n")
        let client = try daemon.connectReady()

        let answer = try result(client, ["host": "www.example.org"])
        #expect(answer["host"] == "www.example.org")
        #expect(answer["ipv4"] == ["192.0.2.10", "192.0.2.11"])
        #expect(answer["ipv6"] == ["2001:db8::a"])
        #expect(answer["source"] == "upstream")
        #expect(answer["upstream"] == "doh-json")
        #expect((190...200).contains(answer["ttl"]?.numberValue?.int64Value ?? -1), "\(answer.encodedString)")

        let requests = upstream.requests
        #expect(requests.count == 2)
        #expect(Set(requests.compactMap { $0.queryValue("type") }) == ["1", "28"])
        for request in requests {
            #expect(request.path == "/resolve")
            #expect(request.queryValue("name") == "www.example.org")
            #expect(request.header("Accept")?.contains("application/dns-json") == true)
        }

        let missing = try response(client, ["host": "nx.example.org", "family": "ipv4"], id: 2)
        #expect(missing["error"]?["code"] == .int(-32001), "\(missing.encodedString)")
        #expect(missing["error"]?["data"]?["name"] == "HostNotFound")
        #expect(upstream.requestCount == 3)

        // SERVFAIL is the name's zone failing: not "no address" (-32002, saying SERVFAIL), and
        // not the upstream's failure either (it stays healthy for every other name).
        let failed = try response(client, ["host": "servfail.example.org", "family": "ipv4"], id: 3)
        #expect(failed["error"]?["code"] == .int(-32002), "\(failed.encodedString)")
        #expect(failed["error"]?["data"]?["reason"] == "doh-json: DNS error SERVFAIL")
        let upstreams = try #require(try client.call("status", [:], id: 4)?["result"]?["upstreams"]?.arrayValue)
        #expect(upstreams.first?["healthy"] == true, "\(upstreams)")
        #expect(upstreams.first?["lastError"] == .null)
    }

    @Test func dohWireFollowsACompressedCNAMEChain() throws {
        let zone = FakeDNSZone(
            records: [
                FakeDNSRecord("www.example.com", ttl: 3600, .cname("alias.example.com")),
                FakeDNSRecord("alias.example.com", ttl: 45, .cname("edge.cdn.example.net")),
                FakeDNSRecord("edge.cdn.example.net", ttl: 600, .a("203.0.113.60")),
                FakeDNSRecord("edge.cdn.example.net", ttl: 600, .a("203.0.113.61")),
                FakeDNSRecord("edge.cdn.example.net", ttl: 600, .aaaa("2001:db8::60")),
                FakeDNSRecord("v4only.example.com", ttl: 300, .a("203.0.113.62")),
            ],
            nonexistent: ["gone.example.com"])
        // Records the chain does not lead to must not be taken: an unrelated owner and another type.
        let strays = [
            FakeDNSRecord("unrelated.example.com", ttl: 600, .a("198.51.100.99")),
            FakeDNSRecord("edge.cdn.example.net", ttl: 600, .other(type: 16, rdata: Array("\u{5}hello".utf8))),
        ]
        let upstream = try FakeHTTPServer.doh(zone: zone) { _, question in
            if question.name == "loop.example.com" { return .dnsMessage(Self.pointerLoop(answering: question)) }
            let (rcode, answers) = zone.answer(name: question.name, type: question.type)
            guard question.name == "www.example.com" else { return nil }
            return .dnsMessage(FakeDNSWire.response(to: question, rcode: rcode, answers: answers + strays))
        }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=doh \(upstream.baseURL)/dns-query\n")
        let client = try daemon.connectReady()

        let answer = try result(client, ["host": "www.example.com"])
        #expect(answer["ipv4"] == ["203.0.113.60", "203.0.113.61"])
        #expect(answer["ipv6"] == ["2001:db8::60"])
        #expect(answer["source"] == "upstream")
        #expect(answer["upstream"] == "doh")
        // TTL = the minimum along the chain (the 45 s CNAME), not the addresses' 600 s.
        #expect((44...45).contains(answer["ttl"]?.numberValue?.int64Value ?? -1), "\(answer.encodedString)")
        #expect(!answer.encodedString.contains("198.51.100.99"))

        let requests = upstream.requests
        #expect(requests.count == 2)
        var types: Set<UInt16> = []
        for request in requests {
            #expect(request.method == "GET")
            #expect(request.path == "/dns-query")
            #expect(request.header("Accept")?.contains("application/dns-message") == true)
            let raw = try #require(Self.rawQueryValue("dns", in: request.target))
            // base64url without padding (RFC 8484 section 4.1).
            #expect(raw.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }, "\(raw)")
            let question = try #require(FakeBase64URL.decode(raw).flatMap(FakeDNSWire.parseQuery))
            #expect(question.name.lowercased() == "www.example.com")
            #expect(question.id == 0)  // RFC 8484 section 4.1: ID 0 for cache friendliness
            #expect(question.flags & 0x8000 == 0)  // a query
            #expect(question.flags & 0x0100 != 0)  // RD
            #expect(question.qclass == 1)
            types.insert(question.type)
        }
        #expect(types == [1, 28])

        // Only an A record (TTL 300): the answer keeps its addresses' TTL, the AAAA query's
        // NODATA has the negative TTL (NegativeTTL=, 30 s) in `ttls` only.
        let noData = try result(client, ["host": "v4only.example.com"], id: 2)
        #expect(noData["ipv4"] == ["203.0.113.62"])
        #expect(noData["ipv6"] == [])
        #expect((299...300).contains(noData["ttl"]?.numberValue?.int64Value ?? -1), "\(noData.encodedString)")
        #expect((299...300).contains(noData["ttls"]?["ipv4"]?.numberValue?.int64Value ?? -1))
        #expect((29...30).contains(noData["ttls"]?["ipv6"]?.numberValue?.int64Value ?? -1))
        let v6 = try response(client, ["host": "v4only.example.com", "family": "ipv6"], id: 5)
        #expect(v6["error"]?["code"] == .int(-32001), "\(v6.encodedString)")
        #expect(v6["error"]?["data"]?["reason"] == "no-data")

        let gone = try response(client, ["host": "gone.example.com", "family": "ipv6"], id: 3)
        #expect(gone["error"]?["code"] == .int(-32001), "\(gone.encodedString)")
        #expect(gone["error"]?["data"]?["reason"] == "no-such-name")

        // A compression pointer that points at itself must not hang or crash the daemon.
        let loop = try response(client, ["host": "loop.example.com", "family": "ipv4"], id: 4)
        #expect(loop["error"]?["code"] == .int(-32002), "\(loop.encodedString)")

        // The fake really compressed: the first answer's owner is a pointer to the question (0xC00C).
        let question = FakeDNSQuestion(id: 0, flags: 0x0100, name: "www.example.com", type: 1, qclass: 1)
        let chain = zone.answer(name: "www.example.com", type: 1).answers
        let sample = FakeDNSWire.response(to: question, rcode: 0, answers: chain)
        #expect(sample[33...34].elementsEqual([0xC0, 0x0C]))
    }

    /// RFC 8484 section 4.1: POST carries the query as the body, typed application/dns-message.
    @Test func dohWireOverPOST() throws {
        let zone = FakeDNSZone(records: [FakeDNSRecord("post.example.com", ttl: 120, .a("203.0.113.80"))])
        let upstream = try FakeHTTPServer.doh(zone: zone)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=doh \(upstream.baseURL)/dns-query\nDoHMethod=POST\n")
        let client = try daemon.connectReady()
        let answer = try result(client, ["host": "post.example.com", "family": "ipv4"])
        #expect(answer["ipv4"] == ["203.0.113.80"])
        let request = try #require(upstream.requests.first)
        #expect(request.method == "POST")
        #expect(request.header("Content-Type")?.contains("application/dns-message") == true)
        #expect(!request.target.contains("dns="))
        let question = try #require(FakeDNSWire.parseQuery(request.body))
        #expect(question.name.lowercased() == "post.example.com")
        #expect(question.type == 1)
    }

    @Test func systemKindAndLocalhostNeverLeaveTheMachine() throws {
        let system = try DaemonHarness(config: "[Resolver]\nUpstream=system\n")
        let client = try system.connectReady()
        let local = try result(client, ["host": "localhost", "family": "ipv4"])
        #expect(local["ipv4"] == ["127.0.0.1"], "\(local.encodedString)")
        #expect(local["source"] == "system")
        let status = try #require(try client.call("status", [:], id: 2)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.count == 1)
        #expect(status.first?["kind"] == "system")

        // With an HTTP upstream configured, localhost still goes to the system resolver (RFC 6761).
        let upstream = try FakeHTTPServer.alibaba(answers: ["localhost": (["203.0.113.99"], [], 60)])
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\n")
        let other = try daemon.connectReady()
        let answer = try result(other, ["host": "localhost", "family": "ipv4"])
        #expect(answer["ipv4"] == ["127.0.0.1"])
        #expect(answer["source"] == "system")
        #expect(upstream.requestCount == 0)
    }

    /// An `alibaba` upstream pointed at a DoH JSON endpoint gets answers without `ips`: that is
    /// a malformed answer and the upstream's failure, not "no address" (issue 24).
    @Test func anAlibabaUpstreamAnsweredInDoHJSONIsMalformed() throws {
        let upstream = try FakeHTTPServer { request in
            let name = request.queryValue("host") ?? "x"
            let record = FakeDNSRecord(name, ttl: 60, .a("203.0.113.5"))
            let body = FakeUpstreamBodies.dohJSON(name: name, type: 1, rcode: 0, answers: [record])
            return .respond(status: 200, headers: [("Content-Type", "application/dns-json")], body: Array(body.utf8))
        }
        let daemon = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/1\n")
        let client = try daemon.connectReady()
        let failed = try response(client, ["host": "a.example.com"])
        #expect(failed["error"]?["code"] == .int(-32002), "\(failed.encodedString)")
        #expect(
            failed["error"]?["data"]?["reason"]
                == #"alibaba: malformed answer: the answer has neither "ips" nor "ipsv6""#)
        let status = try #require(try client.call("status", [:], id: 2)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.first?["healthy"] == false, "\(status)")
        #expect(status.first?["lastError"]?.stringValue?.hasPrefix("malformed answer") == true)
    }

    // MARK: failure modes

    static let fixtures = [KindFixture("alibaba"), KindFixture("tencent"), KindFixture("doh-json"), KindFixture("doh")]

    @Test(arguments: fixtures)
    func failureModes(_ fixture: KindFixture) throws {
        let upstream = try FakeHTTPServer { fixture.action(for: $0) }
        let daemon = try DaemonHarness(config: "[Resolver]\n\(fixture.upstreamLine(upstream))\nTimeout=1s\n")
        let client = try daemon.connectReady()
        let kind = fixture.kind

        let good = try response(client, ["host": "ok.example.com"])
        #expect(good["result"]?["ipv4"] == ["203.0.113.7"], "\(kind): \(good.encodedString)")
        #expect(good["result"]?["ipv6"] == ["2001:db8::7"], "\(kind): \(good.encodedString)")

        for (index, mode) in ["fail500", "close", "garbage", "wrongtypes"].enumerated() {
            let failed = try response(client, ["host": .string("\(mode).example.com")], id: 10 + index)
            #expect(failed["error"]?["code"] == .int(-32002), "\(kind) \(mode): \(failed.encodedString)")
            #expect(failed["error"]?["data"]?["name"] == "ResolutionUnavailable", "\(kind) \(mode)")
        }
        // Each of those is the upstream's failure (HTTP, transport, malformed).
        let status = try #require(try client.call("status", [:], id: 19)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.first?["healthy"] == false, "\(kind)")
        #expect(status.first?["lastError"]?.stringValue?.isEmpty == false, "\(kind)")

        // A hang is the name's until a probe confirms it, and when it is given up: the Core replay
        // scenarios' to check (probe-*.rpl, deadline-*.rpl).
        let hung = try response(client, ["host": "hang.example.com"], id: 20)
        #expect(hung["error"]?["code"] == .int(-32002), "\(kind) hang: \(hung.encodedString)")

        // Junk next to good addresses: the junk never reaches a result, wrong-family addresses neither.
        let mixed = try response(client, ["host": "mixed.example.com"], id: 22)
        let text = mixed.encodedString
        for junk in KindFixture.junk { #expect(!text.contains(junk), "\(kind): \(junk) in \(text)") }
        if fixture.kind != "doh" {
            #expect(mixed["result"]?["ipv4"] == ["203.0.113.7"], "\(kind): \(text)")
            #expect(mixed["result"]?["ipv6"] == ["2001:db8::7"], "\(kind): \(text)")
        }
    }

    @Test func alibabaErrorBodiesAreErrorsNotEmptyAnswers() throws {
        let answers: [String: (v4: [String], v6: [String], ttl: Int)] = ["a.example.com": (["203.0.113.10"], [], 60)]
        let upstream = try FakeHTTPServer.alibaba(account: "100000", answers: answers)
        // An error code inside a 200 body is still an error.
        let lenient = try FakeHTTPServer { _ in .json(#"{"code":"InvalidAccount"}"#) }
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/999999\nTimeout=1s\n")
        let client = try daemon.connectReady()
        let wrongAccount = try response(client, ["host": "a.example.com"])
        #expect(wrongAccount["error"]?["code"] == .int(-32002), "\(wrongAccount.encodedString)")
        #expect(upstream.requestCount == 1)
        let status = try #require(try client.call("status", [:], id: 2)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.first?["lastError"]?.stringValue?.contains("InvalidAccount") == true, "\(status)")

        let second = try DaemonHarness(config: "[Resolver]\nUpstream=alibaba \(lenient.baseURL)/100000\n")
        let other = try second.connectReady()
        let ok200 = try response(other, ["host": "a.example.com"])
        #expect(ok200["error"]?["code"] == .int(-32002), "\(ok200.encodedString)")
    }

    @Test func aWrongSignatureIsAnErrorAndStatusKeepsTheSecret() throws {
        let secret = "k1nds-secret-value"
        let upstream = try FakeHTTPServer.alibaba(answers: ["a.example.com": (["203.0.113.10"], [], 60)]) { _, _, _ in
            false
        }
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.alibabaURL())\nSecretKey=\(secret)\nTimeout=1s\n")
        let client = try daemon.connectReady()
        let rejected = try response(client, ["host": "a.example.com"])
        #expect(rejected["error"]?["code"] == .int(-32002), "\(rejected.encodedString)")
        #expect(upstream.requests.first?.path.hasSuffix("/sign_d") == true)
        let status = try #require(try client.call("status", [:], id: 2))
        let entry = try #require(status["result"]?["upstreams"]?.arrayValue?.first)
        #expect(entry["healthy"] == false)
        let lastError = try #require(entry["lastError"]?.stringValue)
        #expect(lastError.contains("InvalidSignature"), "\(lastError)")
        let signature = try #require(upstream.requests.first?.queryValue("s"))
        for leaked in [secret, signature] {
            #expect(!status.encodedString.contains(leaked))
            #expect(!rejected.encodedString.contains(leaked))
        }
    }

    @Test func transportFailuresOfASignedUpstreamLeakNoSecret() throws {
        let secret = "k1nds-transport-secret"
        let upstream = try FakeHTTPServer { request in
            request.queryValue("host") == "hang.example.com" ? .hang : .close
        }
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=alibaba \(upstream.baseURL)/100000\nSecretKey=\(secret)\nTimeout=1s\n")
        let client = try daemon.connectReady()
        for (index, host) in ["close.example.com", "hang.example.com"].enumerated() {
            let failed = try response(client, ["host": .string(host)], id: index)
            #expect(failed["error"]?["code"] == .int(-32002), "\(failed.encodedString)")
            let status = try #require(try client.call("status", [:], id: 10 + index))
            let lastError = try #require(status["result"]?["upstreams"]?.arrayValue?.first?["lastError"]?.stringValue)
            let signatures = upstream.requests.compactMap { $0.queryValue("s") }
            #expect(!signatures.isEmpty)
            for leaked in [secret] + signatures {
                #expect(!lastError.contains(leaked), "\(lastError)")
                #expect(!failed.encodedString.contains(leaked))
            }
        }
        daemon.stop()
        #expect(!daemon.log.contains(secret))
        for signature in upstream.requests.compactMap({ $0.queryValue("s") }) {
            #expect(!daemon.log.contains(signature))
        }
    }

    // MARK: failover and health

    @Test func aHangingFirstUpstreamFailsOverWithinOneTimeout() throws {
        let hanging = try FakeHTTPServer { _ in .hang }
        let zone = FakeDNSZone(records: [FakeDNSRecord("a.example.com", ttl: 60, .a("203.0.113.70"))])
        let working = try FakeHTTPServer.dohJSON(zone: zone)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent \(hanging.baseURL)\nUpstream=doh-json \(working.baseURL)/resolve\n"
                + "Timeout=2s\n")
        let client = try daemon.connectReady()
        let answer = try response(client, ["host": "a.example.com", "family": "ipv4"])
        #expect(hanging.requestCount == 1)
        // Upstreams are tried in order, failing over within Timeout= (each upstream's share is
        // ResolverServiceTests' to check).
        #expect(answer["result"]?["ipv4"] == ["203.0.113.70"], "\(answer.encodedString)")
        #expect(answer["result"]?["upstream"] == "doh-json")
        #expect(working.requestCount == 1)
    }

    /// A failed upstream shows in `status` (its error, the working one's latency). That it is
    /// skipped for its backoff, and tried again after, is ResolverServiceTests' to check on a
    /// manual clock: here the backoff's second would race the machine's load.
    @Test func aFailedUpstreamShowsInStatus() throws {
        let broken = try FakeHTTPServer { _ in .close }
        let working = try FakeHTTPServer.tencent(answers: ["a.example.com": (["203.0.113.1"], [], 60)])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=doh \(broken.baseURL)/dns-query\nUpstream=tencent \(working.baseURL)\n"
                + "Timeout=2s\n")
        let client = try daemon.connectReady()
        let first = try result(client, ["host": "a.example.com", "family": "ipv4"])
        #expect(first["upstream"] == "tencent")
        #expect(broken.requestCount >= 1)
        let status = try #require(try client.call("status", [:], id: 3)?["result"]?["upstreams"]?.arrayValue)
        #expect(status.map { $0["name"] } == ["doh", "tencent"])
        #expect(status[0]["healthy"] == false)
        #expect(status[0]["lastError"]?.stringValue?.isEmpty == false)
        #expect(status[1]["healthy"] == true)
        #expect(status[1]["latencyMs"]?.numberValue != nil, "\(status[1].encodedString)")
    }

    // MARK: helpers

    func response(_ client: LineClient, _ params: JSON, id: Int = 1) throws -> JSON {
        try #require(try client.call("resolve", params, id: id))
    }

    func result(_ client: LineClient, _ params: JSON, id: Int = 1) throws -> JSON {
        let response = try response(client, params, id: id)
        return try #require(response["result"], "\(response.encodedString)")
    }

    /// A response with one A record whose owner name is a compression pointer to itself.
    static func pointerLoop(answering question: FakeDNSQuestion) -> [UInt8] {
        var message = FakeDNSWire.response(to: question, rcode: 0, answers: [])
        message[7] = 1  // ANCOUNT
        let offset = message.count
        message += [0xC0 | UInt8(offset >> 8), UInt8(offset & 0xff), 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 203, 0, 113, 1]
        return message
    }

    /// A query parameter exactly as sent (not percent-decoded).
    static func rawQueryValue(_ name: String, in target: String) -> String? {
        guard let mark = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: mark)...].split(separator: "&") where pair.hasPrefix(name + "=") {
            return String(pair.dropFirst(name.count + 1))
        }
        return nil
    }
}

/// How one upstream kind carries the asked name, and its good, junk-laden and broken answers.
/// The first label of the asked name picks the behaviour (`hang.example.com` hangs, ...).
struct KindFixture: Sendable, CustomTestStringConvertible {
    let kind: String

    init(_ kind: String) { self.kind = kind }

    var testDescription: String { kind }

    /// Strings that must never appear in a result.
    static let junk = ["notanip", "999.1.1.1", "zz::zz", "203.0.113.9", "2001:db8::1\"", "198.51.100.1"]

    func upstreamLine(_ server: FakeHTTPServer) -> String {
        switch kind {
        case "alibaba": return "Upstream=alibaba \(server.baseURL)/100000"
        case "tencent": return "Upstream=tencent \(server.baseURL)"
        case "doh-json": return "Upstream=doh-json \(server.baseURL)/resolve"
        default: return "Upstream=doh \(server.baseURL)/dns-query"
        }
    }

    func action(for request: FakeHTTPRequest) -> FakeHTTPAction {
        let name: String?
        var question: FakeDNSQuestion?
        switch kind {
        case "alibaba": name = request.queryValue("host")
        case "tencent": name = request.queryValue("dn")
        case "doh-json": name = request.queryValue("name")
        default:
            question = request.queryValue("dns").flatMap(FakeBase64URL.decode).flatMap(FakeDNSWire.parseQuery)
            name = question?.name
        }
        guard let name else { return .text("", status: 400) }
        switch name.split(separator: ".").first ?? "" {
        case "fail500": return .text("internal error", status: 500)
        case "hang": return .hang
        case "close": return .close
        case "garbage":
            return .respond(status: 200, headers: [], body: [0x3c, 0x68, 0x74, 0x6d, 0x6c, 0xff, 0x00, 0x01])
        case "wrongtypes": return wrongTypes(name: name, request: request, question: question)
        case "mixed": return mixed(name: name, request: request, question: question)
        default: return good(name: name, request: request, question: question)
        }
    }

    private func good(name: String, request: FakeHTTPRequest, question: FakeDNSQuestion?) -> FakeHTTPAction {
        answer(
            name: name, request: request, question: question, v4: ["203.0.113.7"], v6: ["2001:db8::7"],
            wireV4: [.a("203.0.113.7")], wireV6: [.aaaa("2001:db8::7")])
    }

    /// Good addresses among strings that are no address, or an address of the other family.
    private func mixed(name: String, request: FakeHTTPRequest, question: FakeDNSQuestion?) -> FakeHTTPAction {
        answer(
            name: name, request: request, question: question,
            v4: ["203.0.113.7", "notanip", "999.1.1.1", "2001:db8::1"],
            v6: ["2001:db8::7", "203.0.113.9", "zz::zz"],
            // On the wire an A RDATA of 5 bytes and an AAAA of 4 bytes are the junk.
            wireV4: [.a("203.0.113.7"), .rawAddress(type: 1, rdata: [198, 51, 100, 1, 9])],
            wireV6: [.aaaa("2001:db8::7"), .rawAddress(type: 28, rdata: [203, 0, 113, 9])])
    }

    private func answer(
        name: String, request: FakeHTTPRequest, question: FakeDNSQuestion?, v4: [String], v6: [String],
        wireV4: [FakeDNSRecord.Data], wireV6: [FakeDNSRecord.Data]
    ) -> FakeHTTPAction {
        switch kind {
        case "alibaba":
            let body: JSON = [
                "host": .string(name), "ips": .array(v4.map { .string($0) }), "ipsv6": .array(v6.map { .string($0) }),
                "ttl": 60,
            ]
            return .json(body.encodedString)
        case "tencent":
            return .text(FakeUpstreamBodies.tencent(v4: v4, v6: v6, ttl: 60, type: request.queryValue("type")))
        case "doh-json":
            let type = Int(request.queryValue("type") ?? "") ?? 0
            let rows = (type == 1 ? v4 : v6).map { FakeDNSRecord(name, ttl: 60, type == 1 ? .a($0) : .aaaa($0)) }
            // Each row claims the asked type, whatever its data is.
            let body = FakeUpstreamBodies.dohJSON(name: name, type: type, rcode: 0, answers: rows)
            return .json(body)
        default:
            guard let question else { return .text("", status: 400) }
            let data = question.type == 1 ? wireV4 : wireV6
            let records = data.map { FakeDNSRecord(question.name, ttl: 60, $0) }
            return .dnsMessage(FakeDNSWire.response(to: question, rcode: 0, answers: records))
        }
    }

    /// Bodies of the right syntax but the wrong shape.
    private func wrongTypes(name: String, request: FakeHTTPRequest, question: FakeDNSQuestion?) -> FakeHTTPAction {
        switch kind {
        case "alibaba":
            return .json(#"{"host":"\#(name)","ips":"203.0.113.1","ipsv6":{"a":1},"ttl":"sixty"}"#)
        case "tencent":
            return .text("203.0.113.1,sixty")
        case "doh-json":
            return .json(#"{"Status":"0","Answer":{"type":1,"data":"203.0.113.1"}}"#)
        default:
            // A response that announces an answer record and is cut off inside it.
            guard let question else { return .text("", status: 400) }
            let full = FakeDNSWire.response(
                to: question, rcode: 0, answers: [FakeDNSRecord(question.name, ttl: 60, .a("203.0.113.1"))])
            return .dnsMessage(Array(full.dropLast(3)))
        }
    }
}
