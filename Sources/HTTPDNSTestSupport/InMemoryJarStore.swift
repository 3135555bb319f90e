import HTTPDNSCore
import HTTPDNSProtocol

/// A `JarStore` in memory, for tests: the same contract as the daemon's SQLite store (boot policy,
/// expiry, all-or-nothing batches with their fleet records), checked by the same contract tests.
///
/// `capacity` bounds the number of cookies it holds, the way a full disk bounds a file: a batch
/// that would go beyond it fails with `.diskFull` and leaves nothing behind.
public final class InMemoryJarStore: JarStore {
    private var jars: [UInt32: [CookieKey: Cookie]] = [:]
    private var fleet = FleetStoredState()
    private var machine: FleetMachineID?
    private var bootID: String?
    private var isClosed = false
    /// The most cookies it holds; below the current count, every batch that adds one fails.
    public var capacity: Int

    /// An empty store holding at most `capacity` cookies.
    public init(capacity: Int = .max) {
        self.capacity = capacity
    }

    public func loadJars(bootID: String, now: Int64) throws(StoreError) -> [UInt32: [Cookie]] {
        try checkOpen()
        if self.bootID != bootID {
            for uid in Array(jars.keys) { jars[uid] = jars[uid]?.filter { $0.value.expires != nil } }
            self.bootID = bootID
        }
        for uid in Array(jars.keys) {
            jars[uid] = jars[uid]?.filter { !$0.value.isExpired(at: now) }
            if jars[uid]?.isEmpty == true { jars[uid] = nil }
        }
        return jars.mapValues { Self.ordered($0.values) }
    }

    public func loadJar(uid: UInt32, now: Int64) throws(StoreError) -> [Cookie] {
        try checkOpen()
        return Self.ordered((jars[uid] ?? [:]).values.filter { !$0.isExpired(at: now) })
    }

    public func commit(_ batches: [StateBatch]) -> [Result<Void, StoreError>] {
        batches.map { batch in
            do throws(StoreError) {
                try checkOpen()
                if let changed = batch.jar {
                    var jar = jars[changed.uid] ?? [:]
                    for change in changed.changes {
                        switch change {
                        case .upsert(let cookie): jar[cookie.key] = cookie
                        case .delete(let key): jar[key] = nil
                        }
                    }
                    let before = jars.values.reduce(0) { $0 + $1.count }
                    let after = before - (jars[changed.uid]?.count ?? 0) + jar.count
                    // A batch that does not grow the store always fits, as deletions fit on a full disk.
                    guard after <= capacity || after <= before else {
                        throw StoreError(.diskFull, "in-memory cookie store: full (\(capacity) cookies)")
                    }
                    jars[changed.uid] = jar.isEmpty ? nil : jar
                }
                batch.fleet.apply(to: &fleet)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
    }

    public func loadFleetState() throws(StoreError) -> FleetStoredState {
        try checkOpen()
        return fleet
    }

    public func fleetMachineID(orCreate make: () -> FleetMachineID) throws(StoreError) -> FleetMachineID {
        try checkOpen()
        if let machine { return machine }
        let made = make()
        machine = made
        return made
    }

    public func close() { isClosed = true }

    private func checkOpen() throws(StoreError) {
        guard !isClosed else { throw StoreError(.closed, "in-memory cookie store: closed") }
    }

    private static func ordered(_ cookies: some Sequence<Cookie>) -> [Cookie] {
        cookies.sorted { ($0.lastAccess, $0.creationIndex) < ($1.lastAccess, $1.creationIndex) }
    }
}

@available(*, unavailable, message: "a store belongs to one thread at a time")
extension InMemoryJarStore: Sendable {}
