import HTTPDNSProtocol

/// One all-or-nothing write to the state store: one user's cookie changes (a request's), the fleet
/// records that go with them, or fleet records alone (an outbox acknowledgement, a stream position).
public struct StateBatch: Sendable, Equatable {
    /// The cookie changes, and whose jar they change; nil in a batch of fleet records alone.
    public let jar: JarChanges?
    /// Fleet records stored with the changes, in the same transaction.
    public let fleet: FleetStoreWrite
    /// No change and no fleet record: a batch that only waits for the ones before it (taken once,
    /// here: reading a batch again copies its arrays).
    public let hasNothingToWrite: Bool

    /// `uid`'s cookie changes (possibly none: a batch that only waits for the ones before it),
    /// with the fleet records that describe them.
    public init(uid: UInt32, changes: [CookieChange], fleet: FleetStoreWrite = FleetStoreWrite()) {
        hasNothingToWrite = changes.isEmpty && fleet.isEmpty
        jar = JarChanges(uid: uid, changes: changes)
        self.fleet = fleet
    }

    /// Fleet records alone.
    public init(fleetRecords: FleetStoreWrite) {
        hasNothingToWrite = fleetRecords.isEmpty
        jar = nil
        fleet = fleetRecords
    }
}

/// Why a batch was not stored, with the jar as committed so that memory can go back to it.
public struct StateCommitFailure: Error, Sendable {
    /// What failed (nothing of the batch was stored).
    public let error: StoreError
    /// The user's jar as committed, read right after the failure; nil if it could not be read, or
    /// when the batch changed no jar or failed because a batch before it did.
    public let committedJar: [Cookie]?

    public init(error: StoreError, committedJar: [Cookie]?) {
        self.error = error
        self.committedJar = committedJar
    }
}

/// The changes one request made to one user's jar.
public struct JarChanges: Sendable, Equatable {
    /// Whose jar (the peer uid of the connection that made the change).
    public var uid: UInt32
    /// Applied in order.
    public var changes: [CookieChange]

    public init(uid: UInt32, changes: [CookieChange]) {
        self.uid = uid
        self.changes = changes
    }
}

/// Durable cookie jars, one per uid, and the fleet records that replicate the shared ones: one
/// store for both, so that a batch's fleet records can only ever reach a store that keeps them.
///
/// A store belongs to one thread at a time (it is not `Sendable`): the daemon hands it to its
/// store thread, tests use it directly. Every call after `close()` fails with `.closed`.
public protocol JarStore: FleetStateStore {
    /// Every jar, at startup. Session cookies (no expiry) are kept only while the boot id stays the
    /// same: when the stored boot id differs from `bootID`, they are deleted and `bootID` is stored
    /// (a reboot ends every session; a daemon restart within one boot does not). Expired cookies
    /// are deleted, not returned. Each jar is ordered by last access, then creation index.
    func loadJars(bootID: String, now: Int64) throws(StoreError) -> [UInt32: [Cookie]]

    /// One jar as committed (unexpired, in the same order), without writing anything: after a
    /// failed commit it may run on a full disk.
    func loadJar(uid: UInt32, now: Int64) throws(StoreError) -> [Cookie]

    /// Commits `batches` as one transaction (one write to disk for all of them: group commit).
    ///
    /// Each batch is all or nothing, its fleet records included: a batch that fails is rolled back
    /// alone when the store can isolate it, otherwise every batch fails; a batch reported committed
    /// is durable. Within one call, each cookie may be written once with its last change (the state
    /// applying the batches in order leaves); fleet records are applied batch by batch, in order.
    ///
    /// - Returns: one result per batch, in order.
    func commit(_ batches: [StateBatch]) -> [Result<Void, StoreError>]

    /// Makes everything durable and releases the store's resources. Later calls fail with `.closed`;
    /// a second close does nothing.
    func close()

    /// Whether the store's log has grown enough to be folded into its file (`checkpoint()`): a
    /// wait for the disk, which the store thread takes on, never a commit on the loop thread.
    var needsCheckpoint: Bool { get }

    /// Folds the log into the store's file.
    func checkpoint()
}

extension JarStore {
    /// A store without a log never needs a checkpoint.
    public var needsCheckpoint: Bool { false }

    public func checkpoint() {}
}
