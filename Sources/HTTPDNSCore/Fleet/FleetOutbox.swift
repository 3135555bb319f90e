/// One local change of a shared jar waiting to be published to the fleet.
public struct FleetOutboxEntry: Sendable, Equatable {
    /// Increases with every entry this daemon ever appends (survives restarts: it is stored).
    public var sequence: Int64
    public var change: FleetCookieChange

    public init(sequence: Int64, change: FleetCookieChange) {
        self.sequence = sequence
        self.change = change
    }
}

/// The durable outbox: local changes of shared jars not yet acknowledged by the fleet.
///
/// Entries are stored in the same transaction as the cookie changes they describe, so a
/// change acknowledged to a client is either in the outbox or already published, whatever
/// crashes or outages come after; they join the in-memory outbox once that transaction has
/// committed. The daemon publishes the oldest entries and removes them only
/// once Redis has taken them (`acknowledge`), so every change reaches the fleet at least once;
/// receivers ignore the duplicates a crash between publishing and acknowledging produces.
public protocol FleetOutboxStore: AnyObject {
    /// Adds entries whose transaction has committed (numbered by the caller, each later than
    /// every entry before it). Entries of a transaction still running never appear here, so
    /// nothing is published that the local store might yet roll back.
    func append(_ entries: [FleetOutboxEntry])
    /// The oldest entries, at most `limit`, oldest first.
    func pending(limit: Int) -> [FleetOutboxEntry]
    /// Removes every entry up to and including `sequence`.
    func acknowledge(through sequence: Int64)
    /// Entries waiting (`status.fleet.outbox`).
    var count: Int { get }
    /// The highest sequence number ever appended (0 for none): numbering goes on from there.
    var lastSequence: Int64 { get }
}

/// The outbox kept in memory: the reference behaviour of `FleetOutboxStore`, for tests and for
/// a daemon's in-memory mirror of its stored outbox.
public final class InMemoryFleetOutbox: FleetOutboxStore {
    private var entries: [FleetOutboxEntry] = []
    public private(set) var lastSequence: Int64

    /// Starts with entries loaded from storage (oldest first), if any.
    public init(entries: [FleetOutboxEntry] = []) {
        self.entries = entries.sorted { $0.sequence < $1.sequence }
        self.lastSequence = self.entries.last?.sequence ?? 0
    }

    public func append(_ added: [FleetOutboxEntry]) {
        for entry in added {
            precondition(entry.sequence > lastSequence, "outbox entries are appended in sequence order")
            lastSequence = entry.sequence
            entries.append(entry)
        }
    }

    public func pending(limit: Int) -> [FleetOutboxEntry] { Array(entries.prefix(limit)) }

    public func acknowledge(through sequence: Int64) {
        entries.removeAll { $0.sequence <= sequence }
    }

    public var count: Int { entries.count }
}

@available(*, unavailable)
extension InMemoryFleetOutbox: Sendable {}

/// When to publish the outbox: one batch in flight at a time, the next as soon as the last was
/// taken, and a backoff while Redis refuses (down, full). A value-type state machine: the
/// caller performs each action and reports back.
public struct FleetOutboxPump: Sendable {
    /// What the caller does next.
    public enum Action: Sendable, Equatable {
        /// Nothing now.
        case none
        /// Publish the oldest pending entries (up to the batch size), then call `published` or
        /// `failed`.
        case publish
        /// Remove the entries through `sequence` from the outbox; then publish again when
        /// `andPublish` (more were waiting).
        case acknowledge(through: Int64, andPublish: Bool)
        /// Call `retryDue` after this many milliseconds.
        case retry(afterMilliseconds: Int)
    }

    private enum State: Sendable, Equatable {
        case idle
        case publishing(moreWaiting: Bool)
        case backingOff
    }

    private var state = State.idle
    private var backoff: FleetBackoff

    public init(backoff: FleetBackoff = FleetBackoff()) {
        self.backoff = backoff
    }

    /// Whether a batch is out or a retry is scheduled.
    public var isBusy: Bool { state != .idle }

    /// New entries were committed to the outbox.
    public mutating func entriesAdded() -> Action {
        switch state {
        case .idle:
            state = .publishing(moreWaiting: false)
            return .publish
        case .publishing:
            state = .publishing(moreWaiting: true)
            return .none
        case .backingOff:
            return .none
        }
    }

    /// Redis took the batch through `sequence`; `batchWasFull` means more may be waiting.
    public mutating func published(through sequence: Int64, batchWasFull: Bool) -> Action {
        backoff.reset()
        guard case .publishing(let moreWaiting) = state else {
            state = .idle
            return .acknowledge(through: sequence, andPublish: false)
        }
        let again = moreWaiting || batchWasFull
        state = again ? .publishing(moreWaiting: false) : .idle
        return .acknowledge(through: sequence, andPublish: again)
    }

    /// Nothing was pending after all.
    public mutating func nothingPending() -> Action {
        if case .publishing(let moreWaiting) = state, moreWaiting {
            state = .publishing(moreWaiting: false)
            return .publish
        }
        state = .idle
        return .none
    }

    /// Publishing failed; `random` in [0, 1) spreads the retries of a fleet.
    public mutating func failed(random: Double) -> Action {
        state = .backingOff
        return .retry(afterMilliseconds: backoff.nextDelayMilliseconds(random: random))
    }

    /// The retry delay is over.
    public mutating func retryDue() -> Action {
        guard state == .backingOff else { return .none }
        state = .publishing(moreWaiting: false)
        return .publish
    }
}
