import HTTPDNSCore
import HTTPDNSStore
import HTTPDNSSystem

/// Saves the DNS cache and IP-to-host memory every minute and at shutdown, so that a restart with
/// the upstreams down still answers. The snapshot is taken on the loop thread and written by the
/// store thread.
final class DNSSnapshotSaver {
    /// How often the snapshot is written out.
    static let intervalMilliseconds: Int64 = 60_000

    private let resolver: ResolverService
    private let storeThread: StoreThread
    private let loop: EventLoop
    private let logger: Logger

    init(resolver: ResolverService, storeThread: StoreThread, loop: EventLoop, logger: Logger) {
        self.resolver = resolver
        self.storeThread = storeThread
        self.loop = loop
        self.logger = logger
    }

    /// Saves every `intervalMilliseconds` from now on.
    func start() {
        loop.schedule(afterMilliseconds: Self.intervalMilliseconds) { [self] in
            // What the last save and the minute's bursts freed goes back to the system.
            Memory.returnFreedPages()
            save()
            start()
        }
    }

    /// Queues a save of the current snapshot.
    func save() {
        let snapshot = resolver.snapshot()
        let logger = self.logger
        storeThread.submit { stores in
            do {
                try stores.dns.saveDNSSnapshot(snapshot)
            } catch {
                logger.warning("Failed to save the DNS cache: \(error)")
            }
        }
    }
}

@available(*, unavailable)
extension DNSSnapshotSaver: Sendable {}
