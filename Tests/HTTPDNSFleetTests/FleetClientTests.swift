import Dispatch
import Glibc
import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSProtocol
import HTTPDNSRedis
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

/// The shared cache through `FleetClient.resolve`, on real event loops against a real Redis.
struct FleetCacheTests {
    typealias F = FleetFixtures

    /// What one resolve ended with.
    enum Outcome: Sendable, Equatable {
        case fleet([FleetCacheHit])
        case upstream
    }

    /// Starts a resolve on `daemon`'s loop; the fake upstream answers after `upstreamDelayMs`
    /// and counts its queries.
    static func resolve(
        _ daemon: TestFleetDaemon, host: String, upstreamQueries: Recorder<String>, outcomes: Recorder<Outcome>,
        upstreamDelayMs: Int64 = 200, timeoutMs: Int = 2_000, upstreamFails: Bool = false
    ) {
        daemon.withClient { client in
            client.resolve(host: host, families: [.ipv4], timeoutMs: timeoutMs) { hits in
                outcomes.append(.fleet(hits))
            } queryUpstream: { report in
                upstreamQueries.append(host)
                client.loop.schedule(afterMilliseconds: upstreamDelayMs) {
                    if upstreamFails {
                        report.failed()
                    } else {
                        report.answered([F.answer(host, ["203.0.113.77"], ttlMs: 60_000)])
                    }
                    outcomes.append(.upstream)
                }
            }
        }
    }

