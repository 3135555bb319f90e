import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSTestSupport
import Testing

/// Alibaba's v2 API end to end against `Tests/fakes/alibaba_v2.py`, a fake written from
/// UPSTREAMS.md with Python's `hmac`: it answers only what the daemon signed with the account's
/// hex secret, and refuses an expired signature with a `Date` from its own clock.
@Suite(.serialized, .enabled(if: TestPKI.toolsPresent, "needs /usr/bin/openssl and /usr/bin/python3"))
struct AlibabaV2EndToEndTests {
    static let account = "139450"
    static let secret = "5f3c9a0e1b2d4c6e8f0a1b2c3d4e5f60"
    static let answers: [String: FakeAlibabaV2.Record] = [
        "a.example.com": .init(v4: ["203.0.113.71"], v6: ["2001:db8::71"], ttl: 120),
        "b.example.com": .init(v4: ["203.0.113.72"], v6: [], ttl: 300),
        "c.example.com": .init(v4: ["203.0.113.73"], v6: ["2001:db8::73"], ttl: 300),
    ]

    static func config(port: Int, secretLine: String, extra: String = "") -> String {
        "[Resolver]\nUpstream=alibaba http://127.0.0.1:\(port)/\(account)\nAlibabaAPI=v2\n\(secretLine)\n"
            + "Route=alibaba example.com\nTimeout=5s\n\(extra)"
    }

    @Test func aPlainQueryIsSignedWithTheHexSecretAndAnswered() throws {
        let fake = try FakeAlibabaV2(
            answers: Self.answers, arguments: ["--account", Self.account, "--secret", Self.secret])
        let files = TemporaryDirectory()
        let secretFile = try TencentPaidTests.credentialFile(Self.secret, in: files)
        let daemon = try DaemonHarness(config: Self.config(port: fake.port, secretLine: "SecretKeyFile=\(secretFile)"))
        let client = try daemon.connectReady()
        let before = Int64(Date().timeIntervalSince1970)
        let answer = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.71"], "\(answer.encodedString)\n\(daemon.log)")
        #expect(answer["result"]?["ipv6"] == ["2001:db8::71"])
        #expect(answer["result"]?["upstream"] == "alibaba")

        let request = try #require(fake.requests.last)
        #expect(request.path == "/v2/d" && request.status == 200 && request.names == ["a.example.com"])
        #expect(request.query["id"] == .some(Self.account) && request.query["m"] == "0" && request.query["v"] == "1.0")
        #expect(request.query["q"] == "4,6")
        // exp is now + 600 s; the bounds only guard against a wrong base, not the machine's speed.
        let expiry = try #require(request.query["exp"].flatMap { Int64($0) })
        #expect(expiry >= before + 600 && expiry <= before + 600 + 120, "exp=\(expiry), now=\(before)")
        try TencentPaidTests.expectNoSecret(in: daemon, client: client, secrets: [Self.secret])
    }

    /// The fake's clock is an hour ahead: the first query's exp has passed there, the refusal's
    /// Date corrects the daemon's offset, the query is asked again once and answered, and the
    /// next query starts from the corrected clock.
    @Test func anExpiredSignatureIsCorrectedByTheRefusalsDate() throws {
        let fake = try FakeAlibabaV2(
            answers: Self.answers,
            arguments: ["--account", Self.account, "--secret", Self.secret, "--clock-ahead", "3600"])
        let daemon = try DaemonHarness(config: Self.config(port: fake.port, secretLine: "SecretKey=\(Self.secret)"))
        let client = try daemon.connectReady()
        let first = try #require(try client.call("resolve", ["host": "b.example.com", "family": "ipv4"]))
        #expect(first["result"]?["ipv4"] == ["203.0.113.72"], "\(first.encodedString)\n\(daemon.log)")
        let second = try #require(try client.call("resolve", ["host": "c.example.com", "family": "ipv4"], id: 2))
        #expect(second["result"]?["ipv4"] == ["203.0.113.73"], "\(second.encodedString)")

        let requests = fake.requests
        #expect(requests.map(\.code) == ["SignatureExpired", "success", "success"], "\(requests.map(\.query))")
        let expiries = requests.compactMap { $0.query["exp"].flatMap { Int64($0) } }
        #expect(expiries.count == 3 && expiries[1] - expiries[0] >= 3000, "\(expiries)")
    }

