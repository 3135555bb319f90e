import HTTPDNSProtocol
import Testing

@testable import HTTPDNSCore

/// The paid Tencent forms' keys: each `tencent` upstream's form follows from its URL and the
/// credentials set, and a key or token is never repeated in a message or a description.
struct TencentAccountConfigTests {
    static let key = "k3y-8byt"
    static let token = "tok-secret-0123"

    func parse(_ text: String) throws -> (DaemonConfiguration, [ConfigWarning]) {
        try DaemonConfiguration.parse(text: "[Resolver]\n" + text, path: "/x.conf").get()
    }

    func errors(_ text: String) -> [ConfigError] {
        guard case .failure(let problems) = DaemonConfiguration.parse(text: "[Resolver]\n" + text, path: "/x.conf")
        else { return [] }
        return problems.errors
    }

    @Test func eachTencentUpstreamTakesTheFormOfItsSchemeAndCredentials() throws {
        let (configuration, warnings) = try parse(
            "Upstream=tencent http://119.29.29.98\nUpstream=tencent https://119.29.29.99\n"
                + "Upstream=alibaba http://203.107.1.1/100000\nTencentAuthId=4242\nTencentKey=\(Self.key)\n"
                + "TencentToken=\(Self.token)\n")
        #expect(warnings.filter { $0.message.contains("Tencent") }.isEmpty, "\(warnings)")
        #expect(configuration.resolver.upstreams.map(\.tencentForm) == [.des, .token, .free])
        #expect(configuration.resolver.upstreams.map(\.batchesPrefetch) == [true, true, true])

        let (aes, _) = try parse(
            "Upstream=tencent http://119.29.29.98\nTencentAuthId=1\nTencentEncryption=AES\n"
                + "TencentKeyFile=/run/credentials/httpdnsd.service/tencent\n")
        #expect(aes.resolver.upstreams.first?.tencentForm == .aes)
        #expect(aes.resolver.tencent.keyFile == "/run/credentials/httpdnsd.service/tencent")

        // Without credentials (or over https without a token) it is the free form, unbatched.
        let (free, _) = try parse("Upstream=tencent http://119.29.29.29\nUpstream=tencent https://119.29.29.99\n")
        #expect(free.resolver.upstreams.map(\.tencentForm) == [.free, .free])
        #expect(free.resolver.upstreams.map(\.batchesPrefetch) == [false, false])
    }

    @Test func aKeyOfTheWrongLengthOrWithoutAnAuthIdIsRefusedWithoutRepeatingIt() throws {
        let short = errors("Upstream=tencent http://119.29.29.98\nTencentAuthId=1\nTencentKey=sevenb7\n")
        #expect(short.map(\.key) == ["TencentKey"], "\(short)")
        #expect(short.first?.message == "a DES key is 8 bytes, this one is 7")
        let aes = errors(
            "Upstream=tencent http://119.29.29.98\nTencentAuthId=1\nTencentKey=\(Self.key)\nTencentEncryption=aes\n")
        #expect(aes.first?.message == "an AES-128 key is 16 bytes, this one is 8")
        #expect(aes.first?.line == 5, "the later of the key and the cipher")

        let orphan = errors("Upstream=tencent http://119.29.29.98\nTencentKey=\(Self.key)\n")
        #expect(orphan.first?.message.contains("TencentAuthId=") == true, "\(orphan)")
        let bad = errors("TencentKey=a b\(Self.key)\nTencentEncryption=3des\nTencentAuthId=x y\n")
        #expect(bad.map(\.key) == ["TencentKey", "TencentEncryption", "TencentAuthId"], "\(bad)")
        for error in short + aes + orphan + bad {
            #expect(!error.description.contains(Self.key) && !error.description.contains("sevenb7"))
        }
    }

