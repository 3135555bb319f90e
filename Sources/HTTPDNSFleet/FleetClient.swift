import HTTPDNSCore
import HTTPDNSRedis
import HTTPDNSSodium
import HTTPDNSSystem

/// Settings of a `FleetClient` beyond the configuration file's.
public struct FleetClientOptions: Sendable {
    /// Where Redis is and how to log in; `commandTimeoutMilliseconds` bounds each command.
    public var redis: RedisOptions
    /// `Name=`.
    public var fleetName: String
    /// Entries the change stream keeps (`XADD MAXLEN ~`): how far behind a daemon may fall and
    /// still catch up from the stream rather than the snapshot.
    public var streamMaxLength = 10_000
    /// Changes per publishing script call.
    public var publishBatchSize = 100
    /// Entries per stream read, and how long a read blocks waiting for one.
    public var streamReadCount = 500
    public var streamBlockMilliseconds = 1_000
    /// Retry delays after Redis failed.
    public var backoff = FleetBackoff()
    /// Where the backoff's jitter comes from (a fraction in 0..<1): a test fixes it.
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }

    public init(redis: RedisOptions, fleetName: String) {
        self.redis = redis
        self.fleetName = fleetName
    }
}

/// The fleet tier's Redis client for the event loop: every call is made on the loop thread and
/// returns at once; the Redis work runs on a thread of its own (hiredis blocks), and results come
/// back to the loop through its completion mechanism (`EventLoop.expectCompletion`), so the
/// loop never waits for Redis.
///
/// While Redis is failing, calls fail at once (no connect attempt per request) until the
/// backoff delay has passed; then the next call tries again. Every result also feeds the
/// client's `FleetHealth`, which logs one line per change of condition through `log`.
public final class FleetClient {
    public let options: FleetClientOptions
    public let keyspace: FleetKeyspace
    /// The loop every call and completion runs on.
    public let loop: EventLoop
    /// The loop's clock, read by the client's threads too: every time the fleet tier compares
    /// or stamps is on it (a test's manual clock moves them all).
    let clock: any DaemonClock
    let key: FleetKey
    let log: (FleetLogLine) -> Void
    private let worker: WorkerPool<FleetCommandWorker>
    /// The replication thread, once started.
    var replication: FleetReplicationThread?
    public private(set) var health: FleetHealth
    /// While Redis is failing, a read now and then finds out when it is back, even when no
    /// resolve or change asks for Redis meanwhile.
    private var probe: EventLoop.TimerID?
    static let probeIntervalMilliseconds: Int64 = 5_000

    /// Starts the command thread (it connects on first use).
    public init(options: FleetClientOptions, key: FleetKey, loop: EventLoop, log: @escaping (FleetLogLine) -> Void) {
        self.options = options
        self.key = key
        self.loop = loop
        let clock = loop.clock
        self.clock = clock
        self.log = log
        self.keyspace = FleetKeyspace(fleetName: options.fleetName, hasher: key)
        self.health = FleetHealth(nowUnix: clock.wallSeconds())
        worker = WorkerPool(threads: 1, named: "fleet-cache") {
            FleetCommandWorker(
                redis: FleetRedis(
                    connection: RedisConnection(options: options.redis), key: key, fleetName: options.fleetName,
                    streamMaxLength: options.streamMaxLength),
                backoff: options.backoff, clock: clock, random: options.random)
        }
    }

    /// Stops the threads: queued commands are dropped, the replication thread ends after its
    /// current read. Completions not yet delivered never run.
    public func shutdown() {
        if let probe { loop.cancel(probe) }
        probe = nil
        replication?.stop()
        replication = nil
        worker.shutdown()
    }

    /// `status.fleet`.
    public func status(outbox: Int) -> FleetStatus { health.status(outbox: outbox) }

    // MARK: cache

    /// The fleet's answers for `host` (families without a usable answer are left out).
    public func lookUp(
        host: String, families: [IPFamily], deadlineMilliseconds: Int? = nil,
        completion: @escaping (Result<[IPFamily: FleetCacheHit], RedisError>) -> Void
    ) {
        let clock = self.clock
        submit(kind: .read, deadlineMilliseconds: deadlineMilliseconds) { redis throws(RedisError) in
            try redis.lookUp(host: host, families: families, nowUnixMs: clock.wallMilliseconds())
        } completion: { [weak self] result in
            completion(
                result.map { lookup in
                    for reason in lookup.rejected { self?.rejected(reason) }
                    return lookup.hits
                })
        }
    }

