import HTTPDNSClient
import HTTPDNSSystem

/// What httpdnsctl says when it cannot reach the daemon: the socket it tried, why that one (the
/// clients' rule, `DaemonSocketPath`), and, when nothing listens there, how to start the daemon that would.
struct UnreachableDaemon {
    let path: String
    let errno: Errno
    let origin: DaemonSocketPath.Origin
    /// `$XDG_RUNTIME_DIR`, to recognize a per-user socket named by `--socket` or `$HTTPDNSD_SOCKET`.
    let runtimeDirectory: String?

    /// The daemon instance a socket path belongs to, which decides how to start it.
    enum Instance: Equatable {
        case system
        case perUser
        /// A socket of the user's own choosing, bound by `httpdnsd --socket`.
        case other
    }

    var instance: Instance {
        switch origin {
        case .system: return .system
        case .perUser: return .perUser
        case .explicit, .environment:
            if path == DaemonSocketPath.system { return .system }
            if let runtimeDirectory, !runtimeDirectory.isEmpty,
                path == DaemonSocketPath.perUser(runtimeDirectory: runtimeDirectory)
            {
                return .perUser
            }
            return .other
        }
    }

    /// How the path was chosen, in the words of the clients' rule.
    var originPhrase: String {
        switch origin {
        case .explicit: return "from --socket"
        case .environment: return "from $\(DaemonSocketPath.environmentVariable)"
        case .perUser: return "the per-user socket"
        case .system: return "the system socket"
        }
    }

    /// The failure and where the path came from.
    var failure: String {
        "\(ClientError.unreachable(socketPath: path, errno: errno).description) (\(originPhrase))"
    }

    /// How to start a daemon on that socket; nil when something else than an absent daemon is wrong
    /// (a file that is not a socket, no permission).
    var hint: String? {
        guard errno == .noSuchFileOrDirectory || errno == .connectionRefused else { return nil }
        switch instance {
        case .system:
            return "no daemon listens there; start it with 'systemctl start httpdnsd.socket'"
                + " (your own: 'systemctl --user start httpdnsd.socket'; without systemd: 'httpdnsd &' as root)"
        case .perUser:
            return "no daemon listens there; start yours with 'systemctl --user start httpdnsd.socket'"
        case .other:
            return "no daemon listens there; start one with 'httpdnsd --socket \(path)'"
        }
    }

    /// Standard error's lines, `suffix` appended to the first.
    func message(suffix: String = "") -> String {
        var text = "httpdnsctl: \(failure)\(suffix)\n"
        if let hint { text += "httpdnsctl: \(hint)\n" }
        return text
    }
}

extension UnreachableDaemon {
    /// The message for `error` when it is a connect failure at `socket`; nil for any other failure.
    init?(_ error: ClientError, origin: DaemonSocketPath.Origin) {
        guard case .unreachable(let path, let errno) = error else { return nil }
        self.init(
            path: path, errno: errno, origin: origin, runtimeDirectory: ProcessEnvironment.value("XDG_RUNTIME_DIR"))
    }
}
