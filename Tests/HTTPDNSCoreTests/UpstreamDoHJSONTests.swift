import HTTPDNSCore
import HTTPDNSProtocol
import Testing

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
private func addresses(_ texts: [String]) -> [IPAddress] { texts.compactMap { IPAddress($0) } }

struct DoHJSONTests {
    @Test func requests() {
        let google = DoHJSON(baseURL: "https://dns.google/resolve")
        let request = google.request(host: "example.com", type: .aaaa)
        #expect(request.url == "https://dns.google/resolve?name=example.com&type=28")
        #expect(request.headers == [UpstreamHeader("Accept", "application/dns-json")])
        #expect(request.method == .get)
        let withQuery = DoHJSON(baseURL: "https://223.5.5.5/resolve?uid=1")
        #expect(withQuery.request(host: "a.com", type: .a).url == "https://223.5.5.5/resolve?uid=1&name=a.com&type=1")
    }

    @Test func familyQueries() {
        #expect(DNSRecordType.types(for: .both) == [.a, .aaaa])
        #expect(DNSRecordType.types(for: .ipv4) == [.a])
        #expect(DNSRecordType.types(for: .ipv6) == [.aaaa])
    }

    /// Cloudflare's documented example answer.
    @Test func parsesDocumentedAnswer() {
        let body = """
            {"Status":0,"TC":false,"RD":true,"RA":true,"AD":true,"CD":false,
             "Question":[{"name":"example.com.","type":28}],
             "Answer":[{"name":"example.com.","type":28,"TTL":1726,"data":"2606:2800:220:1:248:1893:25c8:1946"}]}
            """
        #expect(
            DoHJSON.parse(status: 200, body: bytes(body), type: .aaaa)
                == .success(UpstreamAnswer(ipv6: addresses(["2606:2800:220:1:248:1893:25c8:1946"]), ttl: 1726)))
    }

    @Test func skipsCNAMERowsAndTakesMinimumTTL() {
        let body = """
            {"Status":0,"Answer":[
             {"name":"www.example.com.","type":5,"TTL":10,"data":"cdn.example.net."},
             {"name":"cdn.example.net.","type":1,"TTL":300,"data":"192.0.2.1"},
             {"name":"cdn.example.net.","type":1,"TTL":200,"data":"192.0.2.2"},
             {"name":"cdn.example.net.","type":28,"TTL":5,"data":"2001:db8::1"}]}
            """
        #expect(
            DoHJSON.parse(status: 200, body: bytes(body), type: .a)
                == .success(UpstreamAnswer(ipv4: addresses(["192.0.2.1", "192.0.2.2"]), ttl: 200)))
    }

    @Test func nxdomainAndErrors() {
        let nx = #"{"Status":3,"Authority":[{"name":"com.","type":6,"TTL":900,"data":"a.gtld-servers.net. ..."}]}"#
        #expect(
            DoHJSON.parse(status: 200, body: bytes(nx), type: .a)
                == .success(UpstreamAnswer(ttl: 900, nameExists: false)))
        #expect(
            DoHJSON.parse(status: 200, body: bytes(#"{"Status":2}"#), type: .a)
                == .failure(UpstreamError(.dnsStatus(2))))
        #expect(
            DoHJSON.parse(status: 400, body: bytes(#"{"Status":0}"#), type: .a)
                == .failure(UpstreamError(.httpStatus(400))))
        #expect(
            DoHJSON.parse(status: 200, body: bytes(#"{"Status":0,"TC":true}"#), type: .a)
                == .failure(UpstreamError(.truncated)))
    }

    @Test func noAnswerIsNodata() throws {
        let answer = try DoHJSON.parse(status: 200, body: bytes(#"{"Status":0}"#), type: .aaaa).get()
        #expect(answer.isEmpty)
        #expect(answer.nameExists)
    }

    @Test func malformedBodies() {
        for body in [
            "", "nope", #"{"Answer":[]}"#, #"{"Status":"0"}"#, #"{"Status":0,"Answer":{}}"#,
            #"{"Status":0,"Answer":[{"type":1,"TTL":5,"data":"not-an-ip"}]}"#,
            #"{"Status":0,"Answer":[{"type":1,"TTL":5,"data":"2001:db8::1"}]}"#,
        ] {
            guard case .failure(let error) = DoHJSON.parse(status: 200, body: bytes(body), type: .a),
                case .malformed = error.code
            else {
                Issue.record("'\(body)' must be malformed")
                continue
            }
        }
    }

    @Test func combiningTwoFamilies() {
        let v4 = UpstreamAnswer(ipv4: addresses(["192.0.2.1"]), ttl: 300)
        let v6 = UpstreamAnswer(ipv6: addresses(["2001:db8::1"]), ttl: 60)
        // Each family keeps its own query's TTL; the answer's `ttl` is the smaller.
        let combined = UpstreamAnswer.combining(ipv4: v4, ipv6: v6)
        #expect(
            combined
                == UpstreamAnswer(
                    ipv4: addresses(["192.0.2.1"]), ipv6: addresses(["2001:db8::1"]), ipv4TTL: 300, ipv6TTL: 60))
        #expect(combined.ttl == 60)
        let gone = UpstreamAnswer(ttl: 30, nameExists: false)
        #expect(UpstreamAnswer.combining(ipv4: gone, ipv6: gone).nameExists == false)
        #expect(UpstreamAnswer.combining(ipv4: v4, ipv6: gone).nameExists)
    }
}
