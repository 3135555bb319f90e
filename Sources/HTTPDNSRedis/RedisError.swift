/// A failed Redis call. The message names the server and the problem; it never contains the
/// password, and only contains what the server itself said (which never echoes a password).
public struct RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure; a struct so that kinds can be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case connectionFailed, timeout, connectionLost, authenticationFailed, outOfMemory, unavailable
            case serverError, protocolError, unexpectedReply, replyTooLarge
        }
        private let value: Value

        /// Connecting failed: refused, no such socket, name not resolvable, unreachable.
        public static let connectionFailed = Code(value: .connectionFailed)
        /// Connecting or a command took longer than its timeout (the connection was dropped).
        public static let timeout = Code(value: .timeout)
        /// The server closed or reset the connection (restart, kill, `CLIENT KILL`).
        public static let connectionLost = Code(value: .connectionLost)
        /// `AUTH` failed or the server wants one (`-WRONGPASS`, `-NOAUTH`, `-ERR invalid password`).
        public static let authenticationFailed = Code(value: .authenticationFailed)
        /// The server is at `maxmemory` and refuses writes (`-OOM`).
        public static let outOfMemory = Code(value: .outOfMemory)
        /// The server is up but cannot serve yet (`-LOADING`, `-BUSY`, `-MASTERDOWN`, `-TRYAGAIN`).
        public static let unavailable = Code(value: .unavailable)
        /// Any other error reply.
        public static let serverError = Code(value: .serverError)
        /// The bytes from the server were not RESP.
        public static let protocolError = Code(value: .protocolError)
        /// A reply of a type the command never returns (a bug, or not a Redis server).
        public static let unexpectedReply = Code(value: .unexpectedReply)
        /// A reply over the size limits (`RedisOptions.replyLimits`); the connection was dropped
        /// without reading the rest.
        public static let replyTooLarge = Code(value: .replyTooLarge)

        public var description: String {
            switch value {
            case .connectionFailed: return "connection-failed"
            case .timeout: return "timeout"
            case .connectionLost: return "connection-lost"
            case .authenticationFailed: return "authentication-failed"
            case .outOfMemory: return "out-of-memory"
            case .unavailable: return "unavailable"
            case .serverError: return "server-error"
            case .protocolError: return "protocol-error"
            case .unexpectedReply: return "unexpected-reply"
            case .replyTooLarge: return "reply-too-large"
            }
        }
    }

    public let code: Code
    /// A sentence starting with the endpoint, for logs and status.
    public let message: String
    /// The error reply as the server sent it (`OOM command not allowed ...`); nil for failures
    /// on this side and for `AUTH`, whose reply is never kept.
    public let serverReply: String?
    /// For `.replyTooLarge` of a single command: what was read of the reply.
    public let cutReply: CutReply?

    /// What was read of a reply over the limits (see `RedisConnection.BoundedReply.cut`).
    public struct CutReply: Sendable, Equatable {
        public var partial: RedisReply
        public var bulkTooLong: Bool
    }

    public init(_ code: Code, _ message: String, serverReply: String? = nil, cutReply: CutReply? = nil) {
        self.code = code
        self.message = message
        self.serverReply = serverReply
        self.cutReply = cutReply
    }

    /// The error for an error reply (`OOM ...`, `WRONGTYPE ...`) from the server at `endpoint`.
    public init(errorReply text: String, from endpoint: RedisEndpoint) {
        self.init(Self.code(ofErrorReply: text), "\(endpoint): \(text)", serverReply: text)
    }

    /// Whether the connection was closed because of this error (the next command reconnects).
    public var dropsConnection: Bool {
        code == .connectionFailed || code == .timeout || code == .connectionLost || code == .protocolError
            || code == .authenticationFailed || code == .replyTooLarge
    }

    public var description: String { message }

    /// The code of an error reply, from its first word (Redis's error prefixes).
    static func code(ofErrorReply text: String) -> Code {
        let prefix = text.prefix { $0 != " " }
        switch prefix {
        case "OOM": return .outOfMemory
        case "WRONGPASS", "NOAUTH", "NOPERM": return .authenticationFailed
        case "LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY": return .unavailable
        default:
            if text.hasPrefix("ERR invalid password") { return .authenticationFailed }
            return .serverError
        }
    }
}
