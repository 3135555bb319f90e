import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// Tencent's paid forms end to end against `Tests/fakes/tencent_paid.py`, a fake written from
/// UPSTREAMS.md with Python's `cryptography`: the daemon's DES and AES names decrypt there, its
/// answers decrypt here, and the key and token appear nowhere else.
@Suite(.serialized, .enabled(if: TestPKI.toolsPresent, "needs /usr/bin/openssl and /usr/bin/python3"))
struct TencentPaidTests {
    static let desKey = "k3y-8byt"
    static let aesKey = "sixteen-byte-key"
    static let token = "tok-0123456789abcdef"
    static let answers: [String: FakeTencentPaid.Record] = [
        "a.example.com": .init(v4: ["203.0.113.91"], v6: ["2001:db8::91"], ttl: 120),
        "b.example.com": .init(v4: ["203.0.113.92"], v6: [], ttl: 300),
        "c.example.com": .init(v4: ["203.0.113.93"], v6: ["2001:db8::93"], ttl: 300),
    ]

    @Test func aDESNameIsEncryptedWithTheKeyFileAndTheAnswerDecrypted() throws {
        let fake = try FakeTencentPaid(
            answers: Self.answers, arguments: ["--des-key", Self.desKey, "--auth-id", "4242"])
        let files = TemporaryDirectory()
        let keyFile = try Self.credentialFile(Self.desKey, in: files)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(fake.port)\nTencentAuthId=4242\n"
                + "TencentKeyFile=\(keyFile)\nTimeout=5s\n")
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.91"], "\(answer.encodedString)\n\(daemon.log)")
        #expect(answer["result"]?["ipv6"] == ["2001:db8::91"])
        #expect(answer["result"]?["upstream"] == "tencent")

