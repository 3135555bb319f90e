import HTTPDNSCore
import HTTPDNSRedis
import HTTPDNSSystem
import Synchronization

/// What the replication hands to the daemon, on the loop thread, one at a time.
public enum FleetReplicationEvent: Sendable {
    /// Redis lost changes this daemon may hold (restarted empty or from an older save):
    /// `request.provide` every register as a change (`FleetCookieReplica.republishable`). The
    /// replication publishes them before it reads the snapshot, so nothing this daemon holds is
    /// taken for deleted.
    case republish(FleetSyncReason, FleetRepublishRequest)
    /// A complete snapshot: apply it with `FleetCookieReplica.applySnapshot`, then store the
    /// cursor with the result.
    case snapshot([FleetCookieChange], cursor: FleetCursor)
    /// Changes from the stream, oldest first: apply each with `FleetCookieReplica.applyRemote`,
    /// then store the cursor with the result.
    case changes([FleetCookieChange], cursor: FleetCursor)
}

/// The replication's request for the records to republish.
public final class FleetRepublishRequest: Sendable {
    let handoff = Handoff<[FleetCookieChange]>()

    /// Hands over the records (call once, from any thread).
    public func provide(_ changes: [FleetCookieChange]) { handoff.provide(changes) }
}

extension FleetClient {
    /// Starts following the fleet's changes on a thread (and connection) of its own: it plans
    /// how to get in sync (`FleetSyncPlanner`), republishes and catches up from the snapshot
    /// when needed, then reads the stream, blocking until changes arrive. Each result reaches
    /// `handler` on the loop; the next is read only once the handler has returned. Failures
    /// back off and start over with a new plan. Entries that fail to open are counted and
    /// logged (once), never delivered.
    ///
    /// `cursor` and `lastPublishedID` are what the daemon stored (nil on a first start).
    public func startReplication(
        cursor: FleetCursor?, lastPublishedID: FleetStreamID?, handler: @escaping (FleetReplicationEvent) -> Void
    ) {
        precondition(replication == nil, "replication already started")
        let mailbox = LoopMailbox<ReplicationMessage>(poster: loop.poster)
        // A blocking read's deadline includes its block time (`RedisConnection.streamRead`).
        let thread = FleetReplicationThread(
            redis: FleetRedis(
                connection: RedisConnection(options: options.redis), key: key, fleetName: options.fleetName,
                streamMaxLength: options.streamMaxLength),
            options: options, clock: clock, cursor: cursor, lastPublishedID: lastPublishedID, mailbox: mailbox)
        replication = thread
        armReplication(mailbox, handler: handler)
        spawnThread(named: "fleet-stream") { thread.run() }
    }

    private func armReplication(
        _ mailbox: LoopMailbox<ReplicationMessage>, handler: @escaping (FleetReplicationEvent) -> Void
    ) {
        let token = loop.expectCompletion(ReplicationMessage.self) { [weak self] message in
            guard let self, !mailbox.isClosed else { return }
            if let observation = message.observation {
                self.observe(observation, message.startedAtMs, message.endedAtMs)
            }
            for reason in message.rejected { self.rejected(reason) }
            if message.oversized > 0 {
                self.rejected("a snapshot entry over \(FleetRedis.maxValueBytes) bytes", count: message.oversized)
            }
            if let lag = message.lagMilliseconds { self.noteLag(milliseconds: lag) }
            if let event = message.event { handler(event) }
            self.armReplication(mailbox, handler: handler)
        }
        mailbox.arm(token)
    }
}

/// One hand-over from the replication thread to the loop.
struct ReplicationMessage: Sendable {
    var observation: FleetObservation?
    /// When the operation observed began and ended (monotonic milliseconds).
    var startedAtMs: Int64?
    var endedAtMs: Int64?
    var rejected: [String] = []
    /// Snapshot entries over `FleetRedis.maxValueBytes`, rejected unread.
    var oversized = 0
    var lagMilliseconds: Int64?
    var event: FleetReplicationEvent?
}

/// The thread that follows the change stream (see `FleetClient.startReplication`).
final class FleetReplicationThread: Sendable {
    private let state: Mutex<State>
    private let redisBox: UncheckedBox<FleetRedis>
    private let options: FleetClientOptions
    /// The client's clock (stamps and lag); the thread's sleeps and blocking reads stay on real time.
    private let clock: any DaemonClock
    private let mailbox: LoopMailbox<ReplicationMessage>
    private let sleeper: WakeableSleep?

    private struct State {
        var stopping = false
        var lastPublishedID: FleetStreamID?
        var pendingRequest: FleetRepublishRequest?
    }

    init(
        redis: FleetRedis, options: FleetClientOptions, clock: any DaemonClock, cursor: FleetCursor?,
        lastPublishedID: FleetStreamID?, mailbox: LoopMailbox<ReplicationMessage>
    ) {
        self.redisBox = UncheckedBox(redis)
        self.options = options
        self.clock = clock
        self.mailbox = mailbox
        self.sleeper = try? WakeableSleep()
        self.state = Mutex(State(lastPublishedID: lastPublishedID))
        self.initialCursor = cursor
    }

