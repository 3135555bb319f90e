import HTTPDNSCore
import HTTPDNSRedis
import HTTPDNSSystem

/// What the cookie replication needs from the daemon's shared jars and store (loop thread).
public protocol FleetReplicatorDelegate: AnyObject {
    /// Remote changes won: store or remove these cookies in the shared jars, and store them
    /// together with their registers (`FleetCookieReplicator.replica.registers[address]`) and
    /// `cursor`, in one transaction. Ignored outcomes are never passed.
    func fleetApply(_ outcomes: [FleetCookieReplica.Outcome], cursor: FleetCursor)
    /// The current value of a shared cookie (nil when the jar does not hold it), for
    /// republishing after Redis lost its data.
    func fleetCurrentValue(of address: FleetCookieAddress) -> FleetCookieValue?
    /// The newest stream entry this daemon published; store it (it tells after a restart whether
    /// Redis lost what this daemon took out of its outbox).
    func fleetPublished(through id: FleetStreamID)
    /// Tombstones past their lifetime: drop them from the store.
    func fleetForget(_ addresses: [FleetCookieAddress])
}

/// Replicates the shared jars: turns local changes into outbox records, publishes the outbox
/// (one batch at a time, with backoff), and applies the fleet's changes last-writer-wins. Lives
/// on the event loop with its `FleetClient`.
public final class FleetCookieReplicator {
    public let client: FleetClient
    public private(set) var replica: FleetCookieReplica
    public let outbox: any FleetOutboxStore
    private weak var delegate: (any FleetReplicatorDelegate)?
    private var pump: FleetOutboxPump

    /// `replica` and `outbox` as loaded from the store.
    public init(
        client: FleetClient, replica: FleetCookieReplica, outbox: any FleetOutboxStore,
        delegate: any FleetReplicatorDelegate
    ) {
        self.client = client
        self.replica = replica
        self.outbox = outbox
        self.delegate = delegate
        self.pump = FleetOutboxPump(backoff: client.options.backoff)
    }

    /// Starts following the fleet from the stored position, and publishes what the outbox held
    /// at start.
    public func start(cursor: FleetCursor?, lastPublishedID: FleetStreamID?) {
        client.startReplication(cursor: cursor, lastPublishedID: lastPublishedID) { [weak self] event in
            self?.handle(event)
        }
        if outbox.count > 0 { outboxCommitted() }
    }

    // MARK: local changes

    /// Local changes of the shared jar `jar` (the jar's `drainChanges()` for a shared user):
    /// returns the outbox entries to store in the same transaction as the changes. Call
    /// `outboxCommitted()` once that transaction has committed.
    public func recordLocal(_ changes: [CookieChange], jar: String) -> [FleetOutboxEntry] {
        let nowMs = WallClock.nowMilliseconds()
        let records = changes.map { replica.recordLocal($0, jar: jar, nowMs: nowMs) }
        return outbox.append(records)
    }

    /// The transaction holding new outbox entries committed: publish them.
    public func outboxCommitted() {
        perform(pump.entriesAdded())
    }

    /// Forgets tombstones past their lifetime here and in the snapshot (run now and then, say
    /// hourly).
    public func purgeTombstones() {
        let nowMs = WallClock.nowMilliseconds()
        let purged = replica.purgeTombstones(nowMs: nowMs)
        if !purged.isEmpty { delegate?.fleetForget(purged) }
        client.sweepSnapshot(horizonMs: nowMs - replica.tombstoneLifetimeMs)
    }

    // MARK: publishing

    private func perform(_ action: FleetOutboxPump.Action) {
        switch action {
        case .none:
            break
        case .publish:
            publishBatch()
        case .acknowledge(let sequence, let andPublish):
            outbox.acknowledge(through: sequence)
            if andPublish { publishBatch() }
        case .retry(let milliseconds):
            client.loop.schedule(afterMilliseconds: Int64(milliseconds)) { [weak self] in
                guard let self else { return }
                self.perform(self.pump.retryDue())
            }
        }
    }

    private func publishBatch() {
        let limit = client.options.publishBatchSize * 10
        let entries = outbox.pending(limit: limit)
        guard let last = entries.last else {
            perform(pump.nothingPending())
            return
        }
        let nowMs = WallClock.nowMilliseconds()
        let records = entries.compactMap { replica.prepareForPublishing($0.change, nowMs: nowMs) }
        let full = entries.count == limit
        guard !records.isEmpty else {
            perform(pump.published(through: last.sequence, batchWasFull: full))
            return
        }
        client.publishChanges(records) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let id):
                if let id { self.delegate?.fleetPublished(through: id) }
                self.perform(self.pump.published(through: last.sequence, batchWasFull: full))
            case .failure:
                self.perform(self.pump.failed(random: Double.random(in: 0..<1)))
            }
        }
    }

    // MARK: remote changes

    private func handle(_ event: FleetReplicationEvent) {
        let nowMs = WallClock.nowMilliseconds()
        switch event {
        case .republish(_, let request):
            request.provide(replica.republishable { [weak self] in self?.delegate?.fleetCurrentValue(of: $0) })
        case .snapshot(let changes, let cursor):
            let pending = Set(outbox.pending(limit: Int.max).map(\.change.address))
            let outcomes = replica.applySnapshot(changes, pending: pending, nowMs: nowMs)
            delegate?.fleetApply(outcomes.filter(\.changesJar), cursor: cursor)
        case .changes(let changes, let cursor):
            let outcomes = changes.map { replica.applyRemote($0, nowMs: nowMs) }
            delegate?.fleetApply(outcomes.filter(\.changesJar), cursor: cursor)
        }
    }
}

@available(*, unavailable)
extension FleetCookieReplicator: Sendable {}

extension FleetCookieReplica.Outcome {
    /// Whether the outcome touches the jar (not ignored).
    public var changesJar: Bool {
        if case .ignored = self { return false }
        return true
    }
}
