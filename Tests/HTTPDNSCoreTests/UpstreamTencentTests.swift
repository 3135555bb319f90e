import HTTPDNSCore
import HTTPDNSProtocol
import Testing

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
private func addresses(_ texts: [String]) -> [IPAddress] { texts.compactMap { IPAddress($0) } }

struct TencentHTTPDNSTests {
    @Test func requestURLs() {
        let codec = TencentHTTPDNS(baseURL: "http://119.29.29.99/")
        #expect(codec.request(host: "www.qq.com", family: .ipv4).url == "http://119.29.29.99/d?dn=www.qq.com&ttl=1")
        #expect(
            codec.request(host: "www.qq.com", family: .ipv6).url
                == "http://119.29.29.99/d?dn=www.qq.com&ttl=1&type=aaaa")
        #expect(
            codec.request(host: "www.qq.com", family: .both).url
                == "http://119.29.29.99/d?dn=www.qq.com&ttl=1&type=addrs")
    }

    /// The grammar's documented example: `ip;ip,TTL|clientIP`.
    @Test func parsesSingleFamilyWithClientIP() {
        let result = TencentHTTPDNS.parse(
            status: 200, body: bytes("123.59.226.2;123.59.226.3,303|59.37.125.43"), family: .ipv4)
        #expect(result == .success(UpstreamAnswer(ipv4: addresses(["123.59.226.2", "123.59.226.3"]), ttl: 303)))
    }

    @Test func parsesAAAA() {
        let result = TencentHTTPDNS.parse(status: 200, body: bytes("2001:db8::1;2001:DB8::2,300\n"), family: .ipv6)
        #expect(result == .success(UpstreamAnswer(ipv6: addresses(["2001:db8::1", "2001:db8::2"]), ttl: 300)))
    }

    @Test func bothFamiliesKeepTheirOwnTTL() throws {
        let result = TencentHTTPDNS.parse(
            status: 200, body: bytes("1.2.3.4;1.2.3.5,120-2402:4e00:1020::1;2402:4e00:1020::2,60|1.1.1.1"),
            family: .both)
        #expect(
            result
                == .success(
                    UpstreamAnswer(
                        ipv4: addresses(["1.2.3.4", "1.2.3.5"]),
                        ipv6: addresses(["2402:4e00:1020::1", "2402:4e00:1020::2"]),
                        ipv4TTL: 120, ipv6TTL: 60)))
        #expect(try result.get().ttl == 60)
        // A family sent without a TTL takes the other's.
        let oneTTL = try TencentHTTPDNS.parse(status: 200, body: bytes("1.2.3.4-2001:db8::1,90"), family: .both).get()
        #expect(oneTTL.ipv4TTL == 90 && oneTTL.ipv6TTL == 90)
    }

    @Test func oneFamilyMayBeMissing() {
        #expect(
            TencentHTTPDNS.parse(status: 200, body: bytes("1.2.3.4,120-"), family: .both)
                == .success(UpstreamAnswer(ipv4: addresses(["1.2.3.4"]), ttl: 120)))
        #expect(
            TencentHTTPDNS.parse(status: 200, body: bytes("0-2001:db8::1,90"), family: .both)
                == .success(UpstreamAnswer(ipv6: addresses(["2001:db8::1"]), ttl: 90)))
    }

    @Test func emptyBodyIsNoAnswer() throws {
        for body in ["", "\n", "  "] {
            let answer = try TencentHTTPDNS.parse(status: 200, body: bytes(body), family: .ipv4).get()
            #expect(answer.isEmpty)
        }
    }

    @Test func bareAnswerWithoutTTLGetsTheDefault() {
        #expect(
            TencentHTTPDNS.parse(status: 200, body: bytes("1.2.3.4;5.6.7.8"), family: .ipv4)
                == .success(UpstreamAnswer(ipv4: addresses(["1.2.3.4", "5.6.7.8"]), ttl: UpstreamAnswer.defaultTTL)))
    }

    @Test func junkAndBadTTLAreMalformed() {
        for body in ["error", "1.2.3.4,abc", "<html></html>", "1.2.3.4,-5", "::1,30"] {
            guard case .failure(let error) = TencentHTTPDNS.parse(status: 200, body: bytes(body), family: .ipv4),
                case .malformed = error.code
            else {
                Issue.record("'\(body)' must be malformed")
                continue
            }
        }
    }

    @Test func wrongFamilyEntriesAreDropped() {
        #expect(
            TencentHTTPDNS.parse(status: 200, body: bytes("1.2.3.4;2001:db8::1,30"), family: .ipv4)
                == .success(UpstreamAnswer(ipv4: addresses(["1.2.3.4"]), ttl: 30)))
    }

    @Test func httpErrors() {
        #expect(
            TencentHTTPDNS.parse(status: 500, body: bytes("1.2.3.4,30"), family: .ipv4)
                == .failure(UpstreamError(.httpStatus(500))))
    }
}
