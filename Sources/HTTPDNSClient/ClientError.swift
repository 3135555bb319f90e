import HTTPDNSProtocol
import HTTPDNSSystem

/// Why a call did not produce a result. Each case is a different thing for the caller to do:
/// start the daemon, fix the request, report a bug, or retry later.
public enum ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// connect(2) failed: no daemon (ENOENT, ECONNREFUSED), no permission (EACCES), a path that is not a
    /// socket (ENOTSOCK, also for a regular file or a directory, where connect(2) says ECONNREFUSED).
    case unreachable(socketPath: String, errno: Errno)
    /// The daemon answered with a JSON-RPC error object.
    case rpc(RPCError)
    /// The reply was not a JSON-RPC response, or its result lacked a member the contract promises.
    case malformedResponse(String)
    /// No reply within the deadline; the connection was dropped (a late reply cannot be mistaken for another).
    case timeout(socketPath: String, milliseconds: Int)
    /// The daemon closed the connection before answering, twice in a row (after the one reconnect).
    case connectionClosed(socketPath: String)

    /// One line for a terminal, without a program-name prefix.
    public var description: String {
        switch self {
        case .unreachable(let path, let code) where code == .notSocket:
            return "cannot connect to \(path): it is not a socket"
        case .unreachable(let path, let code):
            return "cannot connect to \(path): \(code)"
        case .rpc(let error):
            let name = error.name
            return name.isEmpty ? error.message : "\(error.message) (\(name))"
        case .malformedResponse(let reason):
            return "malformed reply from the daemon: \(reason)"
        case .timeout(let path, let milliseconds):
            return "no reply from \(path) within \(milliseconds) ms"
        case .connectionClosed(let path):
            return "the daemon at \(path) closed the connection before answering"
        }
    }
}
