import Dispatch
import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSProtocol
import HTTPDNSRedis
import HTTPDNSSodium
import HTTPDNSSystem
import HTTPDNSTestSupport
import Synchronization
import Testing

/// Keys, records and loops shared by the fleet suites.
enum FleetFixtures {
    static let keyHex = "8f2a5c0e9b1d47a3c6e5f0b2d4a69871ec3b5d7f9a0c2e4b6d8f1a3c5e7b9d0f"
    static let otherKeyHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

    static func key(_ hex: String = keyHex) -> FleetKey {
        FleetKey(master: try! FleetKey.parse(hex: Array(hex.utf8)))
    }

    static func redisOptions(_ server: RedisServer, commandTimeout: Int = 2_000) -> RedisOptions {
        RedisOptions(
            endpoint: .unix(path: server.socketPath), password: server.password.map { RedisPassword(Array($0.utf8)) },
            connectTimeoutMilliseconds: 1_000, commandTimeoutMilliseconds: commandTimeout)
    }

    static func fleetRedis(
        _ server: RedisServer, key: FleetKey = key(), name: String = "gateways", maxLength: Int = 10_000
    )
        -> FleetRedis
    {
        FleetRedis(
            connection: RedisConnection(options: redisOptions(server)), key: key, fleetName: name,
            streamMaxLength: maxLength)
    }

    static func machine(_ character: Character) -> FleetMachineID {
        FleetMachineID(String(repeating: character, count: 32))!
    }

    static func cookie(_ name: String, value: String, domain: String = "login.example.com") -> Cookie {
        Cookie(
            name: name, value: value, domain: domain, hostOnly: true, path: "/", expires: nil, secure: true,
            httpOnly: true, sameSite: .lax, partitioned: false, created: 1_764_400_000, creationIndex: 0, lastAccess: 0)
    }

    static func answer(_ host: String, _ addresses: [String], family: IPFamily = .ipv4, ttlMs: Int64 = 60_000)
        -> FleetCacheRecord
    {
        FleetCacheRecord(
            host: host, family: family, addresses: addresses, negative: false,
            expiresAtUnixMs: WallClock.nowMilliseconds() + ttlMs)
    }

}

/// An event loop on a thread of its own, for driving loop-confined fleet objects from a test:
/// `run` executes a closure on the loop and waits for its result.
final class LoopThread: @unchecked Sendable {
    // @unchecked: `loop` is only touched on the loop thread; `inbox` hands work over, and `wake`
    // holds the poster with the token that wakes the loop next.
    private let inbox = Mutex<[@Sendable () -> Void]>([])
    private let ready = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) var loop: EventLoop!
    private let wake = Mutex<(poster: LoopPoster?, token: UInt64)>((nil, 0))

    init(clock: any DaemonClock = SystemClock()) {
        spawnThread { [self] in
            let loop = try! EventLoop(clock: clock)
            self.loop = loop
            self.wake.withLock { $0.poster = loop.poster }
            self.armWake()
            self.ready.signal()
            loop.run()
        }
        ready.wait()
    }

    /// The next token is published before the inbox is emptied: work queued after that sees the new
    /// token, so no wake-up is posted to a token already used (which would leave the work waiting).
    private func armWake() {
        // Weak: the loop keeps this completion, so a strong capture would keep both alive once stopped.
        let token = loop.expectCompletion(Bool.self) { [weak self] _ in
            guard let self else { return }
            self.armWake()
            let work = inbox.withLock { work in
                defer { work.removeAll() }
                return work
            }
            for item in work { item() }
        }
        wake.withLock { $0.token = token }
    }

    /// Runs `body` on the loop thread (with the loop) and returns its result.
    func run<T>(_ body: @escaping (EventLoop) -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: T?
        nonisolated(unsafe) let unsafeBody = body
        inbox.withLock {
            $0.append { [self] in
                result = unsafeBody(self.loop)
                done.signal()
            }
        }
        let (poster, token) = wake.withLock { ($0.poster!, $0.token) }
        poster.post(token: token, value: true)
        done.wait()
        return result!
    }

    func stop() {
        run { $0.stop() }
    }
}

/// Values recorded on the loop and read by the test thread.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
    var count: Int { values.withLock { $0.count } }
}
