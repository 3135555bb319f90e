import HTTPDNSCore
import HTTPDNSSystem

/// Where the socket and the state live, from flags, systemd's environment and defaults
/// (httpdnsd(8), FILES).
struct RuntimePaths: Sendable {
    var socket: String
    var stateDirectory: String

    static let systemSocket = "/run/httpdnsd/httpdnsd.sock"
    static let systemStateDirectory = "/var/lib/httpdnsd"

    static func resolve(options: DaemonOptions, configuration: DaemonConfiguration) throws -> RuntimePaths {
        let isRoot = ProcessEnvironment.effectiveUserID == 0
        let runtimeDirectory = ProcessEnvironment.value("XDG_RUNTIME_DIR")
        let socket =
            options.socketPath ?? configuration.socketPath
            ?? (isRoot || runtimeDirectory == nil ? systemSocket : runtimeDirectory! + "/httpdnsd/httpdnsd.sock")
        var state: String
        if let explicit = options.stateDirectory {
            state = explicit
        } else if let fromSystemd = ProcessEnvironment.value("STATE_DIRECTORY") {
            // systemd passes a colon-separated list when StateDirectory= names several.
            state = String(fromSystemd.split(separator: ":").first ?? Substring(fromSystemd))
        } else if isRoot {
            state = systemStateDirectory
        } else if let xdg = ProcessEnvironment.value("XDG_STATE_HOME") {
            state = xdg + "/httpdnsd"
        } else if let home = ProcessEnvironment.value("HOME") {
            state = home + "/.local/state/httpdnsd"
        } else {
            throw StartupError("no state directory: pass --state-dir, or set STATE_DIRECTORY or XDG_STATE_HOME")
        }
        do {
            state = try TrustedPaths.preparePrivateDirectory(
                state,
                fix: "the daemon keeps login cookies there, so it must be the daemon's user's alone: remove it, "
                    + "or pass --state-dir a directory of your own (mode 0700)")
        } catch {
            throw StartupError("Refusing the state directory: \(error)")
        }
        return RuntimePaths(socket: socket, stateDirectory: state)
    }

    /// The lock file in the state directory that one daemon at a time holds.
    static let lockFileName = "httpdnsd.lock"

    /// Takes the state directory's lock, or fails with `StartupError.stateDirectoryInUseStatus`
    /// when another daemon holds it.
    static func lockStateDirectory(_ directory: String) throws -> FileDescriptor {
        let path = directory + "/" + lockFileName
        let lock: FileDescriptor?
        do {
            lock = try Files.lockExclusively(path)
        } catch {
            throw StartupError("Failed to lock the state directory: \(error)")
        }
        guard let lock else {
            throw StartupError(
                "another httpdnsd is running on the state directory \(directory) (it holds \(path)); not starting",
                status: StartupError.stateDirectoryInUseStatus)
        }
        return lock
    }

    /// Creates the socket's directory when missing, and checks that nobody else can replace
    /// what the daemon binds there nor has put something at its path.
    static func prepareSocketPath(_ socket: String) throws {
        let directory = Files.parentDirectory(of: socket)
        do {
            try Files.createDirectory(directory, mode: 0o755)
        } catch {
            throw StartupError("Failed to create the socket directory: \(error)")
        }
        let elsewhere = "pass --socket a path in a directory that only root or the daemon's user can write"
        do {
            try TrustedPaths.checkSocketDirectory(
                directory, fix: "clients would be talking to whoever replaces the socket: " + elsewhere)
            try TrustedPaths.checkSocketPath(
                socket, fix: "the daemon never takes over another user's socket: " + elsewhere)
        } catch {
            throw StartupError("Refusing the socket path: \(error)")
        }
    }
}