    /// Tries to take the query lock of `lock.host`: true when this flight holds it now.
    public func acquireLock(
        _ lock: FleetLock, lifetimeMs: Int, deadlineMilliseconds: Int? = nil,
        completion: @escaping (Result<Bool, RedisError>) -> Void
    ) {
        submit(kind: .write, deadlineMilliseconds: deadlineMilliseconds) { redis throws(RedisError) in
            try redis.acquireLock(lock, lifetimeMs: lifetimeMs)
        } completion: {
            completion($0)
        }
    }

    /// Releases the lock if this flight still holds it.
    public func releaseLock(_ lock: FleetLock, completion: @escaping (Result<Void, RedisError>) -> Void = { _ in }) {
        submit(kind: .write, deadlineMilliseconds: nil) { redis throws(RedisError) in
            try redis.releaseLock(lock)
        } completion: {
            completion($0)
        }
    }

    /// Publishes answers (each with its remaining TTL as the Redis expiry), then releases the
    /// lock when given.
    public func publish(
        _ records: [FleetCacheRecord], releasingLock lock: FleetLock? = nil,
        completion: @escaping (Result<Void, RedisError>) -> Void = { _ in }
    ) {
        let clock = self.clock
        submit(kind: .write, deadlineMilliseconds: nil) { redis throws(RedisError) in
            try redis.publish(records, nowUnixMs: clock.wallMilliseconds(), releasingLock: lock)
        } completion: {
            completion($0)
        }
    }

    // MARK: cookie changes

    /// Publishes changes (stream and snapshot); the result is the last stream id, to remember
    /// as the daemon's last published entry.
    public func publishChanges(
        _ changes: [FleetCookieChange], completion: @escaping (Result<FleetStreamID?, RedisError>) -> Void
    ) {
        let batch = options.publishBatchSize
        submit(kind: .write, deadlineMilliseconds: nil) { redis throws(RedisError) in
            try redis.publishChanges(changes, batchSize: batch)
        } completion: { [weak self] result in
            if case .success(let id?) = result { self?.replication?.notePublished(id) }
            completion(result)
        }
    }

    /// Removes tombstones past the horizon from the snapshot (run now and then).
    public func sweepSnapshot(horizonMs: Int64, completion: @escaping (Result<Int, RedisError>) -> Void = { _ in }) {
        submit(kind: .write, deadlineMilliseconds: nil) { redis throws(RedisError) in
            try redis.sweepSnapshot(horizonMs: horizonMs)
        } completion: {
            completion($0)
        }
    }

    // MARK: plumbing

    enum OperationKind { case read, write }

    /// Runs `body` on the command thread and hands its result to `completion` on the loop.
    /// `deadlineMilliseconds` (from now) fails the call without I/O if it is still queued then.
    private func submit<T: Sendable>(
        kind: OperationKind, deadlineMilliseconds: Int?,
        _ body: @escaping @Sendable (FleetRedis) throws(RedisError) -> T,
        completion: @escaping (Result<T, RedisError>) -> Void
    ) {
        // Weak: a result may arrive after the daemon let go of a client it shut down.
        let token = loop.expectCompletion(Timed<Result<T, RedisError>>.self) { [weak self] timed in
            // A call that never reached Redis (queued past its deadline) says nothing of its health.
            if let started = timed.startedAtMs {
                switch timed.value {
                case .success:
                    self?.observe(kind == .read ? .readSucceeded : .writeSucceeded, started, timed.endedAtMs)
                case .failure(let error):
                    self?.observe(Self.observation(for: error), started, timed.endedAtMs)
                }
            }
            completion(timed.value)
        }
        let poster = loop.poster
        let deadline = deadlineMilliseconds.map { clock.monotonicMilliseconds() + Int64($0) }
        worker.submit { worker in
            poster.post(token: token, value: worker.perform(deadline: deadline, body))
        }
    }

    /// Feeds the health; `startedAtMs` and `endedAtMs` are the operation's monotonic times.
    func observe(_ observation: FleetObservation, _ startedAtMs: Int64?, _ endedAtMs: Int64?) {
        let line = health.observe(
            observation, nowUnix: clock.wallSeconds(), startedAtMs: startedAtMs, endedAtMs: endedAtMs)
        if let line { log(line) }
        if case .failed = observation { scheduleProbe() }
    }

