import HTTPDNSCore
import HTTPDNSProtocol
import Testing

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
private func addresses(_ texts: [String]) -> [IPAddress] { texts.compactMap { IPAddress($0) } }

struct AlibabaV1Tests {
    @Test func unsignedSingleRequest() {
        let codec = AlibabaV1(baseURL: "http://203.107.1.1/100000/")
        #expect(!codec.isSigned)
        let request = codec.resolveRequest(host: "www.aliyun.com", family: .both, now: 1_700_000_000)
        #expect(request.method == .get)
        #expect(request.url == "http://203.107.1.1/100000/d?host=www.aliyun.com&query=4,6")
        #expect(
            codec.resolveRequest(host: "a.com", family: .ipv4, now: 0).url
                == "http://203.107.1.1/100000/d?host=a.com&query=4")
        #expect(
            codec.resolveRequest(host: "a.com", family: .ipv6, now: 0).url
                == "http://203.107.1.1/100000/d?host=a.com&query=6")
    }

    /// s = md5("www.aliyun.com-s3cr3t-1700001800"), computed with `printf ... | md5sum`.
    @Test func signedSingleRequest() {
        let codec = AlibabaV1(baseURL: "http://203.107.1.1/100000", secret: "s3cr3t")
        #expect(codec.isSigned)
        let request = codec.resolveRequest(host: "www.aliyun.com", family: .both, now: 1_700_000_000)
        #expect(
            request.url
                == "http://203.107.1.1/100000/sign_d?host=www.aliyun.com&query=4,6&t=1700001800"
                + "&s=ddfd6c90a1eb1c60b10089aa27545e14")
        #expect(!request.url.contains("s3cr3t"))
        #expect(
            AlibabaV1.signature(of: "www.aliyun.com", secret: "s3cr3t", expiry: 1_700_001_800)
                == "ddfd6c90a1eb1c60b10089aa27545e14")
    }

    @Test func printingNeverShowsTheSecret() {
        let codec = AlibabaV1(baseURL: "http://203.107.1.1/100000", secret: "s3cr3t")
        var dumped = ""
        dump(codec, to: &dumped)
        for text in [String(describing: codec), String(reflecting: codec), "\(codec)", dumped] {
            #expect(!text.contains("s3cr3t"), "\(text)")
            #expect(text.contains("203.107.1.1"))
        }
    }

    @Test func emptySecretMeansUnsigned() {
        #expect(!AlibabaV1(baseURL: "http://x/1", secret: "").isSigned)
    }

    /// The batch signature covers the comma-joined host list: md5("a.example.com,b.example.com-s3cr3t-1700001800").
    @Test func signedBatchRequest() {
        let codec = AlibabaV1(baseURL: "http://203.107.1.1/100000", secret: "s3cr3t")
        let request = codec.batchRequest(hosts: ["a.example.com", "b.example.com"], now: 1_700_000_000)
        #expect(
            request.url
                == "http://203.107.1.1/100000/sign_resolve?host=a.example.com,b.example.com&query=4,6"
                + "&t=1700001800&s=8f8410adfdbe5d4e65f8b47949fb62e6")
        let unsigned = AlibabaV1(baseURL: "http://203.107.1.1/100000").batchRequest(hosts: ["a.com"], now: 0)
        #expect(unsigned.url == "http://203.107.1.1/100000/resolve?host=a.com&query=4,6")
    }

    @Test func batchesHoldAtMostFiveHosts() {
        let hosts = (1...12).map { "h\($0).com" }
        let batches = AlibabaV1.batches(hosts)
        #expect(batches.map(\.count) == [5, 5, 2])
        #expect(batches.flatMap { $0 } == hosts)
        #expect(AlibabaV1.batches([]).isEmpty)
    }

    /// The documented success body (with the doc's masked "XX" octets filled in).
    @Test func parsesDocumentedSingleAnswer() {
        let body =
            #"{"host":"www.aliyun.com","ips":["192.168.1.234"],"ipsv6":["2400:3200:1300:0:0:0:1:1"],"ttl":57,"origin_ttl":120}"#
        let result = AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .both)
        #expect(
            result
                == .success(
                    UpstreamAnswer(
                        ipv4: addresses(["192.168.1.234"]), ipv6: addresses(["2400:3200:1300::1:1"]), ttl: 57)))
    }

    @Test func takesOnlyTheFamiliesAskedFor() {
        let body = #"{"host":"a.com","ips":["1.2.3.4"],"ipsv6":["2001:db8::1"],"ttl":30}"#
        #expect(
            AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .ipv4)
                == .success(UpstreamAnswer(ipv4: addresses(["1.2.3.4"]), ttl: 30)))
        #expect(
            AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .ipv6)
                == .success(UpstreamAnswer(ipv6: addresses(["2001:db8::1"]), ttl: 30)))
    }

    @Test func ttlFallsBackToOriginTTLThenDefault() throws {
        let origin = #"{"host":"a.com","ips":["1.2.3.4"],"origin_ttl":120}"#
        #expect(try AlibabaV1.parseResolve(status: 200, body: bytes(origin), family: .ipv4).get().ttl == 120)
        let none = #"{"host":"a.com","ips":["1.2.3.4"]}"#
        #expect(
            try AlibabaV1.parseResolve(status: 200, body: bytes(none), family: .ipv4).get().ttl
                == UpstreamAnswer.defaultTTL)
    }

    @Test func emptyListMeansNoAddress() throws {
        let body = #"{"host":"a.com","ips":[],"ttl":60}"#
        let answer = try AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .ipv4).get()
        #expect(answer.isEmpty)
        #expect(answer.nameExists)
    }

    @Test func dropsJunkButKeepsValidAddresses() {
        let body = #"{"host":"a.com","ips":["1.2.3.4","evil.example","1.2.3.999",5,"2001:db8::1"," 5.6.7.8"],"ttl":9}"#
        #expect(
            AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .ipv4)
                == .success(UpstreamAnswer(ipv4: addresses(["1.2.3.4", "5.6.7.8"]), ttl: 9)))
    }

    @Test func allJunkIsMalformedNotEmpty() {
        let body = #"{"host":"a.com","ips":["<script>","::1",null],"ttl":9}"#
        guard case .failure(let error) = AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .ipv4),
            case .malformed = error.code
        else {
            Issue.record("an answer of junk must be malformed")
            return
        }
    }

    @Test(arguments: [
        (403, #"{"code":"InvalidAccount"}"#, "InvalidAccount"),
        (200, #"{"code":"InvalidHost"}"#, "InvalidHost"),
        (403, #"{"code":"SignatureExpired"}"#, "SignatureExpired"),
        (400, #"{"code":"TooManyHosts"}"#, "TooManyHosts"),
        (500, #"{"code":"InternalError"}"#, "InternalError"),
    ])
    func errorBodiesAreErrors(status: Int, body: String, code: String) {
        #expect(
            AlibabaV1.parseResolve(status: status, body: bytes(body), family: .both)
                == .failure(UpstreamError(.serviceError(code: code))))
    }

    @Test func nonJSONBodies() {
        #expect(
            AlibabaV1.parseResolve(status: 502, body: bytes("<html>bad gateway</html>"), family: .both)
                == .failure(UpstreamError(.httpStatus(502))))
        for body in ["not json", "[1,2]", "", #""ips""#] {
            guard case .failure(let error) = AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .both),
                case .malformed = error.code
            else {
                Issue.record("\(body) must be malformed")
                continue
            }
        }
    }

    @Test func wrongShapeOfIPsIsMalformed() {
        let body = #"{"host":"a.com","ips":"1.2.3.4","ttl":9}"#
        guard case .failure(let error) = AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .ipv4),
            case .malformed = error.code
        else {
            Issue.record("a string in place of the list must be malformed")
            return
        }
    }

    @Test func negativeTTLIsClampedToZero() throws {
        let body = #"{"host":"a.com","ips":["1.2.3.4"],"ttl":-5}"#
        #expect(try AlibabaV1.parseResolve(status: 200, body: bytes(body), family: .ipv4).get().ttl == 0)
    }

    /// The documented batch body shape.
    @Test func parsesBatch() throws {
        let body = """
            {"dns":[{"host":"www.aliyun.com","client_ip":"42.120.74.1","ips":["106.11.91.1"],"ttl":106,"origin_ttl":120},
            {"host":"WWW.Taobao.com","ips":["2.2.2.2","2.2.2.3"],"ttl":50},
            {"host":"www.tmall.com","ipsv6":["2001:db8::5"],"type":28,"ttl":40},
            {"host":"www.tmall.com","ips":["3.3.3.3"],"type":1,"ttl":70},
            {"host":"bad.com","ips":["junk"],"ttl":70},
            {"ips":["4.4.4.4"]}]}
            """
        let answers = try AlibabaV1.parseBatch(status: 200, body: bytes(body)).get()
        #expect(answers.count == 3)
        #expect(answers["www.aliyun.com"] == UpstreamAnswer(ipv4: addresses(["106.11.91.1"]), ttl: 106))
        #expect(answers["www.taobao.com"] == UpstreamAnswer(ipv4: addresses(["2.2.2.2", "2.2.2.3"]), ttl: 50))
        // A host listed once per family keeps each family's own TTL.
        #expect(
            answers["www.tmall.com"]
                == UpstreamAnswer(
                    ipv4: addresses(["3.3.3.3"]), ipv6: addresses(["2001:db8::5"]), ipv4TTL: 70, ipv6TTL: 40))
        #expect(answers["www.tmall.com"]?.ttl == 40)
        #expect(answers["bad.com"] == nil)
    }

    @Test func batchErrors() {
        #expect(
            AlibabaV1.parseBatch(status: 403, body: bytes(#"{"code":"InvalidAccount"}"#))
                == .failure(UpstreamError(.serviceError(code: "InvalidAccount"))))
        guard case .failure(let error) = AlibabaV1.parseBatch(status: 200, body: bytes(#"{"host":"a.com"}"#)),
            case .malformed = error.code
        else {
            Issue.record("a batch answer without \"dns\" must be malformed")
            return
        }
    }

    @Test func errorDescriptionsAreOneSanitizedLine() {
        let hostile = UpstreamError(.serviceError(code: "Bad\ncode\u{7}" + String(repeating: "x", count: 500)))
        #expect(!hostile.description.contains("\n"))
        #expect(hostile.description.count < 200)
        #expect(UpstreamError(.timeout).description == "timed out")
        #expect(UpstreamError(.httpStatus(503)).description == "HTTP status 503")
    }
}

/// An answer that is not Alibaba's is malformed, not "no address".
struct AlibabaForeignAnswerTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aDoHAnswerIsMalformedNotEmpty() {
        let doh = #"{"Status":0,"TC":false,"Answer":[{"name":"a.com.","type":1,"TTL":60,"data":"192.0.2.1"}]}"#
        for family in [AddressFamily.ipv4, .ipv6, .both] {
            guard case .failure(let error) = AlibabaV1.parseResolve(status: 200, body: Self.bytes(doh), family: family)
            else {
                Issue.record("\(family): a DoH body must not parse as an answer")
                continue
            }
            #expect(error.description == #"malformed answer: the answer has neither "ips" nor "ipsv6""#)
        }
        // Alibaba's own "no address" keeps its lists, empty or null.
        #expect(
            (try? AlibabaV1.parseResolve(status: 200, body: Self.bytes(#"{"host":"a.com","ips":[]}"#), family: .both)
                .get().isEmpty) == true)
        #expect(
            (try? AlibabaV1.parseResolve(
                status: 200, body: Self.bytes(#"{"host":"a.com","ipsv6":null,"ttl":5}"#), family: .ipv4
            ).get().isEmpty) == true)
    }

    /// A service error code is shown only when it is a code: one echoing the signed query would
    /// put the signature in every user's `status`.
    @Test func aServiceCodeThatIsNoCodeIsNotShown() {
        #expect(UpstreamError(.serviceError(code: "InvalidAccount")).description == "service error InvalidAccount")
        for code in ["/100/d?host=a.com&t=1800000000&s=0123abcd", "", String(repeating: "A", count: 65), "a b"] {
            #expect(UpstreamError(.serviceError(code: code)).description == "service error (not a code)", "\(code)")
        }
        let echoed = AlibabaV1.parseResolve(
            status: 403, body: Self.bytes(#"{"code":"/100/d?host=a.com&t=1&s=feed"}"#), family: .ipv4)
        guard case .failure(let error) = echoed else {
            Issue.record("an error code must fail the answer")
            return
        }
        #expect(error.description == "service error (not a code)")
    }

    /// Which failures are the name's (a zone's owner can cause them) and which the upstream's.
    @Test func nameLevelFailures() {
        for code: UpstreamError.Code in [
            .dnsStatus(2), .dnsStatus(5), .serviceError(code: "InvalidHost"), .truncated, .responseTooLarge,
            .unusableChain("CNAME loop"),
        ] {
            #expect(UpstreamError(code).isNameLevel, "\(code)")
        }
        for code: UpstreamError.Code in [
            .dnsStatus(1), .dnsStatus(4), .serviceError(code: "InvalidAccount"), .httpStatus(500), .malformed("x"),
            .transport("reset"), .timeout,
        ] {
            #expect(!UpstreamError(code).isNameLevel, "\(code)")
        }
    }
}
