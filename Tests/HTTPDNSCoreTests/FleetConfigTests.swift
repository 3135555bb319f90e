import HTTPDNSCore
import Testing

struct FleetConfigTests {
    let path = "/etc/httpdnsd/httpdnsd.conf"

    private func parse(_ text: String) throws -> (DaemonConfiguration, [ConfigWarning]) {
        try DaemonConfiguration.parse(text: text, path: path).get()
    }

    private func fleetError(_ settings: String) throws -> ConfigError {
        let text = "[Fleet]\n" + settings
        switch DaemonConfiguration.parse(text: text, path: path) {
        case .success:
            Issue.record("expected an error for:\n\(text)")
            throw Failure()
        case .failure(let problems):
            return problems.first
        }
    }

    struct Failure: Error {}

    static let minimal = "[Fleet]\nRedis=redis://127.0.0.1:6380/2\nName=gateways\nKeyFile=/etc/httpdnsd/fleet.key\n"

    @Test func noSectionMeansNoFleet() throws {
        #expect(try parse("").0.fleet == nil)
        #expect(try parse("[Resolver]\nTimeout=1s\n").0.fleet == nil)
    }

    @Test func everyKeyParses() throws {
        let (configuration, warnings) = try parse(
            """
            [Fleet]
            Redis=redis://redis.fleet.example:6390/3
            PasswordFile=/etc/httpdnsd/redis-password
            Name=gateways-eu.1
            KeyFile=/etc/httpdnsd/fleet.key
            ShareCache=no
            ShareCookiesOf=crawler 1001
            ShareCookiesOf=kiosk crawler
            """)
        #expect(warnings.isEmpty)
        let fleet = try #require(configuration.fleet)
        #expect(fleet.redis == .tcp(host: "redis.fleet.example", port: 6390, database: 3))
        #expect(fleet.passwordFile == "/etc/httpdnsd/redis-password")
        #expect(fleet.name == "gateways-eu.1")
        #expect(fleet.keyFile == "/etc/httpdnsd/fleet.key")
        #expect(fleet.shareCache == false)
        #expect(fleet.shareCookiesOf == [.name("crawler"), .uid(1001), .name("kiosk")])
    }

    @Test func defaultsWithOnlyTheRequiredKeys() throws {
        let fleet = try #require(try parse(Self.minimal).0.fleet)
        #expect(fleet.redis == .tcp(host: "127.0.0.1", port: 6380, database: 2))
        #expect(fleet.passwordFile == nil)
        #expect(fleet.shareCache)
        #expect(fleet.shareCookiesOf.isEmpty)
    }

    @Test func redisAddressForms() throws {
        let cases: [(String, FleetRedisAddress)] = [
            ("redis://cache.example", .tcp(host: "cache.example", port: 6379, database: 0)),
            ("redis://Cache.Example.:7000", .tcp(host: "cache.example", port: 7000, database: 0)),
            ("REDIS://10.0.0.5/", .tcp(host: "10.0.0.5", port: 6379, database: 0)),
            ("redis://10.0.0.5:6379/15", .tcp(host: "10.0.0.5", port: 6379, database: 15)),
            ("redis://[2001:DB8::5]:6379/1", .tcp(host: "2001:db8::5", port: 6379, database: 1)),
            ("redis://[::1]", .tcp(host: "::1", port: 6379, database: 0)),
            ("unix:/run/redis/redis.sock", .unix(path: "/run/redis/redis.sock")),
        ]
        for (text, expected) in cases {
            #expect(try FleetRedisAddress.parse(text).get() == expected, "\(text)")
        }
        #expect(FleetRedisAddress.tcp(host: "::1", port: 6379, database: 0).description == "redis://[::1]:6379/0")
        #expect(FleetRedisAddress.unix(path: "/r.sock").description == "unix:/r.sock")
    }

