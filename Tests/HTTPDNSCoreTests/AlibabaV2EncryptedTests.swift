import HTTPDNSCore
import HTTPDNSProtocol
import Testing

/// Alibaba v2's encrypted modes (`m=1` AES-128-CBC, `m=2` AES-128-GCM). Every literal below was
/// computed apart from the daemon and the fake, with Python's `cryptography` and `hmac`: the AES
/// key `2b7e1516...4f3c` (hex-decoded), the IVs counting up from 0 (requests) or 16 (answers),
/// the request's plaintext `{"dn":"www.aliyun.com","q":"4"}`, and the signature
/// `hmac.new(bytes.fromhex(secret), b"enc=...&exp=1534316400&id=100000&m=...&v=1.0", sha256)`.
struct AlibabaV2EncryptedTests {
    static let aesKey = "2b7e151628aed2a6abf7158809cf4f3c"

    static func codec(_ mode: AlibabaV2Mode, firstRandomByte: UInt8 = 0) throws -> AlibabaV2 {
        try #require(
            AlibabaV2(
                baseURL: "http://203.0.113.1/100000", secret: AlibabaV2Tests.secret, mode: mode, aesKey: aesKey,
                ciphers: LibCryptoTestCiphers(firstRandomByte: firstRandomByte)))
    }

    static let cbcEnc =
        "000102030405060708090a0b0c0d0e0f8dc8e1f9a5f1ab2b3d0ff65b46c4da0942d842b9a6aa3d2291141c189f1f030f"
    static let gcmEnc =
        "000102030405060708090a0b20ed5f389a52ac3597af3ae7cee0cde26514629920fb78f07428af85081428c6c0833d3c14997bd2692d"
        + "2575eccad5"

    @Test func cbcPutsTheIVThenTheCiphertextInEncAndSignsOnlyTheClearParameters() throws {
        let request = try Self.codec(.aesCBC).request(hosts: ["www.aliyun.com"], family: .ipv4, expiry: 1_534_316_400)
        #expect(
            request.url
                == "http://203.0.113.1/v2/d?id=100000&m=1&enc=\(Self.cbcEnc)&exp=1534316400&v=1.0"
                + "&s=eb2506be1e63a8ac06c155bad593a0e0e7a8802b6773d7054ee9b3092a6253bf")
    }

    @Test func gcmPutsTheTwelveByteIVThenTheCiphertextAndTagInEnc() throws {
        let request = try Self.codec(.aesGCM).request(hosts: ["www.aliyun.com"], family: .ipv4, expiry: 1_534_316_400)
        #expect(
            request.url
                == "http://203.0.113.1/v2/d?id=100000&m=2&enc=\(Self.gcmEnc)&exp=1534316400&v=1.0"
                + "&s=afb6e90956d0a0ea8bbad4bec4996dca37bde5e15ec21b4c88d701a8acbf664e")
    }

    @Test func theNamesNeverTravelInClear() throws {
        for mode in [AlibabaV2Mode.aesCBC, .aesGCM] {
            let url = try Self.codec(mode).request(
                hosts: ["a.example.com", "b.example.com"], family: .both, expiry: 1
            ).url
            #expect(!url.contains("example") && !url.contains("dn=") && !url.contains("q="), "\(url)")
        }
    }

    /// `data` of `{"cip":"198.51.100.7","answers":[{"dn":"www.aliyun.com","v4":{"ips":
    /// ["203.0.113.5"],"ttl":120},"v6":{"ips":[],"ttl":60,"no_ip_code":"RRNotExist"}}]}`, base64
    /// of the IV and the ciphertext (GCM: and tag).
    static let cbcData =
        "EBESExQVFhcYGRobHB0eH//zJ93+2OtKRVdth8+5CS/Waxnss5pczFmzFvV4hm2n8p/3btm1oJNOBQbKsJChsFxkKPQH4U+bpTK0amNBIgrz"
        + "1HQ2n6a0T/uRxyeCclhEwCjWtH8lxJb9+MSAEV+vQ+dY4sn+UIO3sgoW7kE57zyWtgps0bmVIFomgy5ydBh24SEO50KR4dQg4NTUqDX/OpRx"
        + "yczfLTObcZYObMSsNgg="
    static let gcmData =
        "EBESExQVFhcYGRobc/aLlTfLAo2a/lO9GFdsXm5OfSpwT8F95QgbRCedQYpXiHZIbmsanY5+I/0ii6tE/tDUwSCSMOpUhanT6IirUk08QRHf"
        + "ZQgrcmnrXB28pQyZ3OhqiVFz8jla9X/HjQS41nNZdPBuCvatu1jj0a2PxzZqC6kDm8dbmgphmMA0IV6rfCdYLiwcqZ6j6WRLnxWuCQs0GqT5"
        + "aSJLfWQdVOuUvNgGuaA="

    static func body(mode: Int, data: String) -> [UInt8] {
        Array(#"{"code":"success","mode":\#(mode),"data":"\#(data)"}"#.utf8)
    }

    @Test func anEncryptedAnswerIsDecryptedInTheModeItNames() throws {
        for (mode, data) in [(1, Self.cbcData), (2, Self.gcmData)] {
            // The codec's own mode does not matter: the answer says how it is sealed.
            let answers = try Self.codec(.aesGCM).parseBatch(status: 200, body: Self.body(mode: mode, data: data)).get()
            let answer = try #require(answers["www.aliyun.com"], "mode \(mode)")
            #expect(answer.ipv4.map(\.description) == ["203.0.113.5"] && answer.ipv4TTL == 120)
            #expect(answer.ipv6.isEmpty)
        }
    }

    @Test func anAlteredOrWronglyKeyedAnswerIsMalformed() throws {
        // One bit of the GCM ciphertext flipped: the tag no longer authenticates it.
        var bytes = Array(Self.gcmData.utf8)
        bytes[20] = bytes[20] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let altered = String(decoding: bytes, as: UTF8.self)
        let codec = try Self.codec(.aesGCM)
        guard case .failure(let error) = codec.parseBatch(status: 200, body: Self.body(mode: 2, data: altered)) else {
            Issue.record("an altered answer was accepted")
            return
        }
        #expect(error.description.contains("malformed"), "\(error)")

        let otherKey = try #require(
            AlibabaV2(
                baseURL: "http://203.0.113.1/100000", secret: AlibabaV2Tests.secret, mode: .aesCBC,
                aesKey: "000102030405060708090a0b0c0d0e0f", ciphers: LibCryptoTestCiphers()))
        let wrong = otherKey.parseBatch(status: 200, body: Self.body(mode: 1, data: Self.cbcData))
        #expect((try? wrong.get()) == nil)
        #expect(
            throws: UpstreamError(.malformed("the encrypted \"data\" is not base64")),
            performing: { try codec.parseBatch(status: 200, body: Self.body(mode: 1, data: "not*base64")).get() })
    }

    @Test func aPlainCodecCannotReadAnEncryptedAnswer() throws {
        let plain = try AlibabaV2Tests.codec()
        #expect(
            throws: UpstreamError(.malformed("an answer in mode 2, which this upstream cannot read")),
            performing: { try plain.parseBatch(status: 200, body: Self.body(mode: 2, data: Self.gcmData)).get() })
    }

    /// An answer in clear to an encrypted request is refused, however well formed: anyone on
    /// the path could send one. An error answer (its code) still reads as the service's error.
    @Test func anEncryptedCodecRefusesAnAnswerInClear() throws {
        let clear =
            #"{"code":"success","mode":0,"data":{"answers":[{"dn":"a.example.com","v4":{"ips":["192.0.2.1"],"ttl":60}}]}}"#
        for mode in [AlibabaV2Mode.aesCBC, .aesGCM] {
            let codec = try Self.codec(mode)
            #expect(
                throws: UpstreamError(.malformed("an answer in clear to a request in mode \(mode.rawValue)")),
                performing: { try codec.parseBatch(status: 200, body: Array(clear.utf8)).get() })
            #expect(
                throws: UpstreamError(.serviceError(code: "InvalidAccount")),
                performing: {
                    try codec.parseBatch(status: 403, body: Array(#"{"code":"InvalidAccount"}"#.utf8)).get()
                })
        }
    }

    @Test func anEncryptedModeNeedsASixteenByteHexKey() {
        for key in [nil, "IAmASecret", "00112233", Self.aesKey + "00"] {
            #expect(
                AlibabaV2(
                    baseURL: "http://203.0.113.1/1", secret: AlibabaV2Tests.secret, mode: .aesCBC, aesKey: key,
                    ciphers: LibCryptoTestCiphers()) == nil, "\(key ?? "nil")")
        }
        #expect(AlibabaV2.encryptionKeyProblem(Self.aesKey) == nil)
        #expect(AlibabaV2.encryptionKeyProblem("zz") == "the AES key must be hexadecimal")
        #expect(
            AlibabaV2.encryptionKeyProblem("0011") == "the AES key is 16 bytes (32 hexadecimal digits), this one is 2")
    }

    /// Through the descriptor: the exchange's round trip with the scripted transport, whose
    /// answer is sealed by the same test ciphers (AES from OpenSSL), and the endpoint's mode set
    /// from the file.
    @Test func theDescriptorAsksInTheEndpointsMode() throws {
        var endpoint = UpstreamEndpoint(kind: .alibaba, url: "http://127.0.0.1:8053/100000", name: "alibaba")
        endpoint.alibabaAPI = .v2
        endpoint.alibabaV2Mode = .aesCBC
        let transport = ScriptedExchangeTransport([
            .ok(String(decoding: Self.body(mode: 1, data: Self.cbcData), as: UTF8.self))
        ])
        let settings = UpstreamQuerySettings(secretKey: AlibabaV2Tests.secret, alibabaAESKey: Self.aesKey)
        let answer = try endpoint.descriptor.resolve(
            "www.aliyun.com", family: .ipv4, at: endpoint, timeoutMs: 1_000, settings: settings, over: transport
        ).get()
        #expect(answer.ipv4.map(\.description) == ["203.0.113.5"])
        let url = try #require(transport.sent.first?.request.url)
        #expect(url.contains("&m=1&enc=") && !url.contains("aliyun"), "\(url)")
        // Without the key the upstream asks nothing.
        let unkeyed = ScriptedExchangeTransport([.ok("{}")])
        let refused = endpoint.descriptor.resolve(
            "www.aliyun.com", family: .ipv4, at: endpoint, timeoutMs: 1_000,
            settings: UpstreamQuerySettings(secretKey: AlibabaV2Tests.secret), over: unkeyed)
        #expect((try? refused.get()) == nil && unkeyed.sent.isEmpty)
        #expect(!"\(settings)".contains(Self.aesKey) && "\(settings)".contains("alibabaAESKey: <redacted>"))
    }
}

