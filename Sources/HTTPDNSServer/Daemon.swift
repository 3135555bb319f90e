import Glibc
import HTTPDNSCore
import HTTPDNSProtocol
import HTTPDNSSystem
import HTTPDNSSystemd

/// The daemon's command-line choices (API.md "daemon flags").
public struct DaemonOptions: Sendable {
    public var configPath: String?
    public var socketPath: String?
    public var stateDirectory: String?

    public init(configPath: String? = nil, socketPath: String? = nil, stateDirectory: String? = nil) {
        self.configPath = configPath
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
    }
}

/// A startup failure: printed as one line, exit status 1.
public struct StartupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The whole daemon: one event-loop thread that owns every connection, the cookie jars and the
/// DNS cache; worker threads for blocking upstream work; sd_notify for the service manager.
public final class Daemon {
    public static let version = "0.1.0"

    let loop: EventLoop
    let logger: Logger
    let notifier = SystemdNotifier()
    let configuration: DaemonConfiguration
    let paths: RuntimePaths
    let startedAt = MonotonicClock.nowNanoseconds()

    private var server: RPCServer!
    private var signals: SignalSource?
    private var services: Services!
    private var idleTimer: EventLoop.TimerID?
    private var shutdownStarted = false
    /// Whether systemd passed the listening socket (and so will start us again on demand).
    private var activated = false

    public init(options: DaemonOptions, logger: Logger = Logger()) throws {
        self.logger = logger
        SignalSource.ignoreSIGPIPE()
        ResourceLimits.raiseOpenFileLimit()
        // Before any thread resolves a name: the system upstream must not reach this daemon again
        // through its own NSS module (nss-httpdns(8), "No recursion").
        do {
            let services = try SystemResolver.bypassNSSModule()
            logger.debug("getaddrinfo in the daemon uses hosts: \(services)")
        } catch {
            throw StartupError("cannot set the daemon's own hosts lookup: \(error)")
        }
        // The loop and its signalfd come first: the signal mask is inherited by every thread
        // started afterwards, so SIGTERM always reaches the loop.
        loop = try EventLoop()
        let (configuration, warnings) = try ConfigurationLoader.load(explicitPath: options.configPath)
        for warning in warnings { logger.warning(warning.description) }
        self.configuration = configuration
        paths = try RuntimePaths.resolve(options: options, configuration: configuration)
        signals = try SignalSource(loop: loop, signals: [SIGTERM, SIGINT, SIGHUP]) { [unowned self] signal in
            self.handleSignal(signal)
        }
    }

    /// Serves until SIGTERM (or idle exit); returns the process exit status (0: a clean stop;
    /// failures are thrown).
    public func run() throws -> Int32 {
        let listener: FileDescriptor
        if let passed = try SocketActivation.listeningSocket() {
            listener = passed
            activated = true
        } else {
            try RuntimePaths.createParentDirectory(of: paths.socket)
            listener = try UnixSocket.listen(path: paths.socket)
            activated = false
        }
        defer {
            // A socket we bound ourselves is ours to remove; systemd's is systemd's.
            if !self.activated {
                listener.close()
                unlink(paths.socket)
            }
        }

        services = try Services(daemon: self)
        server = RPCServer(loop: loop, listener: listener, limits: configuration.serverLimits, logger: logger)
        services.registerMethods(on: server)
        server.onConnectionCountChange = { [unowned self] count in self.connectionCountChanged(count) }
        try server.startListening()
        services.start()

        let endpoint = activated ? "socket passed by systemd" : paths.socket
        logger.notice("httpdnsd \(Self.version) serving on \(endpoint)")
        notify { try $0.ready(status: self.statusLine()) }
        startWatchdog()
        if activated { armIdleTimer() }
        scheduleStatusUpdates()

        loop.run()
        services.shutdown()
        logger.notice("httpdnsd stopped")
        return 0
    }

    // MARK: lifecycle

    private func handleSignal(_ signal: Int32) {
        switch signal {
        case SIGTERM, SIGINT:
            beginShutdown(reason: signal == SIGTERM ? "SIGTERM" : "SIGINT")
        case SIGHUP:
            logger.info("SIGHUP ignored: restart the service to reload the configuration")
        default:
            break
        }
    }

    /// STOPPING=1, stop accepting, answer what was already read, flush state, exit.
    func beginShutdown(reason: String) {
        guard !shutdownStarted else { return }
        shutdownStarted = true
        logger.notice("Stopping (\(reason))")
        notify { try $0.stopping(status: "Stopping: \(reason)") }
        if let idleTimer { loop.cancel(idleTimer) }
        server.beginShutdown()
        // In-flight requests get a grace period (an upstream may hang), then whatever is left is cut.
        let deadline = MonotonicClock.nowNanoseconds() + configuration.shutdownGraceMilliseconds * 1_000_000
        waitForDrain(until: deadline)
    }

    private func waitForDrain(until deadline: Int64) {
        if server.connectionCount == 0 && services.isQuiescent {
            loop.stop()
            return
        }
        if MonotonicClock.nowNanoseconds() >= deadline {
            logger.warning("Shutdown grace period over: closing \(server.connectionCount) connection(s)")
            server.closeAll()
            loop.stop()
            return
        }
        loop.schedule(afterMilliseconds: 10) { [unowned self] in self.waitForDrain(until: deadline) }
    }

    private func connectionCountChanged(_ count: Int) {
        guard !shutdownStarted else { return }
        if count == 0 {
            armIdleTimer()
        } else if let timer = idleTimer {
            loop.cancel(timer)
            idleTimer = nil
        }
    }

    /// Idle exit only makes sense when systemd holds the socket and restarts us on the next connection.
    private var idleExitEnabled: Bool {
        configuration.idleExitMilliseconds > 0 && activated
    }

    private func armIdleTimer() {
        guard idleExitEnabled, !shutdownStarted else { return }
        if let timer = idleTimer { loop.cancel(timer) }
        idleTimer = loop.schedule(afterMilliseconds: configuration.idleExitMilliseconds) { [unowned self] in
            self.idleTimer = nil
            guard self.server.connectionCount == 0 else { return }
            guard self.services.isQuiescent else {
                self.armIdleTimer()
                return
            }
            self.beginShutdown(reason: "idle")
        }
    }

    private func startWatchdog() {
        guard let usec = notifier.watchdogIntervalMicroseconds() else { return }
        // Half the interval, as sd_watchdog_enabled(3) recommends; sent from the loop thread, so a
        // stuck loop stops the pings and systemd restarts us.
        let interval = max(Int64(usec / 2_000), 1)
        func pet() {
            notify { try $0.watchdog() }
            loop.schedule(afterMilliseconds: interval) { pet() }
        }
        pet()
    }

    private func scheduleStatusUpdates() {
        loop.schedule(afterMilliseconds: 10_000) { [unowned self] in
            guard !self.shutdownStarted else { return }
            self.notify { try $0.status(self.statusLine()) }
            self.scheduleStatusUpdates()
        }
    }

    func statusLine() -> String {
        let connections = server?.connectionCount ?? 0
        return "Serving: \(connections) connection(s), " + services.statusSummary
    }

    var uptimeSeconds: Int64 { (MonotonicClock.nowNanoseconds() - startedAt) / 1_000_000_000 }

    private func notify(_ body: (SystemdNotifier) throws -> Bool) {
        do {
            _ = try body(notifier)
        } catch {
            logger.warning("Failed to notify the service manager: \(error)")
        }
    }
}

@available(*, unavailable)
extension Daemon: Sendable {}
