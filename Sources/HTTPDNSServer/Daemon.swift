import Glibc
import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSPSL
import HTTPDNSProtocol
import HTTPDNSStore
import HTTPDNSSystem
import HTTPDNSSystemd

/// The daemon's command-line choices (httpdnsd(8), OPTIONS).
public struct DaemonOptions: Sendable {
    public var configPath: String?
    public var socketPath: String?
    public var stateDirectory: String?
    /// `--log-level`: wins over `LogLevel=`.
    public var logLevel: LogPriority?

    public init(
        configPath: String? = nil, socketPath: String? = nil, stateDirectory: String? = nil,
        logLevel: LogPriority? = nil
    ) {
        self.configPath = configPath
        self.socketPath = socketPath
        self.stateDirectory = stateDirectory
        self.logLevel = logLevel
    }
}

/// A startup failure: printed (one line per problem), and the process exits with `status`
/// (httpdnsd(8), EXIT STATUS).
public struct StartupError: Error, CustomStringConvertible {
    /// sysexits(3)'s EX_CONFIG: the configuration cannot be used (httpdnsd(8), EXIT STATUS).
    public static let configurationStatus: Int32 = 78

    public let description: String
    /// The process's exit status: 1, or a more specific one.
    public let status: Int32

    public init(_ description: String, status: Int32 = 1) {
        self.description = description
        self.status = status
    }

    /// A configuration that cannot be used: exit status 78.
    static func configuration(_ description: String) -> StartupError {
        StartupError(description, status: configurationStatus)
    }

    /// Another daemon holds the state directory: 75 (`EX_TEMPFAIL`), which the units name in
    /// `RestartPreventExitStatus=` so that systemd does not start it again in a loop.
    public static let stateDirectoryInUseStatus: Int32 = 75
}

/// The whole daemon: one event-loop thread that owns every connection, the cookie jars and the
/// DNS cache; worker threads for blocking upstream work; one store thread for the state database;
/// sd_notify for the service manager.
///
/// `init` builds everything (this is the composition root); `run` serves until a signal or idle
/// exit asks it to stop, then drains the connections and puts the state to disk.
public final class Daemon {
    public static let version = "0.1.0"

    private let loop: EventLoop
    private let logger: Logger
    private let notifier = SystemdNotifier()
    private let options: DaemonOptions
    /// What runs now: the start's configuration, then each accepted reload's.
    private var configuration: DaemonConfiguration
    private let stopRequest: StopRequest
    /// Kept for its registration with the loop.
    private let signals: SignalSource
    private let listener: ListeningSocket
    /// The state directory's lock, held for the life of the process (one daemon per directory).
    private let stateLock: FileDescriptor
    private let storeThread: StoreThread
    private let services: Services
    private let server: RPCServer
    private let idleExit: IdleExit
    private var watchdog: WatchdogPets?
    /// Where the hosts map lives: `map` in the socket's directory.
    private let hostsMapDirectory: String