    @Test func aWrongSecretIsTheServicesRefusalNamedInStatus() throws {
        let fake = try FakeAlibabaV2(
            answers: Self.answers, arguments: ["--account", Self.account, "--secret", Self.secret])
        let wrong = "00112233445566778899aabbccddeeff"
        let daemon = try DaemonHarness(config: Self.config(port: fake.port, secretLine: "SecretKey=\(wrong)"))
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(answer["error"]?["code"] == .int(-32002), "\(answer.encodedString)")
        #expect(fake.requests.map(\.code) == ["InvalidSignature"])
        let upstreams = try #require(try client.call("status", [:], id: 2)?["result"]?["upstreams"]?.arrayValue)
        #expect(upstreams.first?["lastError"] == "service error InvalidSignature", "\(upstreams)")
        try TencentPaidTests.expectNoSecret(in: daemon, client: client, secrets: [wrong])
    }

    /// An account the service refuses is not asked again per call: the next name fails at once.
    @Test func anAccountRefusalStopsTheQueries() throws {
        let fake = try FakeAlibabaV2(answers: Self.answers, arguments: ["--account", "1", "--secret", Self.secret])
        let daemon = try DaemonHarness(config: Self.config(port: fake.port, secretLine: "SecretKey=\(Self.secret)"))
        let client = try daemon.connectReady()
        let first = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(first["error"]?["code"] == .int(-32002), "\(first.encodedString)")
        let second = try #require(try client.call("resolve", ["host": "b.example.com"], id: 2))
        #expect(second["error"]?["code"] == .int(-32002), "\(second.encodedString)")
        #expect(fake.requests.map(\.code) == ["InvalidAccount"], "\(fake.requests.map(\.query))")
        let upstreams = try #require(try client.call("status", [:], id: 3)?["result"]?["upstreams"]?.arrayValue)
        #expect(upstreams.first?["lastError"] == "service error InvalidAccount", "\(upstreams)")
    }

    /// Prefetch asks for its names in one signed request (`dn=a,b,c`).
    @Test func prefetchAsksOneSignedBatch() throws {
        let fake = try FakeAlibabaV2(
            answers: Self.answers, arguments: ["--account", Self.account, "--secret", Self.secret])
        let daemon = try DaemonHarness(
            config: Self.config(
                port: fake.port, secretLine: "SecretKey=\(Self.secret)",
                extra: "Prefetch=a.example.com b.example.com c.example.com\n"))
        let client = try daemon.connectReady()
        #expect(eventually(20) { !fake.requests.isEmpty }, "\(daemon.log)")
        let batch = try #require(fake.requests.first)
        #expect(batch.names == ["a.example.com", "b.example.com", "c.example.com"], "\(batch.query)")
        #expect(batch.code == "success" && batch.query["q"] == "4,6")
        let cached = eventually(10) {
            let entries = (try? client.call("showCache", [:], id: 50))?["result"]?["entries"]?.arrayValue ?? []
            return Set(entries.compactMap { $0["host"]?.stringValue }).count == 3
        }
        #expect(cached, "\(daemon.log)")
        let answer = try #require(try client.call("resolve", ["host": "c.example.com", "family": "ipv6"], id: 1))
        #expect(answer["result"]?["source"] == "cache", "\(answer.encodedString)\n\(daemon.log)")
        #expect(answer["result"]?["ipv6"] == ["2001:db8::73"])
        #expect(fake.requests.count == 1, "\(fake.requests.map(\.names))")
    }

    // MARK: the encrypted modes

    static let aesKey = "8c1f0e2d3b4a59687766554433221100"