    @Test func oneMachineQueriesTheUpstreamAndTheOthersGetItsAnswer() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"), replicate: false)
        let b = TestFleetDaemon(server: server, machine: F.machine("b"), replicate: false)
        let c = TestFleetDaemon(server: server, machine: F.machine("c"), replicate: false)
        defer { for daemon in [a, b, c] { _ = daemon.stop() } }
        let queries = Recorder<String>()
        let outcomes = Recorder<Outcome>()
        // A generous budget: waiting machines give up only at half of it, and a loaded test
        // machine must not turn a slow answer into a second query.
        Self.resolve(a, host: "api.example.com", upstreamQueries: queries, outcomes: outcomes, timeoutMs: 10_000)
        #expect(eventually { queries.count == 1 })
        // B and C miss while A holds the lock: they wait for A's answer instead of querying.
        Self.resolve(b, host: "api.example.com", upstreamQueries: queries, outcomes: outcomes, timeoutMs: 10_000)
        Self.resolve(c, host: "api.example.com", upstreamQueries: queries, outcomes: outcomes, timeoutMs: 10_000)
        #expect(eventually { outcomes.count == 3 })
        #expect(queries.all == ["api.example.com"])
        let fleetAnswers = outcomes.all.compactMap { outcome -> [FleetCacheHit]? in
            if case .fleet(let hits) = outcome { return hits }
            return nil
        }
        #expect(fleetAnswers.count == 2)
        for hits in fleetAnswers {
            #expect(hits.map(\.record.addresses) == [["203.0.113.77"]])
            #expect(hits[0].millisecondsLeft <= 60_000 && hits[0].ttlSeconds >= 58)
        }
        // Later resolves anywhere are fleet hits at once.
        Self.resolve(b, host: "api.example.com", upstreamQueries: queries, outcomes: outcomes)
        #expect(eventually { outcomes.count == 4 })
        #expect(queries.count == 1)
    }

    @Test func aFailedHolderLetsTheNextMachineQuery() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"), replicate: false)
        let b = TestFleetDaemon(server: server, machine: F.machine("b"), replicate: false)
        defer { for daemon in [a, b] { _ = daemon.stop() } }
        let queries = Recorder<String>()
        let outcomes = Recorder<Outcome>()
        Self.resolve(a, host: "flaky.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamFails: true)
        #expect(eventually { queries.count == 1 })
        Self.resolve(b, host: "flaky.example.com", upstreamQueries: queries, outcomes: outcomes)
        // A's upstream fails and A releases the lock; B takes it over and queries itself.
        #expect(eventually { outcomes.count == 2 })
        #expect(queries.count == 2)
        #expect(outcomes.all == [.upstream, .upstream])
    }

    @Test func withRedisDownResolvesGoStraightToTheUpstreamsAndItIsLoggedOnce() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(
            server: server, machine: F.machine("a"),
            configure: { $0.backoff = FleetBackoff(initialMilliseconds: 200, maximumMilliseconds: 400) },
            replicate: false)
        defer { _ = a.stop() }
        let queries = Recorder<String>()
        let outcomes = Recorder<Outcome>()
        Self.resolve(a, host: "one.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually { outcomes.count == 1 })
        #expect(a.status().condition == .connected)
        server.kill()
        for index in 0..<20 {
            Self.resolve(
                a, host: "down\(index).example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        }
        #expect(eventually { outcomes.count == 21 })
        #expect(queries.count == 21)
        let status = a.status()
        #expect(status.condition == .unreachable && !status.connected)
        #expect(status.lastError?.contains(server.socketPath) == true)
        let warnings = a.model.logs.all.filter { $0.message.contains("unreachable") }
        #expect(warnings.count == 1)
        // Back: after the backoff, the fleet is used again and that is logged once.
        try server.restart()
        #expect(
            eventually {
                // Each resolve tries the fleet once its backoff is over; its outcome says it did.
                let answered = outcomes.count
                Self.resolve(
                    a, host: "back.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
                return eventually { outcomes.count > answered } && a.status().condition == .connected
            })
        #expect(a.model.logs.all.filter { $0.message.contains("is back") }.count == 1)
    }

    /// Whatever the Redis thread waits on (here a command that may take 10 s), a resolve's
    /// fleet lookup gets a quarter of its budget on the loop's clock, then the upstreams are
    /// asked as if there were no fleet. Real time is what is tested: 5 s leaves the 500 ms budget
    /// room on a loaded machine, and is half the command's own timeout.
    @Test func aResolveGoesToTheUpstreamsWithinItsFleetBudgetWhateverRedisDoes() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(
            server: server, machine: F.machine("a"), configure: { $0.redis.commandTimeoutMilliseconds = 10_000 },
            replicate: false)
        defer { _ = a.stop() }
        let queries = Recorder<String>()
        let outcomes = Recorder<Outcome>()
        Self.resolve(a, host: "warm.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually { outcomes.count == 1 })
        let pid = try #require(server.pid)
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        Self.resolve(a, host: "stuck.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually(5) { queries.all.contains("stuck.example.com") && outcomes.count == 2 })
    }

    @Test func aStalledRedisCostsAResolveOneCommandTimeoutAndThenNothing() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(
            server: server, machine: F.machine("a"),
            configure: {
                $0.redis.commandTimeoutMilliseconds = 150
                $0.backoff = FleetBackoff(initialMilliseconds: 60_000, maximumMilliseconds: 60_000)
            }, replicate: false)
        defer { _ = a.stop() }
        let queries = Recorder<String>()
        let outcomes = Recorder<Outcome>()
        Self.resolve(a, host: "warm.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually { outcomes.count == 1 })
        let pid = try #require(server.pid)
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        Self.resolve(a, host: "stalled.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually { outcomes.count == 2 })
        let status = a.status()
        #expect(status.condition == .unreachable && status.lastError?.contains("no whole reply within 150 ms") == true)
        // While backing off, the next resolves do not touch Redis at all.
        for index in 0..<5 {
            Self.resolve(
                a, host: "next\(index).example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        }
        #expect(eventually { outcomes.count == 7 })
        #expect(queries.count == 7)
        kill(pid, SIGCONT)
        // Redis saw one connection from the daemon (the one that stalled) and this one: no
        // reconnect per request.
        let info = try RedisConnection(options: F.redisOptions(server)).command(["INFO", "stats"]).text ?? ""
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("total_connections_received:") }
        #expect(line == "total_connections_received:2")
    }

    @Test func aWrongFleetKeyNeverServesAnotherFleetsAnswers() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"), replicate: false)
        let stranger = TestFleetDaemon(
            server: server, machine: F.machine("e"), key: F.key(F.otherKeyHex), replicate: false)
        defer { for daemon in [a, stranger] { _ = daemon.stop() } }
        let queries = Recorder<String>()
        let outcomes = Recorder<Outcome>()
        Self.resolve(a, host: "api.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually { outcomes.count == 1 })
        Self.resolve(
            stranger, host: "api.example.com", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually { outcomes.count == 2 })
        #expect(outcomes.all == [.upstream, .upstream])
    }
}

/// Cookie replication through the real stream and snapshot.
struct FleetReplicationTests {
    typealias F = FleetFixtures

    static func converged(_ daemons: [TestFleetDaemon]) -> Bool {
        let first = daemons[0].model.cookies
        return daemons.allSatisfy { $0.outboxCount == 0 && $0.model.cookies == first }
    }

    static func address(_ name: String, domain: String = "login.example.com") -> FleetCookieAddress {
        FleetCookieAddress(jar: TestFleetDaemon.jar, key: CookieKey(domain: domain, path: "/", name: name))
    }

    @Test func aCookieSetOnOneMachineReachesTheOthers() throws {
        let server = try RedisServer()
        let daemons = ["a", "b", "c"].map { TestFleetDaemon(server: server, machine: F.machine(Character($0))) }
        defer { for daemon in daemons { _ = daemon.stop() } }
        daemons[0].change("sid", to: "abc")
        #expect(eventually { daemons.allSatisfy { $0.model.cookies[Self.address("sid")] == "abc" } })
        daemons[1].change("sid", to: nil)
        #expect(eventually { daemons.allSatisfy { $0.model.cookies.isEmpty } })
        #expect(daemons.allSatisfy { $0.status().outbox == 0 && $0.status().rejected == 0 })
        #expect(daemons.allSatisfy { ($0.status().lagSeconds ?? 99) < 5 })
    }

    @Test func concurrentChangesOfOneCookieFromTwoWritersConverge() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"))
        let b = TestFleetDaemon(server: server, machine: F.machine("b"))
        let c = TestFleetDaemon(server: server, machine: F.machine("c"))
        defer { for daemon in [a, b, c] { _ = daemon.stop() } }
        let writers = [(a, "a"), (b, "b")]
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let (daemon, name) = writers[index]
            for step in 0..<1_000 {
                daemon.change("sid", to: "\(name)-\(step)")
                if step % 10 == 0 { daemon.change("other-\(name)", to: "\(step)") }
            }
        }
        #expect(eventually(60) { Self.converged([a, b, c]) })
        let final = a.model.cookies
        #expect(final[Self.address("sid")] == "a-999" || final[Self.address("sid")] == "b-999")
        #expect(final[Self.address("other-a")] == "990" && final[Self.address("other-b")] == "990")
        // Same registers (versions) everywhere, not just the same values.
        let registers = [a, b, c].map { daemon in daemon.model.state.withLock { $0.registers[Self.address("sid")] } }
        #expect(registers[0] != nil && registers[0] == registers[1] && registers[1] == registers[2])
    }

    @Test func aDaemonThatFellBehindTheStreamCatchesUpFromTheSnapshot() throws {
        // Small stream nodes, so MAXLEN ~ can trim a short stream.
        let server = try RedisServer(arguments: ["--stream-node-max-entries", "5"])
        let shortStream: (inout FleetClientOptions) -> Void = { $0.streamMaxLength = 10 }
        let a = TestFleetDaemon(server: server, machine: F.machine("a"), configure: shortStream)
        var c = TestFleetDaemon(server: server, machine: F.machine("c"), configure: shortStream)
        defer { _ = a.stop() }
        a.change("kept", to: "1")
        a.change("deleted-while-away", to: "x")
        #expect(eventually { c.model.cookies.count == 2 })
        let away = c.stop()
        // While C is away: a deletion and far more changes than the stream keeps.
        a.change("deleted-while-away", to: nil)
        for index in 0..<100 { a.change("n\(index % 20)", to: "v\(index)") }
        #expect(eventually { a.outboxCount == 0 })
        let length = try RedisConnection(options: F.redisOptions(server)).command([
            "XLEN", "httpdnsd:{gateways}:changes",
        ])
        #expect((length.integer ?? 0) < 50)
        c = TestFleetDaemon(server: server, machine: F.machine("c"), stored: away, configure: shortStream)
        defer { _ = c.stop() }
        #expect(eventually { Self.converged([a, c]) })
        #expect(c.model.cookies.count == 21)
        #expect(c.model.cookies[Self.address("deleted-while-away")] == nil)
        #expect(c.model.cookies[Self.address("n19")] == "v99")
    }

    @Test func redisRestartedEmptyIsRefilledAndNothingIsLost() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"))
        let b = TestFleetDaemon(server: server, machine: F.machine("b"))
        defer { for daemon in [a, b] { _ = daemon.stop() } }
        a.change("from-a", to: "1")
        b.change("from-b", to: "2")
        #expect(eventually { Self.converged([a, b]) && a.model.cookies.count == 2 })
        try server.restart()  // nothing was saved: empty
        a.change("after-restart", to: "3")
        #expect(eventually { Self.converged([a, b]) && b.model.cookies.count == 3 })
        // A daemon joining now gets everything from Redis: the others put it back.
        let c = TestFleetDaemon(server: server, machine: F.machine("c"))
        defer { _ = c.stop() }
        #expect(eventually { c.model.cookies == a.model.cookies })
        #expect(c.model.cookies.count == 3)
    }

    @Test func redisRestartedFromAnOlderSaveGetsTheLostChangesBack() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"))
        let b = TestFleetDaemon(server: server, machine: F.machine("b"))
        defer { for daemon in [a, b] { _ = daemon.stop() } }
        a.change("saved", to: "1")
        #expect(eventually { Self.converged([a, b]) && b.model.cookies.count == 1 })
        _ = try RedisConnection(options: F.redisOptions(server)).command(["SAVE"])
        // Acknowledged by Redis (out of the outbox) after the save: lost when it restarts from it.
        a.change("after-save", to: "2")
        b.change("saved", to: "changed")
        #expect(eventually { Self.converged([a, b]) && a.model.cookies.count == 2 })
        try server.restart()
        #expect(eventually { Self.converged([a, b]) })
        let c = TestFleetDaemon(server: server, machine: F.machine("c"))
        defer { _ = c.stop() }
        #expect(eventually { c.model.cookies == a.model.cookies })
        #expect(c.model.cookies == [Self.address("saved"): "changed", Self.address("after-save"): "2"])
    }

    @Test func changesWaitInTheOutboxWhileRedisIsDownOrFull() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"))
        let b = TestFleetDaemon(server: server, machine: F.machine("b"))
        defer { for daemon in [a, b] { _ = daemon.stop() } }
        server.kill()
        a.change("while-down", to: "1")
        // Redis is seen down (the fleet is reported unreachable), and the change stays queued.
        #expect(eventually { a.status().condition == .unreachable })
        #expect(a.outboxCount == 1)
        try server.restart()
        #expect(eventually { Self.converged([a, b]) && b.model.cookies.count == 1 })
        // Full: writes refused until there is room.
        let admin = RedisConnection(options: F.redisOptions(server))
        _ = try admin.command(["CONFIG", "SET", "maxmemory", "1"])
        a.change("while-full", to: "2")
        #expect(eventually { a.status().condition == .full })
        #expect(a.outboxCount == 1)
        #expect(a.model.logs.all.filter { $0.message.contains("full") }.count == 1)
        _ = try admin.command(["CONFIG", "SET", "maxmemory", "0"])
        #expect(eventually { Self.converged([a, b]) && b.model.cookies.count == 2 })
        #expect(a.status().condition == .connected)
    }

    @Test func aDaemonWithAnotherFleetKeyAppliesNothing() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"))
        let stranger = TestFleetDaemon(server: server, machine: F.machine("e"), key: F.key(F.otherKeyHex))
        defer { for daemon in [a, stranger] { _ = daemon.stop() } }
        for index in 0..<5 { a.change("c\(index)", to: "v") }
        #expect(eventually { stranger.status().rejected >= 5 })
        #expect(stranger.model.cookies.isEmpty)
        #expect(stranger.model.logs.all.filter { $0.message.contains("rejected") }.count == 1)
        // And its own changes are rejected by the fleet.
        stranger.change("intruder", to: "x")
        #expect(eventually { a.status().rejected >= 1 })
        #expect(a.model.cookies[Self.address("intruder")] == nil)
    }

    @Test func noPlaintextReachesRedis() throws {
        let server = try RedisServer()
        let a = TestFleetDaemon(server: server, machine: F.machine("a"))
        defer { _ = a.stop() }
        a.change("SESSIONID", to: "s3cr3t-session-value", domain: "bank.example.net")
        a.change("deleted-name", to: nil, domain: "bank.example.net")
        let queries = Recorder<String>()
        let outcomes = Recorder<FleetCacheTests.Outcome>()
        FleetCacheTests.resolve(
            a, host: "api.example.org", upstreamQueries: queries, outcomes: outcomes, upstreamDelayMs: 1)
        #expect(eventually { a.outboxCount == 0 && outcomes.count == 1 })
        // The answer is published after the reply: wait until Redis holds it.
        let redis = RedisConnection(options: F.redisOptions(server))
        var everything: [[UInt8]] = []
        #expect(
            try eventually {
                everything = try RedisDump.everything(redis)
                return RedisDump.contains(everything, ":dns:")
            })
        for secret in ["SESSIONID", "s3cr3t", "bank", "example", "deleted-name", "203.0.113", "crawler"] {
            #expect(!RedisDump.contains(everything, secret), "\(secret) is readable in Redis")
        }
    }
}