    /// `clock` is every timer's and deadline's source (the loop's, which every service reads).
    public init(options: DaemonOptions, logger: Logger = Logger(), clock: any DaemonClock = SystemClock()) throws {
        self.logger = logger
        // First, so that a configuration the daemon cannot use stops it before anything is
        // bound or opened, and `LogLevel=` holds for every line.
        let (configuration, warnings) = try ConfigurationLoader.load(explicitPath: options.configPath)
        logger.setThreshold(options.logLevel ?? configuration.server.logLevel)
        for warning in warnings { logger.warning(warning.description) }
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
        // started afterwards (workers, the store thread), so SIGTERM always reaches the loop.
        let loop = try EventLoop(clock: clock)
        let stopRequest = StopRequest()
        let reloadRequest = ReloadRequest()
        signals = try SignalSource(loop: loop, signals: [SIGTERM, SIGINT, SIGHUP]) { [unowned loop] signal in
            switch signal {
            case SIGTERM: stopRequest.stop(reason: "SIGTERM", loop: loop)
            case SIGINT: stopRequest.stop(reason: "SIGINT", loop: loop)
            default: reloadRequest.reload?()
            }
        }
        self.loop = loop
        self.stopRequest = stopRequest
        self.options = options
        self.configuration = configuration
        let paths = try RuntimePaths.resolve(options: options, configuration: configuration)
        // Before the socket (a daemon that binds its own would take over another's path) and
        // before the store: two daemons on one directory would keep diverging jars.
        stateLock = try RuntimePaths.lockStateDirectory(paths.stateDirectory)
        listener = try ListeningSocket.open(path: paths.socket)
        // Under socket activation the socket is wherever systemd bound it.
        hostsMapDirectory =
            Files.parentDirectory(of: HostsMapPublisher.boundPath(of: listener.fd) ?? paths.socket) + "/"
            + HostsMapPublisher.directoryName

        // Everything that can fail comes before the resolver's worker threads exist, so the process
        // never exits while they are still starting up.
        let rules: PublicSuffixRules
        let stored: StoredState
        var fleetSetup: FleetSetup?
        do {
            do {
                rules = try PublicSuffixRules()
            } catch {
                throw StartupError("Failed to load the public suffix list: \(error)")
            }
            if let fleet = configuration.fleet {
                do {
                    fleetSetup = try FleetSetup.load(fleet, resolverTimeoutMs: configuration.resolver.timeoutMs)
                } catch let error where error.library != nil {
                    // The cookies and the cache do not need the fleet: serve them, and say why it is missing.
                    logger.error("Failed to set up the fleet, serving without it: \(error)")
                } catch {
                    // Names the setting and the problem, never a secret.
                    throw StartupError("Failed to set up the fleet: \(error)")
                }
            }
            let stores: StateStores
            do {
                stores = StateStores(
                    try SQLiteStateStore.open(
                        directory: paths.stateDirectory, resetOnCorruption: configuration.store.resetOnCorruption,
                        synchronousFull: configuration.store.synchronousFull
                    ) { message in logger.warning(message) })
            } catch {
                throw StartupError("Failed to open the state database: \(error)")
            }
            stored = try StoredState.load(
                from: stores, withFleet: fleetSetup != nil, now: loop.clock.wallSeconds(), logger: logger)
            // From here on the store thread owns the database.
            storeThread = StoreThread(stores)
        } catch {
            listener.release()
            throw error
        }
        let services = Services(
            configuration: configuration, rules: rules, stored: stored, storeThread: storeThread,
            fleetSetup: fleetSetup, loop: loop, logger: logger, stateDirectory: paths.stateDirectory)
        let server = RPCServer(loop: loop, listener: listener.fd, limits: configuration.serverLimits, logger: logger)
        self.services = services
        self.server = server
        idleExit = IdleExit(
            loop: loop, periodMilliseconds: Self.idleExitPeriod(configuration, activated: listener.isActivated),
            connectionCount: { [unowned server] in server.connectionCount },
            isQuiescent: { [unowned services] in services.isQuiescent },
            stop: { [unowned loop] in stopRequest.stop(reason: "idle", loop: loop) })
        services.registerMethods(on: server)
        let subordinateIDs = SubordinateIDFile { [unowned loop] in loop.now }
        server.accountOf = { subordinateIDs.account(of: $0) }
        services.cookies.chargeJars { subordinateIDs.account(of: $0) }
        services.resolver.chargeAddressMemory { subordinateIDs.account(of: $0) }
        server.onConnectionCountChange = { [unowned self] count in
            if !self.stopRequest.isStopping { self.idleExit.connectionCountChanged(count) }
        }
        reloadRequest.reload = { [unowned self] in self.reload() }
        openHostsMap()
    }

