import Foundation
import Glibc
import HTTPDNSProtocol
import HTTPDNSRedis
import HTTPDNSTestSupport
import Testing

/// A fleet for tests: Debian's redis-server on a Unix socket in a temporary directory (no
/// persistence unless a test saves), a fake Alibaba upstream on 127.0.0.1 that counts the
/// queries, and the fleet key files. `start` runs real daemons in it, each socket-activated
/// with its own socket and state directory.
final class TestFleet {
    static let keyHex = "3c9e1f0a7b5d2e4c6a8f0b1d3e5a7c9e2f4b6d8a0c1e3f5a7b9d0e2c4a6f8b1d"
    static let otherKeyHex = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
    static let answers: [String: (v4: [String], v6: [String], ttl: Int)] = [
        "api.example.com": (["203.0.113.10", "203.0.113.11"], ["2001:db8::10"], 300),
        "cdn.example.com": (["203.0.113.20"], [], 300),
        "wrong-key.example.com": (["203.0.113.30"], [], 300),
        "slow.example.com": (["203.0.113.40"], [], 300),
        "full.example.com": (["203.0.113.50"], [], 300),
        "password.example.com": (["203.0.113.60"], [], 300),
    ]
    static let loginURL = "https://login.example.com/"

    let redis: RedisServer
    let upstream: FakeHTTPServer
    let files = TemporaryDirectory(prefix: "fleet")

    init(upstream: FakeHTTPServer? = nil, redisPassword: String? = nil) throws {
        redis = try RedisServer(password: redisPassword)
        self.upstream = try upstream ?? FakeHTTPServer.alibaba(answers: Self.answers)
    }

    /// A file only its owner may read, as the daemon requires of secrets.
    func secretFile(_ name: String, _ contents: String) throws -> String {
        let path = files.file(name)
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    /// A configuration for one member: the fake upstream, and this fleet's Redis.
    func config(
        keyHex: String = keyHex, shareCookiesOf: String = "0", password: String? = nil, redisPath: String? = nil
    ) throws -> String {
        var text = """
            [Resolver]
            Upstream=alibaba \(upstream.alibabaURL())
            Timeout=2s
            [Server]
            IdleExit=0
            [Fleet]
            Redis=unix:\(redisPath ?? redis.socketPath)
            Name=gateways
            KeyFile=\(try secretFile("key-\(keyHex.prefix(8))", keyHex + "\n"))
            ShareCookiesOf=\(shareCookiesOf)

            """
        if let password { text += "PasswordFile=\(try secretFile("password-\(password.count)", password + "\n"))\n" }
        return text
    }

    func start(_ config: String? = nil) throws -> FleetMember {
        try FleetMember(config: config ?? self.config())
    }

    /// Three members with the same configuration.
    func trio() throws -> (FleetMember, FleetMember, FleetMember) {
        (try start(), try start(), try start())
    }

    /// Everything the fleet's Redis holds.
    func redisContents() throws -> [[UInt8]] { try RedisDump.everything(redis.connection()) }

    /// Entries in the change stream.
    func streamLength() throws -> Int64 {
        try redis.connection().command(["XLEN", "httpdnsd:{gateways}:changes"]).integer ?? 0
    }
}

/// One daemon of a test fleet, with a session; `restart` starts it again on its state.
final class FleetMember {
    let directory = TemporaryDirectory()
    let config: String
    private(set) var session: RPCSession

    init(config: String) throws {
        self.config = config
        session = try RPCSession(daemon: DaemonHarness(config: config, directory: directory))
    }

    var daemon: DaemonHarness { session.daemon }

    /// Kills the daemon with SIGKILL (no drain, no shutdown) and waits until it is gone.
    func kill9() {
        daemon.signal(SIGKILL)
        _ = daemon.waitForExit()
    }

    /// Starts the daemon again on the same state directory and socket.
    func restart() throws {
        daemon.stop()
        session = try RPCSession(daemon: DaemonHarness(config: config, directory: directory))
    }

