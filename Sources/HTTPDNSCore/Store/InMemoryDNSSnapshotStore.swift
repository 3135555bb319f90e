/// A `DNSSnapshotStore` in memory, with the same ordering contract as the daemon's SQLite store.
public final class InMemoryDNSSnapshotStore: DNSSnapshotStore {
    private var snapshot = DNSSnapshot()
    private var isClosed = false

    /// An empty store.
    public init() {}

    public func saveDNSSnapshot(_ snapshot: DNSSnapshot) throws(StoreError) {
        try checkOpen()
        self.snapshot = snapshot
    }

    public func loadDNSSnapshot() throws(StoreError) -> DNSSnapshot {
        try checkOpen()
        var loaded = snapshot
        // Stable: entries of one host and expiry keep their saved order.
        loaded.entries = snapshot.entries.enumerated()
            .sorted {
                ($0.element.expiresAtUnix, $0.element.host, $0.offset) < (
                    $1.element.expiresAtUnix, $1.element.host, $1.offset
                )
            }
            .map(\.element)
        return loaded
    }

    public func close() { isClosed = true }

    private func checkOpen() throws(StoreError) {
        guard !isClosed else { throw StoreError(.closed, "in-memory DNS snapshot store: closed") }
    }
}

@available(*, unavailable, message: "a store belongs to one thread at a time")
extension InMemoryDNSSnapshotStore: Sendable {}
