/// What a reload (SIGHUP, `systemctl reload`) makes of a configuration read again while the
/// daemon runs: the settings it can take at once, and the ones that only a restart applies
/// (httpdnsd.conf(5), RELOADING), which keep their running values until then.
public struct ConfigurationReload: Sendable, Equatable {
    /// What the daemon runs with from now on: the file's configuration, except the settings
    /// that need a restart, which keep their running values.
    public let effective: DaemonConfiguration
    /// The sections whose reloadable settings changed, in file order (`[Resolver]`, ...).
    public let changedSections: [String]
    /// Settings the file changed that take effect only at the next start, as the log names them.
    public let pendingRestart: [String]

    /// Compares the file's `loaded` configuration with the `running` one.
    public init(running: DaemonConfiguration, loaded: DaemonConfiguration) {
        var effective = loaded
        var pending: [String] = []
        // The socket is bound (or passed by systemd) once.
        if loaded.server.socket != running.server.socket {
            pending.append("Socket=")
            effective.server.socket = running.server.socket
        }
        // The database is opened once, with these settings.
        if loaded.store != running.store {
            pending.append("[Store]")
            effective.store = running.store
        }
        // Prefetched names are refreshed by timers set up at the start.
        if loaded.resolver.prefetch != running.resolver.prefetch {
            pending.append("Prefetch=")
            effective.resolver.prefetch = running.resolver.prefetch
        }
        // The fleet's Redis connections, keys and replication state are set up once.
        if loaded.fleet != running.fleet {
            pending.append("[Fleet]")
            effective.fleet = running.fleet
        }
        var changed: [String] = []
        if effective.resolver != running.resolver { changed.append("[Resolver]") }
        if effective.cookies != running.cookies { changed.append("[Cookies]") }
        if effective.server != running.server { changed.append("[Server]") }
        self.effective = effective
        changedSections = changed
        pendingRestart = pending
    }
}