    /// A `PING` after `probeIntervalMilliseconds` while Redis is unreachable (or refusing the
    /// login); its failure schedules the next one, its success says Redis is back.
    private func scheduleProbe() {
        guard probe == nil else { return }
        probe = loop.schedule(afterMilliseconds: Self.probeIntervalMilliseconds) { [weak self] in
            guard let self else { return }
            self.probe = nil
            guard self.health.condition == .unreachable || self.health.condition == .authenticationFailed else {
                return
            }
            self.submit(kind: .read, deadlineMilliseconds: nil) { redis throws(RedisError) in
                try redis.ping()
            } completion: { _ in
            }
        }
    }

    func rejected(_ reason: String, count: Int = 1) {
        if let line = health.entryRejected(reason, count: count) { log(line) }
    }

    func noteLag(milliseconds: Int64) { health.noteLag(milliseconds: milliseconds) }

    /// The health meaning of a Redis failure.
    static func observation(for error: RedisError) -> FleetObservation {
        let condition: FleetCondition
        switch error.code {
        case .authenticationFailed: condition = .authenticationFailed
        case .outOfMemory: condition = .full
        default: condition = .unreachable
        }
        return .failed(condition, detail: error.message)
    }
}

@available(*, unavailable)
extension FleetClient: Sendable {}

/// A result with the monotonic milliseconds at which the Redis operation it reports began (nil
/// when none was made) and ended.
struct Timed<Value: Sendable>: Sendable {
    var value: Value
    var startedAtMs: Int64?
    var endedAtMs: Int64
}

/// The command thread's state: its connection and the backoff after failures.
final class FleetCommandWorker {
    let redis: FleetRedis
    private var backoff: FleetBackoff
    /// While set, calls fail at once with `lastError` until this monotonic millisecond.
    private var retryAt: Int64?
    private var lastError: RedisError?
    /// When the attempt that failed with `lastError` began.
    private var lastErrorStartedAt: Int64 = 0

    private let clock: any DaemonClock
    private let random: @Sendable () -> Double

    init(redis: FleetRedis, backoff: FleetBackoff, clock: any DaemonClock, random: @escaping @Sendable () -> Double) {
        self.redis = redis
        self.backoff = backoff
        self.clock = clock
        self.random = random
    }

    /// Runs `body`, or fails at once: queued past `deadline` (no Redis operation), or within the
    /// backoff after a failure (reported with the time of the attempt that failed, so the health
    /// does not take a repeated old failure for a new one).
    func perform<T>(deadline: Int64?, _ body: (FleetRedis) throws(RedisError) -> T) -> Timed<Result<T, RedisError>> {
        let now = clock.monotonicMilliseconds()
        if let deadline, now > deadline {
            let error = RedisError(.timeout, "\(redis.connection.options.endpoint): queued past its deadline")
            return Timed(value: .failure(error), startedAtMs: nil, endedAtMs: now)
        }
        if let retryAt, now < retryAt, let lastError {
            return Timed(value: .failure(lastError), startedAtMs: lastErrorStartedAt, endedAtMs: now)
        }
        let result = attempt(body)
        return Timed(value: result, startedAtMs: now, endedAtMs: clock.monotonicMilliseconds())
    }

    private func attempt<T>(_ body: (FleetRedis) throws(RedisError) -> T) -> Result<T, RedisError> {
        let started = clock.monotonicMilliseconds()
        let wasConnected = redis.connection.isConnected
        do {
            let value: T
            do {
                value = try body(redis)
            } catch  where error.code == .connectionLost && wasConnected {
                // A connection that sat open may have been closed by a restart of the server
                // since: one try on a fresh connection tells whether Redis is really gone (every
                // fleet operation is safe to repeat), instead of reporting an outage that ended.
                value = try body(redis)
            }
            backoff.reset()
            retryAt = nil
            return .success(value)
        } catch {
            if error.dropsConnection {
                lastError = error
                lastErrorStartedAt = started
                retryAt = clock.monotonicMilliseconds() + Int64(backoff.nextDelayMilliseconds(random: random()))
            }
            return .failure(error)
        }
    }
}