    /// Creates the hosts map with `HostsMapSize=` slots (none with 0, nor below a socket directory
    /// others may write), replacing the one a former daemon left (its readers move to the new
    /// one). Its expiries are CLOCK_MONOTONIC, so a daemon on another clock (a test's) publishes
    /// nothing. A map that cannot be created leaves the NSS module on the socket, as without one.
    private func openHostsMap() {
        let slots = configuration.server.hostsMapSlots
        if services.resolver.hostsMap?.slots == slots { return }
        if slots == 0 { services.resolver.hostsMap?.withdraw() }
        services.resolver.hostsMap = nil
        guard slots > 0, loop.clock is SystemClock,
            HostsMapPublisher.mayLive(in: Files.parentDirectory(of: hostsMapDirectory))
        else { return }
        do {
            services.resolver.hostsMap = try HostsMapPublisher(directory: hostsMapDirectory, slots: slots)
        } catch {
            logger.warning(
                "Failed to create the hosts map in \(hostsMapDirectory) (\(error)): the NSS module asks the socket "
                    + "for every lookup", cause: "hosts map")
        }
    }

    /// Serves until SIGTERM (or idle exit); returns the process exit status (0: a clean stop;
    /// failures are thrown).
    public func run() throws -> Int32 {
        defer { listener.release() }
        try server.startListening()
        services.start()

        logger.notice("httpdnsd \(Self.version) serving on \(listener)")
        notify { try $0.ready(status: self.statusLine()) }
        if let usec = notifier.watchdogIntervalMicroseconds() {
            watchdog = WatchdogPets(loop: loop, watchdogMicroseconds: usec) { [unowned self] in
                notify { try $0.watchdog() }
            }
            watchdog?.start()
        }
        idleExit.arm()
        scheduleStatusUpdates()

        loop.run()
        drain(reason: stopRequest.reason ?? "stop")
        services.shutdown()
        // Commits what is queued (the DNS cache last) and closes the database.
        storeThread.close()
        logger.notice("httpdnsd stopped")
        return 0
    }

    // MARK: lifecycle

    /// SIGHUP: reads the configuration again, as a start would (`SecretKeyFile=` included), and
    /// hands the services what changed; a file that cannot be used is refused with every problem
    /// logged, and the running configuration stays. Connections, jars and the cache stay.
    private func reload() {
        guard !stopRequest.isStopping else { return }
        let defaultPath = ConfigurationLoader.defaultPath
        let source = options.configPath ?? (Files.exists(defaultPath) ? defaultPath : "the embedded default")
        notify {
            try $0.reloading(
                monotonicMicroseconds: loop.clock.nowNanoseconds() / 1_000, status: "Reloading the configuration")
        }
        defer { notify { try $0.ready(status: self.statusLine()) } }
        let loaded: DaemonConfiguration
        do {
            let warnings: [ConfigWarning]
            (loaded, warnings) = try ConfigurationLoader.load(explicitPath: options.configPath)
            // One cause per line: the log's rate limit must not drop a problem of the file.
            for (index, warning) in warnings.enumerated() {
                logger.warning(warning.description, cause: "reload warning \(index)")
            }
        } catch {
            logger.error("Failed to reload the configuration from \(source), keeping the running one:")
            for (index, line) in "\(error)".split(separator: "\n").enumerated() {
                logger.error(String(line), cause: "reload problem \(index)")
            }
            return
        }
        let reload = ConfigurationReload(running: configuration, loaded: loaded)
        for setting in reload.pendingRestart {
            logger.warning(
                "\(setting) changed in \(source): it takes effect at the next start", cause: "reload \(setting)")
        }
        configuration = reload.effective
        logger.setThreshold(options.logLevel ?? configuration.server.logLevel)
        server.apply(configuration.serverLimits)
        services.apply(configuration)
        openHostsMap()
        idleExit.periodMilliseconds = Self.idleExitPeriod(configuration, activated: listener.isActivated)
        if server.connectionCount == 0 { idleExit.arm() }
        let changed = reload.changedSections.isEmpty ? "nothing" : reload.changedSections.joined(separator: ", ")
        logger.notice("Reloaded the configuration from \(source): \(changed) changed")
    }