    private let initialCursor: FleetCursor?

    /// The loop saw a publish succeed: the newest entry this daemon added.
    func notePublished(_ id: FleetStreamID) {
        state.withLock { state in
            if state.lastPublishedID.map({ $0 < id }) ?? true { state.lastPublishedID = id }
        }
    }

    func stop() {
        let request = state.withLock { state in
            state.stopping = true
            return state.pendingRequest
        }
        request?.handoff.cancel()
        mailbox.close()
        sleeper?.wake()
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    func run() {
        let redis = redisBox.value
        var cursor = initialCursor
        var backoff = options.backoff
        var reportedLag: Int64?
        // Whether the last failure was a lost connection tried again at once without reporting.
        var retriedLostConnection = false
        while !stopping {
            // When the Redis operation under way began: what a failure reports.
            var started = clock.monotonicMilliseconds()
            do {
                let lastPublished = state.withLock { $0.lastPublishedID }
                let remembered = [cursor?.lastID, lastPublished].compactMap { $0 }
                let observed = try redis.observe(remembering: remembered)
                let observedAt = clock.monotonicMilliseconds()
                let success = ReplicationMessage(
                    observation: .readSucceeded, startedAtMs: started, endedAtMs: observedAt)
                guard send(success) else { return }
                let plan = FleetSyncPlanner.plan(cursor: cursor, lastPublishedID: lastPublished, observed: observed)
                var needsSnapshot = false
                switch plan {
                case .tail:
                    break
                case .catchUp:
                    needsSnapshot = true
                case .republishAndCatchUp(let reason):
                    guard let records = requestRepublish(reason) else { return }
                    if let id = try redis.publishChanges(records, batchSize: options.publishBatchSize) {
                        notePublished(id)
                    }
                    needsSnapshot = true
                }
                if needsSnapshot {
                    let snapshot = try redis.readSnapshot()
                    let caughtUp = FleetCursor(epoch: observed.epoch, lastID: snapshot.resumeAfter)
                    cursor = caughtUp
                    let message = ReplicationMessage(
                        rejected: snapshot.rejected, oversized: snapshot.oversized,
                        event: .snapshot(snapshot.changes, cursor: caughtUp))
                    guard send(message) else { return }
                }
                var position = cursor ?? FleetCursor(epoch: observed.epoch, lastID: .zero)
                backoff.reset()
                retriedLostConnection = false
                while !stopping {
                    started = clock.monotonicMilliseconds()
                    let read = try redis.readChanges(
                        after: position.lastID, count: options.streamReadCount,
                        blockMilliseconds: options.streamBlockMilliseconds)
                    guard let last = read.last else {
                        if reportedLag != 0 {
                            reportedLag = 0
                            guard send(ReplicationMessage(lagMilliseconds: 0)) else { return }
                        }
                        continue
                    }
                    position.lastID = last.id
                    cursor = position
                    var changes: [FleetCookieChange] = []
                    var rejected: [String] = []
                    for entry in read {
                        switch entry.change {
                        case .success(let change): changes.append(change)
                        case .failure(let error): rejected.append(error.reason)
                        }
                    }
                    let lag = max(0, clock.wallMilliseconds() - Int64(clamping: last.id.milliseconds))
                    reportedLag = lag
                    let message = ReplicationMessage(
                        rejected: rejected, lagMilliseconds: lag, event: .changes(changes, cursor: position))
                    guard send(message) else { return }
                }
            } catch {
                // A connection closed by a restart of the server: start over at once on a fresh
                // one, once, before calling Redis unreachable (see `FleetCommandWorker`).
                if error.code == .connectionLost, !retriedLostConnection {
                    retriedLostConnection = true
                    continue
                }
                retriedLostConnection = false
                let failure = ReplicationMessage(
                    observation: FleetClient.observation(for: error), startedAtMs: started,
                    endedAtMs: clock.monotonicMilliseconds())
                guard send(failure) else { return }
                let delay = backoff.nextDelayMilliseconds(random: options.random())
                sleeper?.sleep(milliseconds: delay)
            }
        }
    }

    private func send(_ message: ReplicationMessage) -> Bool {
        !stopping && mailbox.send(message)
    }

    /// Asks the loop for the records to republish and waits for them (nil when stopping).
    private func requestRepublish(_ reason: FleetSyncReason) -> [FleetCookieChange]? {
        let request = FleetRepublishRequest()
        state.withLock { $0.pendingRequest = request }
        defer { state.withLock { $0.pendingRequest = nil } }
        guard !stopping, send(ReplicationMessage(event: .republish(reason, request))) else { return nil }
        return request.handoff.wait()
    }
}

/// Moves a value that is not `Sendable` to the one thread that will use it.
final class UncheckedBox<Value>: @unchecked Sendable {
    // @unchecked: created on the loop, then used only by the replication thread.
    let value: Value
    init(_ value: Value) { self.value = value }
}