/// `AlibabaAESKey=`, `AlibabaAESKeyFile=` and `AlibabaEncryption=`.
struct AlibabaV2EncryptionConfigTests {
    func parse(_ text: String) -> Result<(DaemonConfiguration, [ConfigWarning]), ConfigProblems> {
        DaemonConfiguration.parse(
            text: "[Resolver]\nUpstream=alibaba http://203.0.113.1/100000\nSecretKey=\(AlibabaV2Tests.secret)\n"
                + text, path: "/x.conf")
    }

    func messages(_ text: String) -> [String] {
        guard case .failure(let problems) = parse(text) else { return [] }
        return problems.errors.map(\.message)
    }

    func mode(_ text: String) throws -> AlibabaV2Mode {
        let upstream = try #require(try parse(text).get().0.resolver.upstreams.first)
        #expect((upstream.descriptor as? AlibabaV2Kind)?.mode == upstream.alibabaV2Mode)
        return upstream.alibabaV2Mode
    }

    @Test func theKeyPicksAnEncryptedModeGCMByDefault() throws {
        let key = "AlibabaAESKey=\(AlibabaV2EncryptedTests.aesKey)\n"
        #expect(try mode("AlibabaAPI=v2\n") == .plain)
        #expect(try mode("AlibabaAPI=v2\n" + key) == .aesGCM)
        #expect(try mode("AlibabaAPI=v2\nAlibabaEncryption=CBC\n" + key) == .aesCBC)
        #expect(try mode("AlibabaAPI=v2\nAlibabaEncryption=gcm\nAlibabaAESKeyFile=/run/credentials/x/aes\n") == .aesGCM)
    }

