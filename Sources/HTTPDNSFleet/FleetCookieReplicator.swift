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
    /// The fleet took the outbox entries through `sequence`: delete them from the store, and
    /// store `published` (when given), the newest stream entry this daemon added, in the same
    /// transaction (it tells after a restart whether Redis lost what left the outbox).
    func fleetAcknowledged(through sequence: Int64, published: FleetStreamID?)
    /// Tombstones past their lifetime: drop them from the store.
    func fleetForget(_ addresses: [FleetCookieAddress])
}

/// Replicates the shared jars: turns local changes into outbox records, publishes the outbox
/// (one batch at a time, with backoff), and applies the fleet's changes last-writer-wins. Lives
/// on the event loop with its `FleetClient`, and stamps versions with the loop's wall clock.
public final class FleetCookieReplicator {
    public let client: FleetClient
    public private(set) var replica: FleetCookieReplica
    public let outbox: any FleetOutboxStore
    private weak var delegate: (any FleetReplicatorDelegate)?
    private var pump: FleetOutboxPump
    /// The sequence of the next outbox entry (entries of failed transactions leave gaps).
    private var nextSequence: Int64
    /// The newest stream entry published and not yet handed over with an acknowledgement.
    private var publishedID: FleetStreamID?
    /// Cookies with local changes recorded whose transaction has not ended: like the outbox's,
    /// a snapshot must not take them for deleted elsewhere.
    private var uncommitted: [FleetCookieAddress: Int] = [:]

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
        self.nextSequence = outbox.lastSequence + 1
    }

    /// Starts following the fleet from the stored position, and publishes what the outbox held
    /// at start.
    public func start(cursor: FleetCursor?, lastPublishedID: FleetStreamID?) {
        client.startReplication(cursor: cursor, lastPublishedID: lastPublishedID) { [weak self] event in
            self?.handle(event)
        }
        publishPending()
    }

    // MARK: local changes

    /// Local changes of the shared jar `jar` (the jar's changes for a shared user, expiry
    /// purges left out): the outbox entries and registers to store in the same transaction as
    /// the changes (`FleetLocalChanges.storeWrite`). Report the transaction's end with
    /// `localCommitted` or `localCommitFailed`.
    public func recordLocal(_ changes: [CookieChange], jar: String) -> FleetLocalChanges {
        let nowMs = client.loop.clock.wallMilliseconds()
        var recorded = FleetLocalChanges()
        for change in changes {
            let address = FleetCookieAddress(jar: jar, key: change.key)
            if recorded.previous.index(forKey: address) == nil {
                recorded.previous.updateValue(replica.registers[address], forKey: address)
            }
            let record = replica.recordLocal(change, jar: jar, nowMs: nowMs)
            recorded.entries.append(FleetOutboxEntry(sequence: nextSequence, change: record))
            nextSequence += 1
        }
        for address in recorded.previous.keys {
            recorded.registers[address] = replica.registers[address]
            uncommitted[address, default: 0] += 1
        }
        return recorded
    }

    private func ended(_ changes: FleetLocalChanges) {
        for address in changes.previous.keys {
            let left = (uncommitted[address] ?? 1) - 1
            uncommitted[address] = left > 0 ? left : nil
        }
    }

    /// The transaction holding `changes` committed: they join the outbox and are published.
    public func localCommitted(_ changes: FleetLocalChanges) {
        ended(changes)
        guard !changes.entries.isEmpty else { return }
        outbox.append(changes.entries)
        perform(pump.entriesAdded())
    }

    /// The transaction holding `changes` failed (nothing of it was stored, and the jar goes back
    /// to what was): the registers go back too, unless a later change replaced them meanwhile.
    public func localCommitFailed(_ changes: FleetLocalChanges) {
        ended(changes)
        for (address, register) in changes.registers {
            replica.restore(address, to: changes.previous[address] ?? nil, ifStill: register.version)
        }
    }

    /// Publishes what the outbox holds (at start, with the entries loaded from the store).
    public func publishPending() {
        if outbox.count > 0 { perform(pump.entriesAdded()) }
    }

    /// Forgets tombstones past their lifetime here and in the snapshot (run now and then, say
    /// hourly).
    public func purgeTombstones() {
        let nowMs = client.loop.clock.wallMilliseconds()
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
            delegate?.fleetAcknowledged(through: sequence, published: publishedID)
            publishedID = nil
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
        let nowMs = client.loop.clock.wallMilliseconds()
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
                if let id { self.publishedID = id }
                self.perform(self.pump.published(through: last.sequence, batchWasFull: full))
            case .failure:
                self.perform(self.pump.failed(random: self.client.options.random()))
            }
        }
    }

    // MARK: remote changes

    private func handle(_ event: FleetReplicationEvent) {
        let nowMs = client.loop.clock.wallMilliseconds()
        switch event {
        case .republish(_, let request):
            request.provide(replica.republishable { [weak self] in self?.delegate?.fleetCurrentValue(of: $0) })
        case .snapshot(let changes, let cursor):
            let pending = Set(outbox.pending(limit: Int.max).map(\.change.address)).union(uncommitted.keys)
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

/// What `FleetCookieReplicator.recordLocal` made of local changes: the records to store with
/// them, and what to put back if their transaction fails.
public struct FleetLocalChanges: Sendable, Equatable {
    /// The outbox entries, numbered.
    public var entries: [FleetOutboxEntry] = []
    /// The registers the changes left.
    public var registers: [FleetCookieAddress: FleetCookieReplica.Register] = [:]
    /// The registers before the changes (nil: none).
    public var previous: [FleetCookieAddress: FleetCookieReplica.Register?] = [:]

    public init() {}

    /// The fleet records to commit with the cookie changes.
    public var storeWrite: FleetStoreWrite { FleetStoreWrite(registers: registers, outbox: entries) }
}

extension FleetCookieReplica.Outcome {
    /// Whether the outcome touches the jar (not ignored).
    public var changesJar: Bool {
        if case .ignored = self { return false }
        return true
    }
}
