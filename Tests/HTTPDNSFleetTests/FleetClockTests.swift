import Glibc
import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSRedis
import HTTPDNSSystem
import HTTPDNSTestSupport
import Testing

/// The fleet client reads the loop's clock and the options' random source, nothing else: on a
/// manual clock its health stamps and its backoff move only when the test moves them.
struct FleetClockTests {
    typealias F = FleetFixtures

    @Test func healthAndBackoffFollowTheLoopsClock() throws {
        let clock = ManualClock()
        let loopThread = LoopThread(clock: clock)
        defer { loopThread.stop() }
        let directory = TemporaryDirectory()
        var options = FleetClientOptions(
            redis: RedisOptions(
                endpoint: .unix(path: directory.path + "/nobody-listens.sock"), password: nil,
                connectTimeoutMilliseconds: 1_000, commandTimeoutMilliseconds: 1_000),
            fleetName: "gateways")
        // No jitter: the first retry delay is exactly half the backoff's first ceiling.
        options.random = { 0 }
        var backoff = options.backoff
        let firstDelay = Int64(backoff.nextDelayMilliseconds(random: 0))
        nonisolated(unsafe) var client: FleetClient!
        loopThread.run { loop in client = FleetClient(options: options, key: F.key(), loop: loop) { _ in } }
        defer { loopThread.run { _ in client.shutdown() } }

        let outcomes = Recorder<String>()
        func lookUp() {
            loopThread.run { _ in
                client.lookUp(host: "api.example.com", families: [.ipv4]) { result in
                    switch result {
                    case .success: outcomes.append("answered")
                    case .failure(let error): outcomes.append(error.description)
                    }
                }
            }
        }
        lookUp()
        #expect(eventually { outcomes.count == 1 })
        let down = loopThread.run { _ in client.status(outbox: 0) }
        #expect(down.condition == .unreachable)
        #expect(down.lastStateChange == clock.wallSeconds())

        // Redis appears at the path; within the backoff on the manual clock the next call still
        // fails at once, with the same error, however long the test really took.
        let server = try RedisServer()
        #expect(symlink(server.socketPath, directory.path + "/nobody-listens.sock") == 0)
        clock.advance(milliseconds: firstDelay - 1)
        lookUp()
        #expect(eventually { outcomes.count == 2 })
        #expect(outcomes.all[1] == outcomes.all[0])
        // Once the manual clock passes the backoff, the next call reaches Redis.
        clock.advance(milliseconds: 1)
        lookUp()
        #expect(eventually { outcomes.count == 3 })
        #expect(outcomes.all[2] == "answered")
        let up = loopThread.run { _ in client.status(outbox: 0) }
        #expect(up.condition == .connected)
        #expect(up.lastStateChange == clock.wallSeconds())
    }
}
