import HTTPDNSSystem

/// The clients' rule for finding the daemon (httpdnsd-rpc(7), SOCKETS): `--socket PATH`, else `$HTTPDNSD_SOCKET`, else the
/// per-user socket when `$XDG_RUNTIME_DIR` is set and that socket exists, else the system socket.
public enum DaemonSocketPath {
    /// The system instance (`httpdnsd.socket`).
    public static let system = "/run/httpdnsd/httpdnsd.sock"
    /// The environment variable that overrides the default.
    public static let environmentVariable = "HTTPDNSD_SOCKET"

    /// Which step of the rule chose a path, so that a failure can say why that path was tried.
    public enum Origin: Sendable, Equatable {
        /// The caller named it (httpdnsctl's `--socket`).
        case explicit
        /// `$HTTPDNSD_SOCKET`.
        case environment
        /// The per-user instance's socket below `$XDG_RUNTIME_DIR`, which exists.
        case perUser
        /// The system socket, the rule's last step.
        case system
    }

    /// The path of the per-user instance below a runtime directory.
    public static func perUser(runtimeDirectory: String) -> String {
        let base = runtimeDirectory.hasSuffix("/") ? String(runtimeDirectory.dropLast()) : runtimeDirectory
        return base + "/httpdnsd/httpdnsd.sock"
    }

    /// Applies the rule with injected lookups (tests pass dictionaries and sets). Empty values count as unset.
    public static func locate(
        explicit: String?, environment: (String) -> String?, isSocket: (String) -> Bool
    ) -> (path: String, origin: Origin) {
        if let explicit, !explicit.isEmpty { return (explicit, .explicit) }
        if let fromEnvironment = environment(environmentVariable), !fromEnvironment.isEmpty {
            return (fromEnvironment, .environment)
        }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty {
            let candidate = perUser(runtimeDirectory: runtime)
            if isSocket(candidate) { return (candidate, .perUser) }
        }
        return (system, .system)
    }

    /// Applies the rule to this process's environment and file system.
    public static func locate(explicit: String?) -> (path: String, origin: Origin) {
        locate(explicit: explicit, environment: ProcessEnvironment.value, isSocket: Files.isSocket)
    }

    /// The path `locate` chooses, with injected lookups.
    public static func resolve(
        explicit: String?, environment: (String) -> String?, isSocket: (String) -> Bool
    ) -> String {
        locate(explicit: explicit, environment: environment, isSocket: isSocket).path
    }

    /// The path `locate` chooses for this process.
    public static func resolve(explicit: String?) -> String {
        locate(explicit: explicit).path
    }
}
