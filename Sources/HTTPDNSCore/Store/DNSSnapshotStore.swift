/// The DNS cache and the IP-to-host memory as saved, so that a restart with the upstreams down
/// still answers (stale) and still maps IP-literal URLs to host names.
public struct DNSSnapshot: Sendable, Equatable {
    /// Cache entries, earliest expiry first.
    public var entries: [PersistedDNSEntry]
    /// Address owners, least recently used first.
    public var owners: [PersistedAddressOwner]

    public init(entries: [PersistedDNSEntry] = [], owners: [PersistedAddressOwner] = []) {
        self.entries = entries
        self.owners = owners
    }
}

/// Where the DNS snapshot is kept between runs. Like `JarStore`, it belongs to one thread at
/// a time, and every call after its close fails with `.closed`.
public protocol DNSSnapshotStore: AnyObject {
    /// Replaces the saved snapshot with `snapshot`, all at once.
    func saveDNSSnapshot(_ snapshot: DNSSnapshot) throws(StoreError)

    /// The saved snapshot: entries earliest expiry first (then by host), owners in saved order.
    /// Empty when nothing was saved.
    func loadDNSSnapshot() throws(StoreError) -> DNSSnapshot

    /// Releases the store; later calls fail with `.closed`, a second close does nothing.
    func close()
}
