import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSQLite
import HTTPDNSSystem
import HTTPDNSSystemd

/// Connects the loop thread to the store's writer thread: cookie changes are acknowledged only
/// once committed (group commit), and the DNS cache is saved periodically and at shutdown.
final class StateStoreBridge: CookiePersistence {
    /// How often the DNS cache is written out (a restart with the upstreams down still answers).
    static let dnsSaveIntervalMilliseconds: Int64 = 60_000

    let store: StateStore
    private let loop: EventLoop
    private let logger: Logger
    /// Commits queued and not yet answered; shutdown and idle exit wait for them.
    private(set) var pendingWrites = 0
    /// With Synchronous=full a commit waits for the disk: never on the loop thread.
    private let commitsOnLoopThread: Bool
    /// Changes of this loop turn, committed together once its events are handled.
    private var turn: [(changes: [(uid: UInt32, change: CookieChange)], completion: (Result<Void, RPCError>) -> Void)] =
        []

    init(directory: String, options: DaemonConfiguration.Store, loop: EventLoop, logger: Logger) throws {
        do {
            store = try StateStore.open(
                directory: directory, resetOnCorruption: options.resetOnCorruption,
                synchronousFull: options.synchronousFull
            ) { message in logger.warning(message) }
            commitsOnLoopThread = !options.synchronousFull
        } catch {
            throw StartupError("Failed to open the state database: \(error)")
        }
        self.loop = loop
        self.logger = logger
    }

    /// Every user's jar as stored; session cookies survive only within one boot.
    func loadCookies(now: Int64) throws -> [UInt32: [Cookie]] {
        let bootID: String
        do {
            bootID = try BootID.current()
        } catch {
            // Without a boot id, session cookies cannot be told apart by boot: keep the stored ones.
            logger.warning("Failed to read the boot id: \(error)")
            bootID = "unknown"
        }
        do {
            return try store.loadCookies(bootID: bootID, now: now)
        } catch {
            throw StartupError("Failed to load the cookie jars: \(error)")
        }
    }

    func loadDNS(into resolver: ResolverService) {
        do {
            let (entries, owners) = try store.loadDNS()
            let now = ResolverService.now()
            let wallNow = WallClock.nowSeconds()
            // Stored answers are validated again: a damaged file must not inject non-addresses.
            let restored = resolver.cache.restore(entries, now: now, wallNow: wallNow) { address, family in
                guard let ip = IPAddress(address) else { return false }
                return ip.family == family
            }
            _ = resolver.owners.restore(owners, now: now, wallNow: wallNow)
            if restored > 0 { logger.info("Restored \(restored) cached answer(s)") }
        } catch {
            logger.warning("Failed to load the saved DNS cache: \(error); starting empty")
        }
    }

    /// Group commit per loop turn: the changes of every request handled in one turn share one
    /// transaction, run on the loop thread when the store is idle (no thread hand-off) and by the
    /// writer thread otherwise. Each request is answered only once its changes are committed.
    func commit(
        _ changes: [(uid: UInt32, change: CookieChange)], completion: @escaping (Result<Void, RPCError>) -> Void
    ) {
        pendingWrites += 1
        if turn.isEmpty { loop.runBeforeNextWait { [unowned self] in self.commitTurn() } }
        turn.append((changes, completion))
    }

    private func commitTurn() {
        let batch = turn
        turn.removeAll()
        if commitsOnLoopThread, let results = store.commitNow(batch.map(\.changes)) {
            for (write, result) in zip(batch, results) { finish(result, write.completion) }
            return
        }
        let poster = loop.poster
        for write in batch {
            let token = loop.expectCompletion(Result<Void, StoreError>.self) { [unowned self] result in
                self.finish(result, write.completion)
            }
            store.commit(write.changes) { result in poster.post(token: token, value: result) }
        }
    }

    private func finish(_ result: Result<Void, StoreError>, _ completion: (Result<Void, RPCError>) -> Void) {
        pendingWrites -= 1
        if case .failure(let error) = result { logger.error("Failed to store cookie changes: \(error)") }
        completion(
            result.mapError { .internalError("the change could not be stored (\($0.code)); nothing was changed") })
    }

    func committedCookies(uid: UInt32, now: Int64) -> [Cookie]? {
        try? store.loadCookies(uid: uid, now: now)
    }

    /// Saves the DNS cache every minute from now on.
    func scheduleDNSSaves(of resolver: ResolverService) {
        loop.schedule(afterMilliseconds: Self.dnsSaveIntervalMilliseconds) { [weak self, unowned resolver] in
            guard let self else { return }
            self.saveDNS(of: resolver)
            self.scheduleDNSSaves(of: resolver)
        }
    }

    func saveDNS(of resolver: ResolverService) {
        let now = ResolverService.now()
        let wallNow = WallClock.nowSeconds()
        let logger = self.logger
        store.saveDNS(
            entries: resolver.cache.snapshot(now: now, wallNow: wallNow),
            owners: resolver.owners.snapshot(now: now, wallNow: wallNow)
        ) { result in
            if case .failure(let error) = result { logger.warning("Failed to save the DNS cache: \(error)") }
        }
    }

    /// Saves the cache, commits everything queued and closes the database (blocks).
    func close(saving resolver: ResolverService) {
        saveDNS(of: resolver)
        store.close()
    }
}

@available(*, unavailable)
extension StateStoreBridge: Sendable {}
