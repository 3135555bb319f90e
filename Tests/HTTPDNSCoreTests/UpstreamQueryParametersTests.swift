import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// `ClientIP=` and `SDNS=`: what each HTTPDNS form puts in its queries, and what the file
/// accepts. The v2 signature and the DES ciphertext were computed apart from the daemon, with
/// Python's `hmac` and `cryptography` (`TripleDES` with one 8-byte key is single DES).
struct UpstreamQueryParametersTests {
    static let parameters = UpstreamQueryParameters(
        clientIP: "198.51.100.7", sdns: [SDNSParameter(key: "region", value: "north_1")])

    @Test func v2SignsCipAndSDNSInClear() throws {
        let codec = try #require(
            AlibabaV2(
                baseURL: "http://203.0.113.1/100000", secret: AlibabaV2Tests.secret, parameters: Self.parameters,
                ciphers: LibCryptoTestCiphers()))
        let request = try codec.request(hosts: ["www.aliyun.com"], family: .ipv4, expiry: 1_534_316_400)
        #expect(
            request.url
                == "http://203.0.113.1/v2/d?id=100000&m=0&dn=www.aliyun.com&q=4&cip=198.51.100.7"
                + "&sdns-region=north_1&exp=1534316400&v=1.0"
                + "&s=cebbaf1ab225fd6f26552d849e0de7df0b43914a7708f8e4afe0644534e1798f")
    }

    @Test func encryptedV2CarriesThemInsideEnc() throws {
        let ciphers = LibCryptoTestCiphers()
        let key = try #require(hexBytes(AlibabaV2EncryptedTests.aesKey))
        let codec = try #require(
            AlibabaV2(
                baseURL: "http://203.0.113.1/100000", secret: AlibabaV2Tests.secret, mode: .aesCBC,
                aesKey: AlibabaV2EncryptedTests.aesKey, parameters: Self.parameters, ciphers: ciphers))
        let url = try codec.request(hosts: ["a.example.com"], family: .both, expiry: 1).url
        #expect(!url.contains("198.51.100.7") && !url.contains("sdns"), "\(url)")
        let enc = try #require(url.split(separator: "&").first { $0.hasPrefix("enc=") }?.dropFirst(4))
        let sealed = try #require(hexBytes(String(enc)))
        let plaintext = try ciphers.aes128CBC(
            encrypt: false, Array(sealed[16...]), key: key, iv: Array(sealed[..<16]))
        #expect(
            String(decoding: plaintext, as: UTF8.self)
                == #"{"dn":"a.example.com","q":"4,6","cip":"198.51.100.7","sdns-region":"north_1"}"#)
    }

    @Test func v1SendsThemUnsignedAfterTheNames() {
        let plain = AlibabaV1(baseURL: "http://203.0.113.1/100000", secret: "IAmASecret")
        let withParameters = AlibabaV1(
            baseURL: "http://203.0.113.1/100000", secret: "IAmASecret", parameters: Self.parameters)
        let a = plain.resolveRequest(host: "www.aliyun.com", family: .ipv4, now: 1_534_314_600).url
        let b = withParameters.resolveRequest(host: "www.aliyun.com", family: .ipv4, now: 1_534_314_600).url
        // v1 signs the host alone: the documented vector's signature stays.
        #expect(a.hasSuffix("&t=1534316400&s=60c71e98b6d7fcbb366243e224eab457"), "\(a)")
        #expect(
            b == "http://203.0.113.1/100000/sign_d?host=www.aliyun.com&query=4&ip=198.51.100.7&sdns-region=north_1"
                + "&t=1534316400&s=60c71e98b6d7fcbb366243e224eab457")
        let batch = withParameters.batchRequest(hosts: ["a.example.com", "b.example.com"], now: 0).url
        #expect(batch.contains("/sign_resolve?host=a.example.com,b.example.com&query=4,6&ip=198.51.100.7&"), "\(batch)")
    }

    @Test func tencentEncryptsTheClientIPAsTheNames() throws {
        let des = TencentPaidHTTPDNS(
            baseURL: "http://119.29.29.98", credential: .des(authID: "1", key: Array("k3y-8byt".utf8)),
            clientIP: "198.51.100.7", ciphers: LibCryptoTestCiphers())
        let url = try des.request(hosts: ["a.example.com"], family: .ipv4).url
        #expect(url.contains("&id=1&alg=des&ip=a425eb83e9927cd2e33a2f957098eb7c&"), "\(url)")
        let token = TencentPaidHTTPDNS(
            baseURL: "https://119.29.29.99", credential: .token("t"), clientIP: "2001:db8::7",
            ciphers: LibCryptoTestCiphers())
        #expect(try token.request(hosts: ["a.example.com"], family: .ipv4).url.contains("&ip=2001%3Adb8%3A%3A7"))
        let free = TencentHTTPDNS(baseURL: "http://119.29.29.29", clientIP: "198.51.100.7")
        #expect(
            free.request(host: "a.example.com", family: .ipv4).url
                == "http://119.29.29.29/d?dn=a.example.com&ttl=1&ip=198.51.100.7")
    }

    // MARK: the file

    static let upstreams =
        "[Resolver]\nUpstream=alibaba http://203.0.113.1/100000\nUpstream=tencent http://119.29.29.29\n"
        + "Upstream=alibaba http://203.0.113.2/100000\nUpstream=doh https://127.0.0.1/dns-query\n"

    func parse(_ text: String) -> Result<(DaemonConfiguration, [ConfigWarning]), ConfigProblems> {
        DaemonConfiguration.parse(text: Self.upstreams + text, path: "/x.conf")
    }

    func messages(_ text: String) -> [String] {
        guard case .failure(let problems) = parse(text) else { return [] }
        return problems.errors.map(\.message)
    }

    @Test func eachUpstreamGetsItsOwnParameters() throws {
        let configuration = try parse(
            "ClientIP=alibaba#2 198.51.100.7\nClientIP=tencent 2001:DB8:0::7\nSDNS=alibaba#2 region=north_1 a=b==\n"
        ).get().0
        let byName = Dictionary(uniqueKeysWithValues: configuration.resolver.upstreams.map { ($0.name, $0.parameters) })
        #expect(byName["alibaba"]?.isEmpty == true)
        #expect(byName["tencent"] == UpstreamQueryParameters(clientIP: "2001:db8::7"))
        #expect(
            byName["alibaba#2"]
                == UpstreamQueryParameters(
                    clientIP: "198.51.100.7",
                    sdns: [SDNSParameter(key: "region", value: "north_1"), SDNSParameter(key: "a", value: "b==")]))
        // An empty assignment removes the lines before it.
        let reset = try parse("ClientIP=tencent 198.51.100.7\nClientIP=\n").get().0
        #expect(reset.resolver.upstreams.allSatisfy { $0.parameters.isEmpty })
    }

    @Test func whatAnUpstreamCannotCarryIsRefused() {
        #expect(
            messages("ClientIP=doh 198.51.100.7\n") == [
                "doh takes no client address (only alibaba and tencent upstreams do)"
            ])
        #expect(messages("SDNS=tencent a=b\n") == ["tencent takes no SDNS parameters (only alibaba upstreams do)"])
        #expect(messages("ClientIP=alibab 198.51.100.7\n").first?.contains("did you mean alibaba?") == true)
        #expect(messages("ClientIP=alibaba 198.51.100\n").first?.contains("invalid IP address") == true)
        #expect(messages("ClientIP=alibaba\n").first?.contains("expected UPSTREAM ADDRESS") == true)
        #expect(
            messages("ClientIP=alibaba 198.51.100.7\nClientIP=alibaba 198.51.100.8\n") == [
                "alibaba has a client address already"
            ])
        #expect(messages("SDNS=alibaba a.b=c\n").first?.contains("invalid SDNS key") == true)
        #expect(messages("SDNS=alibaba a=b&c\n").first?.contains("invalid SDNS value") == true)
        #expect(messages("SDNS=alibaba a=b a=c\n").first?.contains("given twice") == true)
        let long = (0..<60).map { "key\($0)=value_\($0)" }.joined(separator: " ")
        #expect(messages("SDNS=alibaba \(long)\n") == ["the SDNS parameters are over 1000 bytes"])
    }
}

/// The bytes of even-length hexadecimal text.
func hexBytes(_ text: String) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    return stride(from: 0, to: digits.count, by: 2).compactMap {
        UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)
    }
}
