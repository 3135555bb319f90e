import HTTPDNSSystem

/// The clients' rule for finding the daemon (httpdnsd-rpc(7), SOCKETS): `--socket PATH`, else `$HTTPDNSD_SOCKET`, else the
/// per-user socket when `$XDG_RUNTIME_DIR` is set and that socket exists, else the system socket.
public enum DaemonSocketPath {
    /// The system instance (`httpdnsd.socket`).
    public static let system = "/run/httpdnsd/httpdnsd.sock"
    /// The environment variable that overrides the default.
    public static let environmentVariable = "HTTPDNSD_SOCKET"

    /// The path of the per-user instance below a runtime directory.
    public static func perUser(runtimeDirectory: String) -> String {
        let base = runtimeDirectory.hasSuffix("/") ? String(runtimeDirectory.dropLast()) : runtimeDirectory
        return base + "/httpdnsd/httpdnsd.sock"
    }

    /// Applies the rule with injected lookups (tests pass dictionaries and sets). Empty values count as unset.
    public static func resolve(
        explicit: String?, environment: (String) -> String?, isSocket: (String) -> Bool
    ) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment(environmentVariable), !fromEnvironment.isEmpty { return fromEnvironment }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty {
            let candidate = perUser(runtimeDirectory: runtime)
            if isSocket(candidate) { return candidate }
        }
        return system
    }

    /// Applies the rule to this process's environment and file system.
    public static func resolve(explicit: String?) -> String {
        resolve(explicit: explicit, environment: ProcessEnvironment.value, isSocket: Files.isSocket)
    }
}
