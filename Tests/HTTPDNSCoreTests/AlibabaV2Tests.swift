import HTTPDNSCore
import HTTPDNSCrypto
import HTTPDNSProtocol
import Testing

/// Alibaba's v2 codec. The signatures below were computed apart from the daemon, with Python's
/// `hmac` (`hmac.new(bytes.fromhex(secret), content.encode(), hashlib.sha256).hexdigest()`).
struct AlibabaV2Tests {
    static let secret = "00112233445566778899aabbccddeeff"

    static func codec(_ url: String = "http://203.0.113.1/100000") throws -> AlibabaV2 {
        try #require(AlibabaV2(baseURL: url, secret: secret, ciphers: LibCryptoTestCiphers()))
    }

    @Test func theSignedContentIsSortedWithEmptyValuesLeftOut() {
        let content = AlibabaV2.signedContent([
            ("v", "1.0"), ("tags", ""), ("id", "1"), ("sdns-a", "x"), ("exp", "9"), ("enc", ""),
        ])
        #expect(content == "exp=9&id=1&sdns-a=x&v=1.0")
    }

    @Test func aOneNameRequestCarriesTheIndependentlyComputedSignature() throws {
        let request = try Self.codec().request(hosts: ["www.aliyun.com"], family: .ipv4, expiry: 1_534_316_400)
        #expect(
            request.url
                == "http://203.0.113.1/v2/d?id=100000&m=0&dn=www.aliyun.com&q=4&exp=1534316400&v=1.0"
                + "&s=b3cb02f8a93b724895af24e964f3d9b5b29ca40cf48d0ef7a15c6912ce4f4024")
    }

    @Test func aBatchSignsTheCommaJoinedNamesAsSent() throws {
        let codec = try Self.codec("http://127.0.0.1:8080/139450/")
        #expect(codec.origin == "http://127.0.0.1:8080" && codec.accountID == "139450")
        let request = try codec.request(
            hosts: ["a.example.com", "b.example.com"], family: .both, expiry: 1_700_000_600)
        let s = try #require(request.url.split(separator: "&").last)
        #expect(s == "s=74069e1d64f3b3a47d1183a298f0917018b2bf7e9ff31ba8a797f93dd0592b92", "\(request.url)")
        #expect(
            request.url.hasPrefix("http://127.0.0.1:8080/v2/d?id=139450&m=0&dn=a.example.com%2Cb.example.com&q=4%2C6"))
    }

    @Test func aSecretThatIsNotHexOrAURLWithoutAnAccountIsRefused() {
        #expect(
            AlibabaV2(baseURL: "http://203.0.113.1/1", secret: "IAmASecret", ciphers: LibCryptoTestCiphers()) == nil)
        #expect(AlibabaV2(baseURL: "http://203.0.113.1", secret: Self.secret, ciphers: LibCryptoTestCiphers()) == nil)
        #expect(
            AlibabaV2(baseURL: "http://203.0.113.1/1?x=1", secret: Self.secret, ciphers: LibCryptoTestCiphers()) == nil)
    }

    @Test func theAnswerGivesEachNameItsFamiliesAndTTLs() throws {
        let body = """
            {"code":"success","mode":0,"data":{"cip":"198.51.100.7","answers":[
             {"dn":"A.example.com","v4":{"ips":["203.0.113.5","bogus"],"ttl":120},
              "v6":{"ips":[],"ttl":30,"no_ip_code":"RRNotExist"}},
             {"dn":"b.example.com","v4":{"ips":["203.0.113.6"],"ttl":60},"v6":{"ips":["2001:db8::6"],"ttl":90}},
             {"dn":"c.example.com"},
             {"dn":"not a name!","v4":{"ips":["203.0.113.9"],"ttl":60}}]}}
            """
        let answers = try Self.codec().parseBatch(status: 200, body: Array(body.utf8)).get()
        #expect(Set(answers.keys) == ["a.example.com", "b.example.com"])
        let a = try #require(answers["a.example.com"])
        #expect(a.ipv4.map(\.description) == ["203.0.113.5"] && a.ipv4TTL == 120 && a.ipv6.isEmpty)
        let b = try #require(answers["b.example.com"])
        #expect(b.ipv6.map(\.description) == ["2001:db8::6"] && b.ipv6TTL == 90 && b.ipv4TTL == 60)
        let onlyV6 = try Self.codec().parseBatch(status: 200, body: Array(body.utf8), family: .ipv6).get()
        #expect(onlyV6["b.example.com"]?.ipv4 == [])
        #expect(AlibabaV2.answer(for: "z.example.com", in: answers).isEmpty)
    }

    @Test func serviceCodesAndBadBodiesAreErrors() throws {
        let codec = try Self.codec()
        for code in ["InvalidAccount", "SignatureExpired", "InvalidSignature", "UnsignedInterfaceDisabled"] {
            let body = Array("{\"code\":\"\(code)\"}".utf8)
            #expect(throws: UpstreamError(.serviceError(code: code))) {
                try codec.parseBatch(status: 403, body: body).get()
            }
        }
        #expect(UpstreamError(.serviceError(code: "InvalidAccount")).isAccountLevel)
        #expect(throws: UpstreamError(.httpStatus(502))) { try codec.parseBatch(status: 502, body: []).get() }
        #expect(throws: UpstreamError(.malformed("the answer has no \"data.answers\" array"))) {
            try codec.parseBatch(status: 200, body: Array("{\"code\":\"success\",\"data\":\"x\"}".utf8)).get()
        }
    }

    @Test func theServiceClockOffsetComesFromTheDateHeader() {
        // Wed, 15 Aug 2018 07:00:00 GMT is 1534316400.
        #expect(AlibabaV2.serverClockOffset(dateHeader: "Wed, 15 Aug 2018 07:00:00 GMT", now: 1_534_312_800) == 3600)
        #expect(AlibabaV2.serverClockOffset(dateHeader: "soon", now: 0) == nil)
        #expect(AlibabaV2.serverClockOffset(dateHeader: nil, now: 0) == nil)
    }
}

