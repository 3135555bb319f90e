import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// `RankPorts=` on the loop thread: hands every successful resolve reply to the
/// `AddressRanking` policy (which reorders it and says what to probe) and carries the probes out
/// as non-blocking connects on the loop, each within its deadline. It decides nothing itself.
final class AddressRankingService {
    private var ranking: AddressRanking
    private let loop: EventLoop
    private let logger: Logger
    /// Connections being opened, by probe id.
    private var running: [UInt64: ConnectAttempt] = [:]

    init(ports: [RankPort], loop: EventLoop, logger: Logger) {
        ranking = AddressRanking(ports: ports)
        self.loop = loop
        self.logger = logger
    }

    private var now: MonotonicInstant { MonotonicInstant(nanoseconds: loop.clock.nowNanoseconds()) }

    /// Orders `uid`'s reply by what was measured so far and starts the probes its answer is due
    /// (the reply never waits for them). Anything but a successful reply of a ranked host is left
    /// as it is.
    func rank(_ outcome: inout Result<ResolveResult, RPCError>, uid: UInt32) {
        guard ranking.isConfigured, case .success(var result) = outcome else { return }
        let probes = ranking.rank(&result, uid: uid, now: now)
        outcome = .success(result)
        for probe in probes { start(probe) }
    }

    /// The network changed (see `AddressRanking.networkChanged`).
    func networkChanged() { ranking.networkChanged() }

    /// A reloaded `RankPorts=` (see `AddressRanking.apply`).
    func apply(ports: [RankPort]) { ranking.apply(ports: ports) }

    /// Closes every connection still being opened (the daemon is stopping).
    func shutdown() {
        for attempt in running.values { attempt.close(loop) }
        running.removeAll()
    }

    // MARK: carrying probes out

    private func start(_ probe: ConnectProbeRequest) {
        let start: TCPConnect.Start
        do {
            start = try TCPConnect.start(address: probe.address.bytes, port: probe.port)
        } catch {
            // Out of descriptors or the like: the address is not measured, the loop goes on.
            logger.warning("Ranking probe of \(probe.address) could not start: \(error)")
            finish(probe.id, connected: false)
            return
        }
        switch start {
        case .connected(let fd):
            fd.close()
            finish(probe.id, connected: true)
        case .failed:
            finish(probe.id, connected: false)
        case .inProgress(let fd):
            let attempt = ConnectAttempt(fd: fd) { [unowned self] connected in
                self.running[probe.id]?.close(self.loop)
                self.running[probe.id] = nil
                self.finish(probe.id, connected: connected)
            }
            do {
                try loop.register(fd, events: EpollEvents.writable, handler: attempt)
            } catch {
                fd.close()
                finish(probe.id, connected: false)
                return
            }
            attempt.deadline = loop.schedule(afterMilliseconds: Int64(probe.timeoutMs)) { [unowned attempt] in
                attempt.deadline = nil
                attempt.report(connected: false)
            }
            running[probe.id] = attempt
        }
    }

    private func finish(_ id: UInt64, connected: Bool) {
        ranking.probeFinished(id, connected: connected, now: now)
    }
}

/// One connection being opened: writable means it is decided (open, or failed with SO_ERROR).
private final class ConnectAttempt: EventHandler {
    let fd: FileDescriptor
    var deadline: EventLoop.TimerID?
    private var done: ((Bool) -> Void)?

    init(fd: FileDescriptor, done: @escaping (Bool) -> Void) {
        self.fd = fd
        self.done = done
    }

    func handleEvents(_ events: UInt32) {
        report(connected: TCPConnect.outcome(fd) == nil)
    }

    /// Reports once: the first of the connection's outcome and its deadline.
    func report(connected: Bool) {
        guard let done else { return }
        self.done = nil
        done(connected)
    }

    /// Stops watching and closes the connection, and the deadline with it.
    func close(_ loop: EventLoop) {
        if let deadline { loop.cancel(deadline) }
        deadline = nil
        done = nil
        loop.unregister(fd)
        fd.close()
    }
}

@available(*, unavailable)
extension AddressRankingService: Sendable {}