    @Test func credentialsNoUpstreamCanUseAreWarnedAbout() throws {
        let (_, keyOnly) = try parse(
            "Upstream=tencent https://119.29.29.99\nRoute=tencent example.com\nTencentAuthId=1\nTencentKey=\(Self.key)\n"
        )
        #expect(
            keyOnly.map(\.message) == [
                "TencentKey= is set but no tencent upstream has an http:// URL (the encrypted form's)"
            ])
        let (_, tokenOnly) = try parse(
            "Upstream=tencent http://119.29.29.29\nRoute=tencent example.com\nTencentToken=\(Self.token)\n")
        #expect(tokenOnly.map(\.line) == [4])
        #expect(tokenOnly.first?.message.contains("https://") == true)
    }

    @Test func keysAndTokensAreRedactedInEveryDescription() throws {
        let (configuration, _) = try parse(
            "Upstream=tencent http://119.29.29.98\nTencentAuthId=1\nTencentKey=\(Self.key)\nTencentToken=\(Self.token)\n"
        )
        var dumped = ""
        dump(configuration, to: &dumped)
        let codec = TencentPaidHTTPDNS(
            baseURL: "http://119.29.29.98", credential: .des(authID: "1", key: Array(Self.key.utf8)),
            ciphers: RefusingCiphers())
        var dumpedCodec = ""
        dump(codec, to: &dumpedCodec)
        for text in [
            String(describing: configuration), String(reflecting: configuration), dumped, "\(codec)",
            String(reflecting: codec), dumpedCodec, "\(TencentPaidHTTPDNS.Credential.token(Self.token))",
        ] {
            #expect(!text.contains(Self.key) && !text.contains(Self.token), "\(text)")
        }
    }
}

/// The token form's codec (no cipher is used): the request and the batch answer's grammar.
struct TencentPaidCodecTests {
    let codec = TencentPaidHTTPDNS(
        baseURL: "https://119.29.29.99/", credential: .token("t/k+n"), ciphers: RefusingCiphers())

    @Test func theTokenFormSendsNamesInClearWithTheTokenEncoded() throws {
        let one = try codec.request(hosts: ["a.example.com"], family: .ipv6)
        #expect(one.url == "https://119.29.29.99/d?dn=a.example.com&token=t%2Fk%2Bn&ttl=1&type=aaaa")
        let batch = try codec.request(hosts: ["a.example.com", "b.example.com"], family: .both)
        #expect(batch.url == "https://119.29.29.99/d?dn=a.example.com,b.example.com&token=t%2Fk%2Bn&ttl=1&type=addrs")
    }

    @Test func aBatchAnswerHasOneLinePerNameAndSkipsEmptyOrBrokenLines() throws {
        let body = Array(
            """
            A.example.com.:203.0.113.1;203.0.113.2,120-2001:db8::1,60|198.51.100.7
            b.example.com.:
            c.example.com.:not-an-address,30
            d.example.com.:0,30-2001:db8::4,300
            no colon here

            """.utf8)
        let answers = try codec.parseBatch(status: 200, body: body).get()
        #expect(Set(answers.keys) == ["a.example.com", "d.example.com"])
        let a = try #require(answers["a.example.com"])
        #expect(a.ipv4.map(\.description) == ["203.0.113.1", "203.0.113.2"] && a.ipv4TTL == 120)
        #expect(a.ipv6.map(\.description) == ["2001:db8::1"] && a.ipv6TTL == 60)
        #expect(answers["d.example.com"]?.ipv4 == [] && answers["d.example.com"]?.ipv6TTL == 300)
        #expect(try codec.parseBatch(status: 200, body: []).get().isEmpty)
        #expect(throws: UpstreamError(.httpStatus(403))) { try codec.parseBatch(status: 403, body: []).get() }
    }
}

/// Ciphers that are never expected to run.
struct RefusingCiphers: ProviderCiphers {
    func desECB(encrypt: Bool, _ input: [UInt8], key: [UInt8]) throws(UpstreamError) -> [UInt8] {
        throw UpstreamError(.transport("no DES here"))
    }
    func aes128CBC(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8] {
        throw UpstreamError(.transport("no AES here"))
    }
    func aes128GCM(encrypt: Bool, _ input: [UInt8], key: [UInt8], iv: [UInt8]) throws(UpstreamError) -> [UInt8] {
        throw UpstreamError(.transport("no AES here"))
    }
    func hmacSHA256(key: [UInt8], message: [UInt8]) throws(UpstreamError) -> [UInt8] {
        throw UpstreamError(.transport("no HMAC here"))
    }
    func randomBytes(_ count: Int) -> [UInt8] { [UInt8](repeating: 0, count: count) }
}