/// The daemon's ciphers come from OpenSSL too (`HTTPDNSCrypto`). The "random" bytes count up from `firstRandomByte`, so that IVs are known to the vectors.
struct LibCryptoTestCiphers: ProviderCiphers {
    var firstRandomByte: UInt8 = 0

    func desECB(encrypt: Bool, _ input: [UInt8], key: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do {
            return encrypt ? try DESECB.encrypt(input, key: key) : try DESECB.decrypt(input, key: key)
        } catch {
            throw UpstreamError(.malformed(error.description))
        }
    }
    func aes128CBC(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do {
            return encrypt
                ? try AES128CBC.encrypt(input, key: key, iv: iv) : try AES128CBC.decrypt(input, key: key, iv: iv)
        } catch {
            throw UpstreamError(.malformed(error.description))
        }
    }
    func aes128GCM(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do throws(CryptoError) {
            if encrypt {
                let sealed = try AES128GCM.seal(input, key: key, iv: iv)
                return sealed.ciphertext + sealed.tag
            }
            let split = max(0, input.count - AES128GCM.tagByteCount)
            return try AES128GCM.open(Array(input[..<split]), tag: Array(input[split...]), key: key, iv: iv)
        } catch {
            throw UpstreamError(.malformed(error.description))
        }
    }
    func hmacSHA256(key: [UInt8], message: [UInt8]) throws(UpstreamError) -> [UInt8] {
        do {
            return try HMACSHA256.authenticationCode(key: key, message: message)
        } catch {
            throw UpstreamError(.transport(error.description))
        }
    }
    func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { firstRandomByte &+ UInt8(truncatingIfNeeded: $0) } }
}

/// `AlibabaAPI=v2` and what it needs from the rest of the file.
struct AlibabaV2ConfigTests {
    func parse(_ text: String) -> Result<(DaemonConfiguration, [ConfigWarning]), ConfigProblems> {
        DaemonConfiguration.parse(
            text: "[Resolver]\nUpstream=alibaba http://203.0.113.1/100000\n" + text, path: "/x.conf")
    }

    func messages(_ text: String) -> [String] {
        guard case .failure(let problems) = parse(text) else { return [] }
        return problems.errors.map(\.message)
    }

    @Test func v2IsChosenByAlibabaAPIAndV1StaysTheDefault() throws {
        #expect(try parse("").get().0.resolver.alibabaAPI == .v1)
        #expect(try parse("AlibabaAPI=V2\nSecretKey=\(AlibabaV2Tests.secret)\n").get().0.resolver.alibabaAPI == .v2)
        #expect(
            try parse("AlibabaAPI=v2\nSecretKeyFile=/run/credentials/x/secret\n").get().0.resolver.alibabaAPI == .v2)
        // v1 takes any secret text, since it MD5s it.
        #expect(try parse("SecretKey=IAmASecret\n").get().0.resolver.alibabaAPI == .v1)
    }

    @Test func v2RefusesAMissingOrNonHexSecretAndAURLWithoutAccount() {
        #expect(messages("AlibabaAPI=v3\n").first?.contains("expected v1 or v2") == true)
        #expect(messages("AlibabaAPI=v2\n") == ["v2 signs every query: set SecretKey= or SecretKeyFile="])
        let nonHex = messages("AlibabaAPI=v2\nSecretKey=IAmASecret\n")
        #expect(nonHex == ["v2 signs with the secret's bytes: it must be hexadecimal"])
        #expect(!nonHex.joined().contains("IAmASecret"))
        let noAccount = messages(
            "Upstream=\nUpstream=alibaba http://203.0.113.1\nAlibabaAPI=v2\nSecretKey=\(AlibabaV2Tests.secret)\n")
        #expect(noAccount.first?.contains("needs the account id") == true, "\(noAccount)")
    }
}