    /// Sets a persistent cookie of login.example.com; returns once the daemon acknowledged it.
    func set(_ name: String, _ value: String) throws {
        let result = try session.setCookies(
            TestFleet.loginURL, ["\(name)=\(value); Path=/; Secure; HttpOnly; Max-Age=86400"])
        guard result["stored"] == 1 else { throw HarnessError("\(name)=\(value) not stored: \(result.encodedString)") }
    }

    /// The cookies of example.com, by name.
    func cookies() throws -> [String: String] {
        var values: [String: String] = [:]
        for cookie in try session.list(domain: "example.com") {
            if let name = cookie["name"]?.stringValue { values[name] = cookie["value"]?.stringValue }
        }
        return values
    }

    /// The whole listing of example.com (every attribute), to compare members.
    func listing() throws -> String {
        JSON.array(try session.list(domain: "example.com")).encodedString
    }

    func resolve(_ host: String) throws -> JSON { try session.result("resolve", ["host": .string(host)]) }

    /// `status.fleet`.
    func fleet() throws -> JSON {
        guard let fleet = try session.result("status")["fleet"] else {
            throw HarnessError("status has no fleet member; log: \(daemon.log)")
        }
        return fleet
    }

    func fleetNumber(_ member: String) throws -> Int64 { try fleet()[member]?.numberValue?.int64Value ?? -1 }