    @Test func aBadKeyOrAKeyWithoutV2IsRefusedWithoutShowingIt() {
        let short = messages("AlibabaAPI=v2\nAlibabaAESKey=00112233\n")
        #expect(short == ["the AES key is 16 bytes (32 hexadecimal digits), this one is 4"])
        #expect(
            messages("AlibabaAPI=v2\nAlibabaAESKey=IAmASecretIAmASecretIAmASecret12\n") == [
                "the AES key must be hexadecimal"
            ])
        let v1 = messages("AlibabaAESKey=\(AlibabaV2EncryptedTests.aesKey)\n")
        #expect(v1 == ["the AES key encrypts v2's parameters: set AlibabaAPI=v2"])
        #expect(messages("AlibabaEncryption=ecb\n").first?.contains("expected cbc or gcm") == true)
        #expect(!(short + v1).joined().contains("00112233"))
    }

    @Test func anEncryptionWithoutAKeyWarnsThatQueriesGoInClear() throws {
        let warnings = try parse("AlibabaAPI=v2\nAlibabaEncryption=cbc\n").get().1.map(\.message)
        #expect(warnings.contains { $0.contains("sent in clear (m=0)") }, "\(warnings)")
        let reset = try parse("AlibabaAPI=v2\nAlibabaEncryption=cbc\nAlibabaEncryption=\n").get()
        #expect(reset.0.resolver.alibabaEncryption == .gcm, "\(reset.1)")
        #expect(!reset.1.contains { $0.message.contains("AlibabaEncryption") }, "\(reset.1)")
    }

    @Test func theKeyIsNeverShown() throws {
        let configuration = try parse("AlibabaAPI=v2\nAlibabaAESKey=\(AlibabaV2EncryptedTests.aesKey)\n").get().0
        #expect(!"\(configuration)".contains(AlibabaV2EncryptedTests.aesKey))
        #expect(!String(reflecting: configuration).contains(AlibabaV2EncryptedTests.aesKey))
    }
}
