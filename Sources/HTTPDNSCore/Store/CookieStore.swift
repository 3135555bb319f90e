/// The changes one request made to one user's jar: committed all together or not at all.
public struct CookieBatch: Sendable, Equatable {
    /// Whose jar (the peer uid of the connection that made the change).
    public var uid: UInt32
    /// Applied in order.
    public var changes: [CookieChange]
    /// Fleet records stored with the changes, in the same transaction (a batch may carry only
    /// these: an outbox acknowledgement, a stream position).
    public var fleet: FleetStoreWrite

    public init(uid: UInt32, changes: [CookieChange], fleet: FleetStoreWrite = FleetStoreWrite()) {
        self.uid = uid
        self.changes = changes
        self.fleet = fleet
    }

    /// No change and no fleet record: a batch that only waits for the ones before it.
    public var hasNothingToWrite: Bool { changes.isEmpty && fleet.isEmpty }
}

/// Durable cookie jars, one per uid.
///
/// A store belongs to one thread at a time (it is not `Sendable`): the daemon hands it to its
/// store thread, tests use it directly. Every call after `close()` fails with `.closed`.
public protocol CookieStore: AnyObject {
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
    /// Each batch is all or nothing: a batch that fails is rolled back alone when the store can
    /// isolate it, otherwise every batch fails; a batch reported committed is durable. A batch's
    /// fleet records (`CookieBatch.fleet`) are written and rolled back with it; a store that is
    /// not also a `FleetStateStore` drops them. Within one call, each cookie may be written once
    /// with its last change (the state applying the batches in order leaves); fleet records are
    /// applied batch by batch, in order.
    ///
    /// - Returns: one result per batch, in order.
    func commit(_ batches: [CookieBatch]) -> [Result<Void, StoreError>]

    /// Makes everything durable and releases the store's resources. Later calls fail with `.closed`;
    /// a second close does nothing.
    func close()
}

extension CookieChange {
    /// The identity of the cookie it changes.
    public var key: CookieKey {
        switch self {
        case .upsert(let cookie): return cookie.key
        case .delete(let key): return key
        }
    }
}