    /// How many lines of the daemon's log contain `text`.
    func logLines(containing text: String) -> Int {
        daemon.log.split(separator: "\n").filter { $0.contains(text) }.count
    }
}

/// The fleet tier end to end: real daemons, a real redis-server, fake upstreams on 127.0.0.1.
@Suite(.serialized, .enabled(if: RedisServer.isInstalled, "needs Debian's redis-server"))
struct FleetTests {
    @Test func aCookieSetOnAIsReadOnBAndC() throws {
        let fleet = try TestFleet()
        let (a, b, c) = try fleet.trio()
        try a.set("sid", "shared-login")
        for member in [b, c] {
            #expect(try eventually { try member.cookies()["sid"] == "shared-login" }, "\(member.daemon.log)")
            // Sent like any cookie of the jar.
            #expect(try member.session.header(TestFleet.loginURL) == "sid=shared-login")
        }
        // A deletion travels too.
        #expect(try a.session.deleted(["domain": "example.com", "name": "sid"]) == 1)
        for member in [b, c] { #expect(try eventually { try member.cookies()["sid"] == nil }) }

        let status = try a.fleet()
        #expect(status["connected"] == true && status["state"] == "connected", "\(status.encodedString)")
        // The client's typed result reads the member too.
        #expect(StatusResult(json: try a.session.result("status"))?.fleet?.state == "connected")
        #expect(try eventually { try a.fleetNumber("outbox") == 0 })
        #expect(status["rejected"] == 0)
        #expect(status["lastStateChange"]?.numberValue?.int64Value ?? 0 > 0)
        // Without [Fleet], status has no fleet member.
        let plain = try RPCSession(config: "[Resolver]\nUpstream=alibaba \(fleet.upstream.alibabaURL())\n")
        #expect(try plain.result("status")["fleet"] == nil)
    }

    @Test func aResolveOnAIsAnsweredOnBFromTheFleet() throws {
        let fleet = try TestFleet()
        let (a, b, c) = try fleet.trio()
        let first = try a.resolve("api.example.com")
        #expect(first["source"] == "upstream", "\(first.encodedString)")
        let shared = try b.resolve("api.example.com")
        #expect(shared["source"] == "fleet", "\(shared.encodedString)")
        #expect(shared["ipv4"] == ["203.0.113.10", "203.0.113.11"] && shared["ipv6"] == ["2001:db8::10"])
        // The publisher's expiry keeps counting down: never longer than A's answer.
        let ttlA = first["ttl"]?.numberValue?.int64Value ?? 0
        let ttlB = shared["ttl"]?.numberValue?.int64Value ?? .max
        #expect(ttlB <= ttlA && ttlB > 0)
        #expect(fleet.upstream.requestCount == 1)
        // B keeps the answer in its own cache, and its uid learned the addresses from it.
        #expect(try b.resolve("api.example.com")["source"] == "cache")
        #expect(try b.session.result("reverse", ["address": "203.0.113.10"])["hosts"] == ["api.example.com"])
        #expect(try c.resolve("api.example.com")["source"] == "fleet")
        #expect(fleet.upstream.requestCount == 1)
    }

    @Test func onlyOneMachineQueriesTheUpstreamForANameAtATime() throws {
        let upstream = try FakeHTTPServer { _ in
            .delay(ms: 400, then: .json(#"{"host":"cdn.example.com","ips":["203.0.113.20"],"ipsv6":[],"ttl":300}"#))
        }
        let fleet = try TestFleet(upstream: upstream)
        let (a, b, c) = try fleet.trio()
        let line = #"{"jsonrpc":"2.0","id":7,"method":"resolve","params":{"host":"cdn.example.com","family":"ipv4"}}"#
        for member in [a, b, c] { try member.session.client.sendLine(line) }
        var sources: [String] = []
        for member in [a, b, c] {
            let response = try #require(member.session.client.readJSON())
            #expect(response["result"]?["ipv4"] == ["203.0.113.20"], "\(response.encodedString)")
            sources.append(response["result"]?["source"]?.stringValue ?? "?")
        }
        #expect(upstream.requestCount == 1, "sources: \(sources)")
        #expect(sources.sorted() == ["fleet", "fleet", "upstream"])
    }

    @Test func redisRestartedWithItsDataOrEmptyConverges() throws {
        let fleet = try TestFleet()
        let (a, b, c) = try fleet.trio()
        try a.set("one", "1")
        #expect(try eventually { try b.cookies()["one"] == "1" && c.cookies()["one"] == "1" })

        // Restarted with its data (saved before the kill); changes made meanwhile wait in the outboxes.
        _ = try fleet.redis.connection().command(["SAVE"])
        fleet.redis.kill()
        try a.set("two", "2")
        try b.set("three", "3")
        #expect(try eventually { try a.fleet()["connected"] == false })
        #expect(try a.fleetNumber("outbox") >= 1)
        try fleet.redis.start()
        // Restarted empty: everything the daemons hold is published again.
        #expect(try eventually { try c.cookies()["two"] == "2" && c.cookies()["three"] == "3" })
        fleet.redis.kill()
        fleet.redis.removeSavedData()
        try c.set("four", "4")
        try fleet.redis.start()

        let expected = ["one": "1", "two": "2", "three": "3", "four": "4"]
        for member in [a, b, c] {
            #expect(try eventually { try member.cookies() == expected }, "\((try? member.cookies()) ?? [:])")
            #expect(try eventually { try member.fleetNumber("outbox") == 0 })
        }
        // One log line per change of state, not one per request.
        for member in [a, b, c] {
            #expect(member.logLines(containing: "fleet: Redis unreachable") <= 2, "\(member.daemon.log)")
            #expect(member.logLines(containing: "fleet: Redis is back") >= 1)
        }
    }

    @Test func aDaemonKilledWithAPendingOutboxReplicatesAfterRestart() throws {
        let fleet = try TestFleet()
        let (a, b, _) = try fleet.trio()
        try a.set("before", "b")
        #expect(try eventually { try b.cookies()["before"] == "b" })
        fleet.redis.kill()
        try a.set("pending", "acknowledged-while-redis-was-down")
        #expect(try a.fleetNumber("outbox") >= 1)
        a.kill9()
        try fleet.redis.start()
        try a.restart()
        #expect(
            try eventually { try b.cookies()["pending"] == "acknowledged-while-redis-was-down" },
            "\(a.daemon.log)")
        #expect(try eventually { try a.fleetNumber("outbox") == 0 })
        #expect(try a.cookies()["pending"] == "acknowledged-while-redis-was-down")
    }

    @Test func cookiesLostWithoutAReplicatedChangeComeBackAndExpiryIsNotReplicated() throws {
        let fleet = try TestFleet()
        let (a, b, _) = try fleet.trio()
        try a.set("sid", "kept-by-the-fleet")
        _ = try a.session.setCookies(TestFleet.loginURL, ["brief=1; Path=/; Max-Age=1"])
        // (B may see "brief" only briefly: it expires within a second everywhere.)
        #expect(try eventually { try b.cookies()["sid"] != nil && a.fleetNumber("outbox") == 0 })

        // The expiry purge of "brief" goes to A's store but not to the fleet: only the marker set
        // after it is a new stream entry.
        let streamBefore = try fleet.streamLength()
        #expect(try eventually(10) { try a.cookies()["brief"] == nil })
        try a.set("marker", "1")
        #expect(try eventually { try b.cookies()["marker"] == "1" })
        #expect(try fleet.streamLength() == streamBefore + 1)

        // B loses "sid" from its store while it is stopped, as the purge of session cookies after a
        // reboot does: it comes back from the fleet when B starts again.
        b.daemon.stop()
        let purge = try runCommand(
            "/usr/bin/python3",
            [
                "-c",
                "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
                    + "db.execute(\"DELETE FROM cookies WHERE name = 'sid'\"); db.commit()",
                b.daemon.stateDirectory + "/httpdnsd.sqlite3",
            ])
        #expect(purge.status == 0, "\(purge.stderr)")
        try b.restart()
        #expect(try eventually { try b.cookies()["sid"] == "kept-by-the-fleet" }, "\(b.daemon.log)")
        #expect(try a.cookies()["sid"] == "kept-by-the-fleet")
    }

    @Test func concurrentChangesOnAAndBConvergeOnAllThree() throws {
        let fleet = try TestFleet()
        let (a, b, c) = try fleet.trio()
        let writes = 1_000
        // Two writers, each with its own connection, pipelining every change.
        let writers = [(a, "a"), (b, "b")].map { member, tag in
            ConcurrentWriter(daemon: member.daemon, tag: tag, count: writes)
        }
        for writer in writers { #expect(writer.wait() == writes, "acknowledged changes") }
        #expect(
            try eventually(60) {
                try [a, b, c].allSatisfy { try $0.fleetNumber("outbox") == 0 }
                    && Set(try [a, b, c].map { try $0.listing() }).count == 1
            })
        let final = try a.cookies()["race"]
        // The last change of one of the two writers wins everywhere.
        #expect(final == "a-\(writes - 1)" || final == "b-\(writes - 1)", "\(final ?? "none")")
        #expect(try b.cookies()["race"] == final && c.cookies()["race"] == final)
    }

    @Test func redisHoldsNoCookieValueAndNoHostName() throws {
        let fleet = try TestFleet()
        let (a, b, _) = try fleet.trio()
        try a.set("SESSIONID", "s3cr3t-session-value")
        _ = try a.resolve("api.example.com")
        _ = try b.resolve("cdn.example.com")
        #expect(try eventually { try b.cookies()["SESSIONID"] == "s3cr3t-session-value" })
        #expect(try b.session.deleted(["domain": "example.com", "name": "SESSIONID"]) == 1)
        #expect(try eventually { try a.cookies()["SESSIONID"] == nil })

        let everything = try fleet.redisContents()
        #expect(everything.count > 8)
        for secret in [
            "example", "login", "SESSIONID", "s3cr3t", "203.0.113", "2001:db8", "uid:0", "HttpOnly", "86400",
        ] {
            #expect(!RedisDump.contains(everything, secret), "\(secret) is readable in Redis")
        }
    }

    @Test func aDaemonWithAnotherFleetKeyAppliesNothing() throws {
        let fleet = try TestFleet()
        let (a, b, _) = try fleet.trio()
        let stranger = try fleet.start(try fleet.config(keyHex: TestFleet.otherKeyHex))
        try a.set("sid", "for-the-fleet-only")
        _ = try a.resolve("wrong-key.example.com")
        #expect(try eventually { try b.cookies()["sid"] == "for-the-fleet-only" })
        // It reads the stream, cannot open a single entry, counts them and applies none.
        #expect(try eventually { try stranger.fleetNumber("rejected") >= 1 }, "\(stranger.daemon.log)")
        #expect(try stranger.cookies().isEmpty)
        // The fleet's answer does not open either: it asks the upstream itself.
        #expect(try stranger.resolve("wrong-key.example.com")["source"] == "upstream")
        #expect(stranger.logLines(containing: "fleet: rejected an entry") == 1)
        // And its own changes are nothing to the others.
        try stranger.set("intruder", "x")
        #expect(try eventually { try a.fleetNumber("rejected") >= 1 })
        #expect(try a.cookies()["intruder"] == nil)
    }

    @Test(.enabled(if: OtherUser.available, OtherUser.skipReason))
    func aUserOutsideShareCookiesOfNeverReachesTheFleet() throws {
        let fleet = try TestFleet()
        let (a, b, _) = try fleet.trio()
        for member in [a, b] { try OtherUser.admit(member.daemon) }
        try a.set("warmup", "1")
        #expect(try eventually { try b.cookies()["warmup"] == "1" && a.fleetNumber("outbox") == 0 })
        let streamBefore = try fleet.streamLength()

        let set = try OtherUser.call(
            a.daemon, "handleSetCookie",
            ["url": .string(TestFleet.loginURL), "setCookie": ["private=only-mine; Path=/; Max-Age=3600"]])
        #expect(set["result"]?["stored"] == 1, "\(set.encodedString)")
        // A marker from the shared user, set after it: once B has the marker, anything the
        // other user's change could have sent would have arrived too.
        try a.set("marker", "after")
        #expect(try eventually { try b.cookies()["marker"] == "after" })
        let listed = try OtherUser.call(b.daemon, "listCookies", [:])
        #expect(listed["result"]?["cookies"] == [], "\(listed.encodedString)")
        #expect(try fleet.streamLength() == streamBefore + 1)
        #expect(try b.cookies()["private"] == nil)
    }

    /// A path to Redis that turned slow (a byte of each reply every 300 ms: every read in time,
    /// no reply ever whole): a cache miss is answered by the upstream within Timeout=, status
    /// says the fleet is unreachable and why, and once the path is fast again it is connected.
    @Test func aTricklingRedisCostsAMissOnlyItsFleetBudget() throws {
        let fleet = try TestFleet()
        let proxy = try SocketProxy(to: fleet.redis.socketPath, in: fleet.files)
        let a = try fleet.start(try fleet.config(redisPath: proxy.socketPath))
        #expect(try a.resolve("api.example.com")["source"] == "upstream")
        #expect(try eventually { try a.fleet()["state"] == "connected" })
        proxy.trickleMilliseconds = 300
        let started = Date()
        #expect(try a.resolve("cdn.example.com")["source"] == "upstream")
        // Real time is what is tested: Timeout=2s bounds the miss (the fleet's part is a
        // quarter of it); before, the lookup waited for Redis forever and the resolve failed.
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(try eventually { try a.fleet()["state"] == "unreachable" })
        #expect(try a.fleet()["lastError"]?.stringValue?.contains("no whole reply within") == true)
        proxy.trickleMilliseconds = nil
        #expect(try eventually(30) { try a.fleet()["state"] == "connected" }, "\(a.daemon.log)")
        #expect(a.logLines(containing: "fleet: Redis unreachable") <= 2, "rate-limited per cause")
    }

    /// Entries someone wrote into Redis past 64 KiB (a 4 MiB stream entry and snapshot value)
    /// are skipped without being read and counted in status.fleet.rejected; the changes after
    /// them still arrive, and a daemon catching up from the snapshot skips the big value too.
    @Test func oversizedFleetEntriesAreSkippedUnreadAndCounted() throws {
        let fleet = try TestFleet()
        let proxy = try SocketProxy(to: fleet.redis.socketPath, in: fleet.files)
        let a = try fleet.start(try fleet.config(redisPath: proxy.socketPath))
        let b = try fleet.start()
        try b.set("before", "1")
        #expect(try eventually { try a.cookies()["before"] == "1" })
        let before = proxy.bytesToClients
        let redis = fleet.redis.connection()
        let huge = [UInt8](repeating: 0x41, count: 4 << 20)
        _ = try redis.streamAdd(
            "httpdnsd:{gateways}:changes", maxLength: nil,
            fields: [RedisFieldValue(field: Array("c".utf8), value: huge)])
        _ = try redis.hashSet("httpdnsd:{gateways}:snapshot", [RedisFieldValue(field: Array("x".utf8), value: huge)])
        try b.set("after", "2")
        #expect(try eventually { try a.cookies()["after"] == "2" })
        #expect(try a.fleetNumber("rejected") >= 1)
        let c = try fleet.start(try fleet.config(redisPath: proxy.socketPath))
        #expect(try eventually { try c.cookies()["after"] == "2" })
        #expect(try eventually { try c.fleetNumber("rejected") >= 1 })
        let read = proxy.bytesToClients - before
        #expect(read < 4 << 20, "\(read) bytes read by two daemons past two 4 MiB values")
    }

    @Test func aSlowOrFullRedisOrAWrongPasswordOnlyCostsTheFleet() throws {
        let fleet = try TestFleet(redisPassword: "correct horse")
        let a = try fleet.start(try fleet.config(password: "correct horse"))
        let b = try fleet.start(try fleet.config(password: "correct horse"))
        let locked = try fleet.start(try fleet.config(password: "wrong battery"))

        // Wrong password: the daemon serves from local state and its upstreams, and says why.
        #expect(try eventually { try locked.fleet()["state"] == "authentication-failed" })
        #expect(try locked.resolve("password.example.com")["source"] == "upstream")
        try locked.set("local", "still-works")
        #expect(try locked.cookies()["local"] == "still-works")
        #expect(!locked.daemon.log.contains("wrong battery") && !locked.daemon.log.contains("correct horse"))
        #expect(locked.logLines(containing: "fleet: Redis refused the login") == 1, "\(locked.daemon.log)")

        // Slow (stopped): commands time out, resolves are answered by the upstream in time.
        let pid = try #require(fleet.redis.pid)
        kill(pid, SIGSTOP)
        #expect(try a.resolve("slow.example.com")["source"] == "upstream")
        try a.set("during-stall", "kept")
        #expect(try eventually { try a.fleet()["state"] == "unreachable" })
        kill(pid, SIGCONT)
        #expect(try eventually { try b.cookies()["during-stall"] == "kept" })
        #expect(try eventually { try a.fleet()["state"] == "connected" })

        // Full: writes are refused, changes wait in the outbox, and go out once there is room.
        _ = try fleet.redis.connection().command(["CONFIG", "SET", "maxmemory", "1"])
        try a.set("during-full", "waits")
        #expect(try eventually { try a.fleet()["state"] == "full" }, "\(a.daemon.log)")
        #expect(try a.fleetNumber("outbox") >= 1)
        #expect(try a.resolve("full.example.com")["source"] == "upstream")
        _ = try fleet.redis.connection().command(["CONFIG", "SET", "maxmemory", "0"])
        #expect(try eventually { try b.cookies()["during-full"] == "waits" })
        #expect(try eventually { try a.fleetNumber("outbox") == 0 && a.fleet()["state"] == "connected" })
        // One line per change of state.
        #expect(a.logLines(containing: "fleet: Redis is full") == 1, "\(a.daemon.log)")
        #expect(try locked.cookies()["during-full"] == nil)
    }
}

/// A thread that pipelines `count` changes of the cookie `race` to one daemon on a connection
/// of its own, then reads every answer.
final class ConcurrentWriter: @unchecked Sendable {
    // @unchecked: `acknowledged` is written by the writer thread before `done` is signalled.
    private let done = DispatchSemaphore(value: 0)
    private var acknowledged = 0

    init(daemon: DaemonHarness, tag: String, count: Int) {
        let socket = daemon.socketPath
        Thread.detachNewThread { [self] in
            defer { done.signal() }
            guard let client = try? LineClient(path: socket) else { return }
            var lines = ""
            for index in 0..<count {
                lines +=
                    #"{"jsonrpc":"2.0","id":\#(index),"method":"handleSetCookie","params":{"url":"https://login.example.com/","setCookie":["race=\#(tag)-\#(index); Path=/; Secure; Max-Age=86400"]}}"#
                    + "\n"
            }
            guard (try? client.send(lines)) != nil else { return }
            for _ in 0..<count {
                guard let response = client.readJSON(timeout: 60), response["result"]?["stored"] == 1 else { return }
                acknowledged += 1
            }
        }
    }

    /// The changes acknowledged.
    func wait() -> Int {
        done.wait()
        return acknowledged
    }
}
