import Glibc
import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSRedis
import HTTPDNSTestSupport
import Testing

/// From a `[Fleet]` section to a working connection.
struct FleetSetupTests {
    typealias F = FleetFixtures

    @Test func theConfigurationBecomesAClientThatLogsIn() throws {
        let server = try RedisServer(password: "p4ss word")
        let directory = TemporaryDirectory(prefix: "fsetup")
        writeFile(F.keyHex + "\n", to: directory.file("fleet.key"), mode: 0o600)
        writeFile("p4ss word\n", to: directory.file("redis-password"), mode: 0o600)
        let text = """
            [Fleet]
            Redis=unix:\(server.socketPath)
            PasswordFile=\(directory.file("redis-password"))
            Name=gateways
            KeyFile=\(directory.file("fleet.key"))
            ShareCookiesOf=root 4321
            """
        let configuration = try #require(try DaemonConfiguration.parse(text: text, path: "test.conf").get().0.fleet)
        let setup = try FleetSetup.load(configuration, resolverTimeoutMs: 2_000)
        #expect(setup.shareCache)
        #expect(setup.sharedJars == [0: "user:root", 4_321: "uid:4321"])
        #expect(setup.clientOptions.redis.commandTimeoutMilliseconds == 500)
        #expect(!"\(setup.clientOptions)".contains("p4ss"))
        // The password (without its newline) and the key work against the fleet's Redis.
        let fleet = FleetRedis(
            connection: RedisConnection(options: setup.clientOptions.redis), key: setup.key, fleetName: "gateways")
        try fleet.publish([F.answer("a.example.com", ["192.0.2.1"])], nowUnixMs: 0, releasingLock: nil)
        #expect(try F.fleetRedis(server).lookUp(host: "a.example.com", families: [.ipv4], nowUnixMs: 0).hits.count == 1)
    }

    @Test func unusableFilesAndUsersStopTheStart() throws {
        let directory = TemporaryDirectory(prefix: "fsetup")
        writeFile(F.keyHex, to: directory.file("fleet.key"), mode: 0o600)
        var configuration = FleetConfiguration(
            redis: .unix(path: "/nonexistent.sock"), name: "n", keyFile: directory.file("fleet.key"))
        #expect(throws: Never.self) { try FleetSetup.load(configuration, resolverTimeoutMs: 2_000) }

        writeFile(F.keyHex, to: directory.file("open.key"), mode: 0o644)
        configuration.keyFile = directory.file("open.key")
        let open = try #require(throws: FleetSetupError.self) {
            try FleetSetup.load(configuration, resolverTimeoutMs: 1)
        }
        #expect(open.description.hasPrefix("KeyFile=\(directory.file("open.key")): other users may access it"))

        configuration.keyFile = directory.file("fleet.key")
        writeFile("\n", to: directory.file("empty-password"), mode: 0o600)
        configuration.passwordFile = directory.file("empty-password")
        let empty = try #require(throws: FleetSetupError.self) {
            try FleetSetup.load(configuration, resolverTimeoutMs: 1)
        }
        #expect(empty.description.contains("is empty"))

        configuration.passwordFile = nil
        configuration.shareCookiesOf = [.name("no-such-user-here")]
        let user = try #require(throws: FleetSetupError.self) {
            try FleetSetup.load(configuration, resolverTimeoutMs: 1)
        }
        #expect(user.description.contains("no-such-user-here"))

        configuration.shareCookiesOf = [.name("root"), .uid(0)]
        #expect(throws: FleetSetupError.self) { try FleetSetup.load(configuration, resolverTimeoutMs: 1) }
    }
}