        let request = try #require(fake.requests.last)
        #expect(request.alg == "des" && request.query["id"] == "4242" && request.names == ["a.example.com"])
        #expect(request.query["dn"]?.contains("example") == false, "the name went in clear: \(request.query)")
        #expect(request.status == 200)
        try Self.expectNoSecret(in: daemon, client: client, secrets: [Self.desKey])
    }

    /// `ClientIP=` goes as `ip=`, encrypted with the names' cipher (the fake decrypts it), in a
    /// resolve and in a prefetch batch.
    @Test func theClientAddressIsEncryptedAsTheNames() throws {
        let fake = try FakeTencentPaid(
            answers: Self.answers, arguments: ["--des-key", Self.desKey, "--auth-id", "4242"])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(fake.port)\nTencentAuthId=4242\n"
                + "TencentKey=\(Self.desKey)\nClientIP=tencent 198.51.100.7\nTimeout=5s\n"
                + "Prefetch=b.example.com c.example.com\n")
        let client = try daemon.connectReady()
        #expect(eventually(20) { !fake.requests.isEmpty }, "\(daemon.log)")
        let answer = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.91"], "\(answer.encodedString)\n\(daemon.log)")
        let requests = fake.requests
        #expect(requests.count == 2 && requests.allSatisfy { $0.ip == "198.51.100.7" }, "\(requests.map(\.query))")
        #expect(requests.allSatisfy { $0.query["ip"]?.contains("198.51") == false })
        #expect(Set(requests.map(\.names.count)) == [1, 2])
    }

    @Test func anAESNameCarriesAFreshIVEachTime() throws {
        let fake = try FakeTencentPaid(answers: Self.answers, arguments: ["--aes-key", Self.aesKey, "--auth-id", "7"])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(fake.port)\nTencentAuthId=7\n"
                + "TencentEncryption=aes\nTencentKey=\(Self.aesKey)\nTimeout=5s\nMaxTTL=0\n")
        let client = try daemon.connectReady()
        for (id, family) in ["ipv4", "ipv6"].enumerated() {
            let answer = try #require(
                try client.call("resolve", ["host": "c.example.com", "family": .string(family)], id: id + 1))
            let expected = family == "ipv4" ? "203.0.113.93" : "2001:db8::93"
            #expect(answer["result"]?[family] == [.string(expected)], "\(answer.encodedString)\n\(daemon.log)")
        }
        let requests = fake.requests
        #expect(requests.map(\.alg) == ["aes", "aes"])
        #expect(requests.allSatisfy { $0.names == ["c.example.com"] && $0.status == 200 })
        #expect(requests.map { $0.query["type"] ?? "" } == ["", "aaaa"])
        // 16 bytes of IV, then one block: the IVs differ, so the two dn values do too.
        #expect(requests.allSatisfy { ($0.query["dn"] ?? "").count == 64 })
        #expect(
            requests[0].query["dn"].map { String($0.prefix(32)) }
                != requests[1].query["dn"].map { String($0.prefix(32)) })
        try Self.expectNoSecret(in: daemon, client: client, secrets: [Self.aesKey])
    }

    @Test func aWrongKeyIsAFailureNamedInStatusNotAnAnswer() throws {
        let fake = try FakeTencentPaid(answers: Self.answers, arguments: ["--des-key", Self.desKey, "--auth-id", "1"])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(fake.port)\nTencentAuthId=1\n"
                + "TencentKey=wrongkey\nTimeout=5s\n")
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "a.example.com"]))
        #expect(answer["error"]?["code"] == .int(-32002), "\(answer.encodedString)")
        #expect(fake.requests.first?.status == 400, "the fake could not decrypt the name")
        let upstreams = try #require(try client.call("status", [:], id: 2)?["result"]?["upstreams"]?.arrayValue)
        #expect(upstreams.first?["lastError"] == "HTTP status 400", "\(upstreams)")
    }

    /// Prefetch asks a paid form for its names in one request (`dn=a,b,c`, encrypted together)
    /// and the batch's lines fill the cache.
    @Test func prefetchAsksOneEncryptedBatch() throws {
        let fake = try FakeTencentPaid(answers: Self.answers, arguments: ["--des-key", Self.desKey, "--auth-id", "9"])
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(fake.port)\nTencentAuthId=9\n"
                + "TencentKey=\(Self.desKey)\nTimeout=5s\nPrefetch=a.example.com b.example.com c.example.com\n")
        let client = try daemon.connectReady()
        #expect(eventually(20) { !fake.requests.isEmpty }, "\(daemon.log)")
        let batch = try #require(fake.requests.first)
        #expect(batch.names == ["a.example.com", "b.example.com", "c.example.com"], "\(batch.query)")
        #expect(batch.alg == "des" && batch.query["type"] == "addrs")
        // Root's showCache lists every cached name: the batch's answers are in once it shows them.
        let cached = eventually(10) {
            let entries = (try? client.call("showCache", [:], id: 50))?["result"]?["entries"]?.arrayValue ?? []
            return Set(entries.compactMap { $0["host"]?.stringValue }).count == 3
        }
        #expect(cached, "\(daemon.log)")
        for (id, (host, address)) in [("a.example.com", "203.0.113.91"), ("b.example.com", "203.0.113.92")]
            .enumerated()
        {
            let answer = try #require(
                try client.call("resolve", ["host": .string(host), "family": "ipv4"], id: id + 1))
            #expect(answer["result"]?["source"] == "cache", "\(answer.encodedString)\n\(daemon.log)")
            #expect(answer["result"]?["ipv4"] == [.string(address)])
        }
        #expect(fake.requests.count == 1, "\(fake.requests.map(\.names))")
    }

    /// The HTTPS form: the name in clear with the token, the certificate checked against
    /// `TLSName=` (the service is asked by address).
    @Test func theTokenFormGoesOverHTTPSWithTheToken() throws {
        let pki = try TestPKI()
        let fake = try FakeTencentPaid(
            answers: Self.answers,
            arguments: ["--token", Self.token, "--certificate", pki.nameCertificate, "--key", pki.nameKey])
        let files = TemporaryDirectory()
        let tokenFile = try Self.credentialFile(Self.token, in: files)
        let daemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent https://127.0.0.1:\(fake.port)\nTencentTokenFile=\(tokenFile)\n"
                + "CAFile=\(pki.caCertificate)\nTLSName=resolver.test\nTimeout=5s\n")
        let client = try daemon.connectReady()
        let answer = try #require(try client.call("resolve", ["host": "b.example.com", "family": "ipv4"]))
        #expect(answer["result"]?["ipv4"] == ["203.0.113.92"], "\(answer.encodedString)\n\(daemon.log)")
        let request = try #require(fake.requests.last)
        #expect(request.query["token"] == .some(Self.token) && request.names == ["b.example.com"])
        #expect(request.alg == nil)
        try Self.expectNoSecret(in: daemon, client: client, secrets: [Self.token])
    }

    /// Single DES comes from OpenSSL's legacy provider, loaded only for it: a daemon whose
    /// Tencent upstream uses AES never maps `legacy.so`; one that uses DES does once it asks.
    @Test func onlyADESUpstreamMapsTheLegacyProvider() throws {
        let aes = try FakeTencentPaid(answers: Self.answers, arguments: ["--aes-key", Self.aesKey, "--auth-id", "3"])
        let aesDaemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(aes.port)\nTencentAuthId=3\n"
                + "TencentEncryption=aes\nTencentKey=\(Self.aesKey)\nTimeout=5s\n")
        let aesClient = try aesDaemon.connectReady()
        let aesAnswer = try #require(try aesClient.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(aesAnswer["result"]?["ipv4"] == ["203.0.113.91"], "\(aesAnswer.encodedString)")
        let aesMaps = try Self.mappedFiles(aesDaemon.process.pid)
        #expect(aesMaps.contains { $0.contains("libcrypto.so.3") }, "\(aesMaps)")
        #expect(!aesMaps.contains { $0.hasSuffix("/legacy.so") }, "legacy.so mapped without a DES upstream")

        let des = try FakeTencentPaid(answers: Self.answers, arguments: ["--des-key", Self.desKey, "--auth-id", "3"])
        let desDaemon = try DaemonHarness(
            config: "[Resolver]\nUpstream=tencent http://127.0.0.1:\(des.port)\nTencentAuthId=3\n"
                + "TencentKey=\(Self.desKey)\nTimeout=5s\n")
        let desClient = try desDaemon.connectReady()
        #expect(!(try Self.mappedFiles(desDaemon.process.pid)).contains { $0.hasSuffix("/legacy.so") })
        let desAnswer = try #require(try desClient.call("resolve", ["host": "a.example.com", "family": "ipv4"]))
        #expect(desAnswer["result"]?["ipv4"] == ["203.0.113.91"], "\(desAnswer.encodedString)")
        #expect(try Self.mappedFiles(desDaemon.process.pid).contains { $0.hasSuffix("/legacy.so") })
    }

    /// `--check-config` reads the credential files as a start would: one other users may read,
    /// or a key of the wrong length, is refused (status 78) naming the file, never its contents.
    @Test func checkConfigRefusesAnExposedOrWrongLengthKeyFileWithoutShowingIt() throws {
        let files = TemporaryDirectory()
        let keyFile = try Self.credentialFile(Self.desKey, in: files)
        let config = files.file("httpdnsd.conf")
        try
            "[Resolver]\nUpstream=tencent http://127.0.0.1:9\nRoute=tencent example.com\nTencentAuthId=1\nTencentKeyFile=\(keyFile)\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        try Self.expectCheckConfigGuardsTheKeyFile(config, keyFile: keyFile, key: Self.desKey)

        try (Self.aesKey + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
        chmod(keyFile, 0o600)
        let long = try runCommand(BuiltProducts.path("httpdnsd"), ["--check-config", config])
        #expect(long.status == 78 && long.stderr.contains("a DES key is 8 bytes, this one is 16"), "\(long.stderr)")
        #expect(!long.stderr.contains(Self.aesKey))
    }

    /// `--check-config` of `config` passes while `keyFile` is private, and refuses it without
    /// showing `key` once other users may read it (the file is left private again).
    static func expectCheckConfigGuardsTheKeyFile(_ config: String, keyFile: String, key: String) throws {
        let httpdnsd = BuiltProducts.path("httpdnsd")
        let good = try runCommand(httpdnsd, ["--check-config", config])
        #expect(good.status == 0 && good.stderr.contains("configuration OK"), "\(good.stderr)")
        chmod(keyFile, 0o644)
        defer { chmod(keyFile, 0o600) }
        let exposed = try runCommand(httpdnsd, ["--check-config", config])
        #expect(exposed.status == 78 && exposed.stderr.contains("other users may access it"), "\(exposed.stderr)")
        #expect(!exposed.stderr.contains(key))
    }

    // MARK: helpers

    /// A credential file as `LoadCredential=` leaves one: owner-only.
    static func credentialFile(_ secret: String, in directory: TemporaryDirectory) throws -> String {
        let path = directory.file("credential")
        try (secret + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    /// Neither `status` nor the daemon's log shows any of `secrets`.
    static func expectNoSecret(in daemon: DaemonHarness, client: LineClient, secrets: [String]) throws {
        let status = try #require(try client.call("status", [:], id: 99)).encodedString
        for secret in secrets {
            #expect(!status.contains(secret), "status shows a secret: \(status)")
            #expect(!daemon.log.contains(secret), "the log shows a secret")
        }
    }

    static func mappedFiles(_ pid: pid_t) throws -> Set<String> {
        let maps = String(decoding: try Files.read("/proc/\(pid)/maps"), as: UTF8.self)
        return Set(maps.split(separator: "\n").compactMap { line in line.split(separator: " ").last.map(String.init) })
    }
}
