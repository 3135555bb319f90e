import HTTPDNSCore
import HTTPDNSStore
import HTTPDNSSystem

/// Puts the saved DNS cache and IP-to-host memory back after the daemon starts serving.
///
/// Why: with tens of thousands of saved answers, reading and restoring them was most of a cold
/// start, and the request that socket activation started the daemon for (often a cookie lookup)
/// waited for all of it. Now the store thread reads the snapshot once that first answer is out
/// (`start()`: on two cores, a read beside the start competed with it for the CPU), and the loop
/// restores it in small steps between requests once the read is posted back. Anything that
/// reads or changes the cache before then (a resolve, a reverse lookup, an IP URL's
/// normalization, a save) calls `finish()` first (`ResolverService.restoreSavedDNS`), which waits for the read and restores the rest
/// on the spot: no request sees a cache that the restore changes later, and no save writes a
/// snapshot without the saved one.
final class SavedDNSRestore {
    /// Answers restored per loop turn: about a millisecond and a half of the loop's time.
    static let entriesPerStep = 512

    /// The snapshot as the store thread read it, handed over under a lock.
    private final class Handoff: @unchecked Sendable {
        // @unchecked: `snapshot` is only touched with `lock` held.
        private let lock = ConditionLock()
        private var snapshot: DNSSnapshot?

        func deliver(_ snapshot: DNSSnapshot) {
            lock.withLock {
                self.snapshot = snapshot
                lock.broadcast()
            }
        }

        /// Blocks until `deliver`.
        func take() -> DNSSnapshot {
            lock.withLock {
                while snapshot == nil { lock.wait() }
                return snapshot!
            }
        }
    }

    private enum Progress {
        /// The read is not queued yet (`start()`).
        case waiting(StoreThread)
        case reading(Handoff)
        /// Answers before `next` are back; the owners go last, all at once (an address's hosts
        /// are restored together).
        case restoring(DNSSnapshot, next: Int)
        case done
    }

    private var progress: Progress
    private let cache: DNSCache
    private let owners: AddressOwnerMemory
    private let loop: EventLoop
    private let logger: Logger
    private var restored = 0

    /// Restores into `cache` and `owners` what `storeThread` reads once `start()` queues the read
    /// (or the first `finish()` does), step by step once it is posted back to `loop`.
    init(
        storeThread: StoreThread, into cache: DNSCache, _ owners: AddressOwnerMemory, loop: EventLoop, logger: Logger
    ) {
        self.cache = cache
        self.owners = owners
        self.loop = loop
        self.logger = logger
        progress = .waiting(storeThread)
    }

    /// Queues the read on the store thread, unless it is queued already.
    func start() {
        guard case .waiting(let storeThread) = progress else { return }
        let handoff = Handoff()
        progress = .reading(handoff)
        let token = loop.expectCompletion(Bool.self) { [weak self] _ in self?.step() }
        let poster = loop.poster
        let logger = self.logger
        let submitted = storeThread.submit { stores in
            do {
                handoff.deliver(try stores.dns.loadDNSSnapshot())
            } catch {
                // Only the warm cache is lost.
                logger.warning("Failed to load the saved DNS cache: \(error); starting empty")
                handoff.deliver(DNSSnapshot())
            }
            poster.post(token: token, value: true)
        }
        if !submitted { handoff.deliver(DNSSnapshot()) }
    }

    /// Whether some of the snapshot is still to be restored.
    var isPending: Bool {
        if case .done = progress { return false }
        return true
    }

    /// Restores the rest of the snapshot now, reading it first if that has not started and
    /// waiting for the store thread's read if it is still running.
    func finish() {
        while isPending { restore(upTo: .max) }
    }

    /// One step between requests, then the next turn takes the next.
    private func step() {
        restore(upTo: Self.entriesPerStep)
        if isPending { loop.runNextTurn { [weak self] in self?.step() } }
    }

    private var now: MonotonicInstant { MonotonicInstant(nanoseconds: loop.clock.nowNanoseconds()) }

    private func restore(upTo count: Int) {
        switch progress {
        case .waiting:
            start()
        case .reading(let handoff):
            progress = .restoring(handoff.take(), next: 0)
        case .restoring(let snapshot, let next) where next < snapshot.entries.count:
            let end = next + min(count, snapshot.entries.count - next)
            // Stored answers are validated again: a damaged file must not inject non-addresses.
            restored += cache.restore(
                Array(snapshot.entries[next..<end]), now: now, wallNow: loop.clock.wallSeconds()
            ) { address, family in
                IPAddress(address)?.family == family
            }
            progress = .restoring(snapshot, next: end)
        case .restoring(let snapshot, _):
            owners.restore(snapshot.owners, now: now, wallNow: loop.clock.wallSeconds())
            progress = .done
            if restored > 0 { logger.info("Restored \(restored) cached answer(s)") }
            // The rows read and the snapshot are garbage now.
            Memory.returnFreedPages()
        case .done:
            return
        }
    }
}

@available(*, unavailable)
extension SavedDNSRestore: Sendable {}