    @Test func badRedisAddressesAreErrorsNamingTheLine() throws {
        let cases: [(String, String)] = [
            ("http://10.0.0.5", "expected redis://HOST[:PORT][/DB] or unix:PATH"),
            ("rediss://10.0.0.5", "TLS"),
            ("redis://10.0.0.5:0", "invalid port"),
            ("redis://10.0.0.5:65536", "invalid port"),
            ("redis://10.0.0.5/x", "invalid database"),
            ("redis://10.0.0.5/1?timeout=1", "options after the address"),
            ("redis://bad_host!/", "invalid host"),
            ("redis://[2001:db8::5", "unclosed IPv6"),
            // Fullwidth hex digits are Characters that are hex digits, but not an address (found by fuzzing).
            ("redis://[\u{FF21}::1]", "invalid IPv6"),
            // inet_aton reads 10.0.0.010 as 10.0.0.8: a name ending in a number is no host name.
            ("redis://10.0.0.010/", "invalid host"),
            ("redis://cache.0x1f:6379", "invalid host"),
            ("unix:relative.sock", "absolute path"),
            ("unix:/" + String(repeating: "a", count: 120), "longer than 107"),
        ]
        for (value, fragment) in cases {
            let error = try fleetError("Redis=\(value)\nName=n\nKeyFile=/k\n")
            #expect(error.line == 2 && error.key == "Redis", "\(value)")
            #expect(error.message.contains(fragment), "\(value): \(error.message)")
        }
    }

    @Test func aPasswordInTheAddressIsRefusedWithoutRepeatingIt() throws {
        let error = try fleetError("Redis=redis://:hunter2@10.0.0.5:6379/0\nName=n\nKeyFile=/k\n")
        #expect(error.message.contains("PasswordFile="))
        #expect(!error.description.contains("hunter2"))
    }

    @Test func requiredKeysAreNamedWhenMissing() throws {
        let missingRedis = try fleetError("Name=n\nKeyFile=/k\n")
        #expect(missingRedis.key == "Redis" && missingRedis.line == 1)
        #expect(missingRedis.message == "the [Fleet] section needs Redis=")
        let missingName = try fleetError("Redis=unix:/r.sock\nKeyFile=/k\n")
        #expect(missingName.key == "Name")
        let missingKey = try fleetError("Redis=unix:/r.sock\nName=n\n")
        #expect(missingKey.key == "KeyFile")
        // An empty assignment unsets the key, and the error points at it.
        let reset = try fleetError("Redis=unix:/r.sock\nName=n\nKeyFile=/k\nKeyFile=\n")
        #expect(reset.key == "KeyFile" && reset.line == 5)
        #expect(try fleetError("").key == "Redis")
    }

    @Test func namesUsersAndPathsAreValidated() throws {
        for name in ["a{b}", "x:y", "has space", String(repeating: "n", count: 65), "dé"] {
            let error = try fleetError("Redis=unix:/r.sock\nName=\(name)\nKeyFile=/k\n")
            #expect(error.key == "Name", "\(name)")
        }
        for user in ["-x", "1abc", "a/b", "toolongusernamethatexceedsthirtytwo", "4294967295"] {
            let error = try fleetError(Self.body + "ShareCookiesOf=\(user)\n")
            #expect(error.key == "ShareCookiesOf", "\(user)")
        }
        #expect(try fleetError("Redis=unix:/r.sock\nName=n\nKeyFile=fleet.key\n").key == "KeyFile")
        #expect(try fleetError(Self.body + "PasswordFile=pw\n").key == "PasswordFile")
        #expect(try fleetError(Self.body + "ShareCache=maybe\n").key == "ShareCache")
        let users = try #require(
            try parse("[Fleet]\n" + Self.body + "ShareCookiesOf=a b\nShareCookiesOf=\nShareCookiesOf=svc$ 0\n").0.fleet)
        #expect(users.shareCookiesOf == [.name("svc$"), .uid(0)])
    }

    static let body = "Redis=unix:/r.sock\nName=n\nKeyFile=/k\n"

    @Test func aFleetThatSharesNothingWarns() throws {
        let (configuration, warnings) = try parse("[Fleet]\n" + Self.body + "ShareCache=no\n")
        #expect(configuration.fleet?.shareCache == false)
        #expect(warnings.map(\.line) == [5])
        #expect(warnings.first?.message.contains("shares nothing") == true)
    }

    @Test func unknownFleetKeysAreErrorsWithAHint() throws {
        guard
            case .failure(let problems) = DaemonConfiguration.parse(
                text: Self.minimal + "sharecache=yes\nPassword=x\n", path: path)
        else {
            Issue.record("unknown [Fleet] keys must be refused")
            return
        }
        #expect(problems.errors.count == 2)
        #expect(problems.errors[0].message.contains("did you mean ShareCache=?"))
    }

    @Test func jarNamesKeepUsersAndUidsApart() {
        #expect(FleetUser.name("crawler").jarName == "user:crawler")
        #expect(FleetUser.uid(1000).jarName == "uid:1000")
        #expect(FleetUser.parse("1000") == .uid(1000))
        #expect(FleetUser.parse("crawler") == .name("crawler"))
    }
}