    /// Each mode answers a resolve and a prefetch batch: the fake decrypts `enc` with the AES key
    /// (Python's `cryptography`), finds no name in the clear query, and answers encrypted.
    @Test(arguments: [("cbc", "1"), ("gcm", "2")])
    func anEncryptedModeSendsTheNamesOnlyInEnc(encryption: String, m: String) throws {
        let fake = try FakeAlibabaV2(
            answers: Self.answers,
            arguments: ["--account", Self.account, "--secret", Self.secret, "--aes-key", Self.aesKey])
        let secrets = TemporaryDirectory()
        let keys = TemporaryDirectory()
        let secretFile = try TencentPaidTests.credentialFile(Self.secret, in: secrets)
        let keyFile = try TencentPaidTests.credentialFile(Self.aesKey, in: keys)
        let daemon = try DaemonHarness(
            config: Self.config(
                port: fake.port, secretLine: "SecretKeyFile=\(secretFile)",
                extra: "AlibabaEncryption=\(encryption)\nAlibabaAESKeyFile=\(keyFile)\n"
                    + "Prefetch=b.example.com c.example.com\n"))
        let client = try daemon.connectReady()
        #expect(eventually(20) { !fake.requests.isEmpty }, "\(daemon.log)")
        let answer = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.71"], "\(answer.encodedString)\n\(daemon.log)")
        #expect(answer["result"]?["ipv6"] == ["2001:db8::71"])

        let requests = fake.requests
        let batch = try #require(requests.first { $0.names?.count == 2 }, "\(requests.map(\.names))")
        #expect(Set(batch.names ?? []) == ["b.example.com", "c.example.com"] && batch.code == "success")
        let single = try #require(requests.first { $0.names == ["a.example.com"] }, "\(requests.map(\.query))")
        #expect(single.code == "success")
        for request in requests {
            #expect(request.query["m"] == .some(m) && request.query["enc"] != nil, "\(request.query)")
            #expect(Set(request.query.keys) == ["id", "m", "enc", "exp", "v", "s"], "\(request.query)")
            #expect(!request.query.values.contains { $0.contains("example") })
        }
        let cached = try #require(try client.call("resolve", ["host": "c.example.com", "family": "ipv4"], id: 2))
        #expect(cached["result"]?["ipv4"] == ["203.0.113.73"], "\(cached.encodedString)")
        try TencentPaidTests.expectNoSecret(in: daemon, client: client, secrets: [Self.secret, Self.aesKey])
    }

    /// A daemon with another AES key than the account's: the service cannot decrypt `enc` and
    /// refuses, and the daemon reports it and never answers with what it could not read.
    @Test func aWrongAESKeyIsRefused() throws {
        let fake = try FakeAlibabaV2(
            answers: Self.answers,
            arguments: ["--account", Self.account, "--secret", Self.secret, "--aes-key", Self.aesKey])
        let wrong = "00112233445566778899aabbccddeeff"
        let daemon = try DaemonHarness(
            config: Self.config(
                port: fake.port, secretLine: "SecretKey=\(Self.secret)", extra: "AlibabaAESKey=\(wrong)\n"))
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(answer["error"]?["code"] == .int(-32002), "\(answer.encodedString)")
        #expect(fake.requests.map(\.code) == ["MissingArgument"], "\(fake.requests.map(\.query))")
        try TencentPaidTests.expectNoSecret(in: daemon, client: client, secrets: [wrong])
    }

    /// `ClientIP=` and `SDNS=` reach the service with the names: signed in clear, and inside
    /// `enc` when encrypted.
    @Test(arguments: ["", "AlibabaAESKey=\(Self.aesKey)\n"])
    func theClientAddressAndSDNSParametersReachTheService(keyLine: String) throws {
        let fake = try FakeAlibabaV2(
            answers: Self.answers,
            arguments: ["--account", Self.account, "--secret", Self.secret, "--aes-key", Self.aesKey])
        let daemon = try DaemonHarness(
            config: Self.config(
                port: fake.port, secretLine: "SecretKey=\(Self.secret)",
                extra: keyLine + "ClientIP=alibaba 198.51.100.7\nSDNS=alibaba region=north_1 tier=gold\n"))
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "b.example.com", "family": "ipv4"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.72"], "\(answer.encodedString)\n\(daemon.log)")
        let request = try #require(fake.requests.last)
        let parameters = try #require(request.parameters, "\(request.query)")
        #expect(parameters["cip"] == "198.51.100.7" && parameters["dn"] == "b.example.com")
        #expect(parameters["sdns-region"] == "north_1" && parameters["sdns-tier"] == "gold")
        #expect(request.query["m"] == (keyLine.isEmpty ? "0" : "2"))
        #expect((request.query["cip"] != nil) == keyLine.isEmpty, "\(request.query)")
    }

    @Test func checkConfigRefusesAnExposedOrMalformedAESKeyFileWithoutShowingIt() throws {
        let files = TemporaryDirectory()
        let keyFile = try TencentPaidTests.credentialFile(Self.aesKey, in: files)
        let config = files.file("httpdnsd.conf")
        try (Self.config(port: 9, secretLine: "SecretKey=\(Self.secret)", extra: "AlibabaAESKeyFile=\(keyFile)\n"))
            .write(toFile: config, atomically: true, encoding: .utf8)
        try TencentPaidTests.expectCheckConfigGuardsTheKeyFile(config, keyFile: keyFile, key: Self.aesKey)

        let short = String(Self.aesKey.prefix(16))
        try (short + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        let wrong = try runCommand(BuiltProducts.path("httpdnsd"), ["--check-config", config])
        #expect(wrong.status == 78 && wrong.stderr.contains("the AES key is 16 bytes"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains(short))
    }
}