    /// STOPPING=1, stop accepting, answer what was already read; returns once that is done or the
    /// grace period is over.
    private func drain(reason: String) {
        logger.notice("Stopping (\(reason))")
        notify { try $0.stopping(status: "Stopping: \(reason)") }
        idleExit.cancel()
        server.beginShutdown()
        // In-flight requests get a grace period (an upstream may hang), then whatever is left is cut.
        let deadline = loop.clock.nowNanoseconds() + configuration.shutdownGraceMilliseconds * 1_000_000
        guard !isDrained(until: deadline) else { return }
        waitForDrain(until: deadline)
        loop.run()
    }

    private func waitForDrain(until deadline: Int64) {
        loop.schedule(afterMilliseconds: 10) { [unowned self] in
            if isDrained(until: deadline) {
                loop.stop()
            } else {
                waitForDrain(until: deadline)
            }
        }
    }

    /// Whether nothing is left to answer; past `deadline`, closes what is left and says yes.
    private func isDrained(until deadline: Int64) -> Bool {
        if server.connectionCount == 0 && services.isQuiescent { return true }
        guard loop.clock.nowNanoseconds() >= deadline else { return false }
        logger.warning("Shutdown grace period over: closing \(server.connectionCount) connection(s)")
        server.closeAll()
        return true
    }

    /// Idle exit only makes sense when systemd holds the socket and starts the daemon again on the
    /// next connection.
    private static func idleExitPeriod(_ configuration: DaemonConfiguration, activated: Bool) -> Int64 {
        activated ? configuration.idleExitMilliseconds : 0
    }

    private func scheduleStatusUpdates() {
        loop.schedule(afterMilliseconds: 10_000) { [unowned self] in
            guard !self.stopRequest.isStopping else { return }
            self.notify { try $0.status(self.statusLine()) }
            self.scheduleStatusUpdates()
        }
    }

    private func statusLine() -> String {
        "Serving: \(server.connectionCount) connection(s), " + services.statusSummary
    }

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

/// What SIGHUP runs: the signalfd is registered before the daemon it reloads exists.
private final class ReloadRequest {
    var reload: (() -> Void)?
}

/// Why the daemon stops serving: set once, by a signal or by idle exit, on the loop thread.
private final class StopRequest {
    private(set) var reason: String?

    var isStopping: Bool { reason != nil }

    /// Records the first request and ends the loop's serving phase; later requests change nothing
    /// (a second SIGTERM does not cut the drain short).
    func stop(reason: String, loop: EventLoop) {
        guard self.reason == nil else { return }
        self.reason = reason
        loop.stop()
    }
}

/// The socket the daemon serves on: passed by systemd (socket activation) or bound here.
private struct ListeningSocket: CustomStringConvertible {
    let fd: FileDescriptor
    /// The path this daemon bound, and so removes at exit; nil when systemd passed the socket.
    let boundPath: String?

    /// Whether systemd passed the socket (and so will start us again on demand).
    var isActivated: Bool { boundPath == nil }

    static func open(path: String) throws -> ListeningSocket {
        if let passed = try SocketActivation.listeningSocket() { return ListeningSocket(fd: passed, boundPath: nil) }
        try RuntimePaths.prepareSocketPath(path)
        let bound = Result { () throws(SystemError) in try UnixSocket.listen(path: path) }
        if case .failure(let error) = bound, error.errno == .addressInUse {
            throw StartupError(
                "Refusing the socket path: \(path) is in use: another process listens on it (a daemon already "
                    + "running?); stop it, or pass --socket another path")
        }
        return ListeningSocket(fd: try bound.get(), boundPath: path)
    }

    /// A socket we bound ourselves is ours to remove; systemd's is systemd's.
    func release() {
        guard let boundPath else { return }
        fd.close()
        unlink(boundPath)
    }

    var description: String { boundPath ?? "socket passed by systemd" }
}
