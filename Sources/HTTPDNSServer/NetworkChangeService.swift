import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem

/// Carries out what the `NetworkChangeMachine` decides about the kernel's address and route
/// events: its one timer, and for each change `OnNetworkChange=` on the resolver's cache and one
/// log line. It decides nothing itself.
final class NetworkChangeService {
    private var machine = NetworkChangeMachine()
    /// `OnNetworkChange=`; a reload changes it for the changes reported from then on.
    private(set) var policy: NetworkChangePolicy
    private let resolver: ResolverService
    private let loop: EventLoop
    private let logger: Logger
    private var timer: EventLoop.TimerID?
    private var watcher: NetworkWatcher?
    /// Unix seconds of the last change reported (`status`), nil before the first.
    private(set) var lastChangeUnix: Int64?

    init(policy: NetworkChangePolicy, resolver: ResolverService, loop: EventLoop, logger: Logger) {
        self.policy = policy
        self.resolver = resolver
        self.loop = loop
        self.logger = logger
    }

    /// Changes reported since start.
    var changes: Int { machine.changes }

    /// `status.network`.
    var status: StatusResult.Network {
        StatusResult.Network(watching: watcher != nil, changes: changes, lastChange: lastChangeUnix)
    }

    /// Watches the kernel's notifications from now on. Without an rtnetlink socket (a sandbox
    /// that forbids AF_NETLINK) the daemon runs on, unaware of changes, and says so once.
    func start() {
        do {
            watcher = try NetworkWatcher(loop: loop) { [unowned self] events in self.received(events) }
        } catch {
            logger.warning("Failed to watch network changes (\(error)); cached answers outlive them")
        }
    }

    /// Events from the kernel (or a test).
    func received(_ events: [NetworkEvent]) {
        let now = MonotonicInstant(nanoseconds: loop.clock.nowNanoseconds())
        for event in events {
            if let action = machine.received(event, now: now) { perform(action) }
        }
    }

    /// A reloaded configuration's `OnNetworkChange=`.
    func apply(_ configuration: DaemonConfiguration) {
        policy = configuration.resolver.onNetworkChange
    }

    func shutdown() {
        watcher?.close()
        watcher = nil
    }

    private func perform(_ action: NetworkChangeMachine.Action) {
        switch action {
        case .armTimer(let at):
            if let timer { loop.cancel(timer) }
            let now = MonotonicInstant(nanoseconds: loop.clock.nowNanoseconds())
            let milliseconds = max(0, (at.nanoseconds(since: now) + 999_999) / 1_000_000)
            timer = loop.schedule(afterMilliseconds: milliseconds) { [unowned self] in
                self.timer = nil
                let now = MonotonicInstant(nanoseconds: self.loop.clock.nowNanoseconds())
                if let action = self.machine.timerFired(now: now) { self.perform(action) }
            }
        case .changed(let change):
            lastChangeUnix = loop.clock.wallSeconds()
            let touched = resolver.networkChanged(policy)
            let outcome: String
            switch policy {
            case .refresh: outcome = "\(touched) cached answer(s) marked for refresh"
            case .flush: outcome = "\(touched) cached answer(s) flushed"
            case .ignore: outcome = "cached answers kept (OnNetworkChange=ignore)"
            }
            // Changes come at least 5 s apart, the log limiter's interval; two causes in turn keep
            // the limiter (on its own clock) from ever dropping one.
            logger.info("Network changed: \(change.description); \(outcome)", cause: "network change \(changes % 2)")
        }
    }
}

@available(*, unavailable)
extension NetworkChangeService: Sendable {}
