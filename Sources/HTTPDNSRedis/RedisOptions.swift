/// Where a Redis (or Valkey) server listens.
public enum RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// A TCP host (name or IP literal, IPv6 without brackets) and port.
    case tcp(host: String, port: Int)
    /// A Unix socket path.
    case unix(path: String)

    /// `redis://HOST:PORT` or `unix:PATH`, for log lines (never with a password: there is none
    /// in an endpoint).
    public var description: String {
        switch self {
        case .tcp(let host, let port):
            return host.contains(":") ? "redis://[\(host)]:\(port)" : "redis://\(host):\(port)"
        case .unix(let path): return "unix:\(path)"
        }
    }
}

/// A Redis password (`AUTH`). No textual form of it shows the password, so options and
/// errors can be logged.
public struct RedisPassword: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    let bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// How to reach and log in to a server.
public struct RedisOptions: Sendable, Equatable {
    public var endpoint: RedisEndpoint
    /// The database `SELECT`ed after connecting (0 is Redis's default and needs no SELECT).
    public var database: Int
    /// `AUTH` with this password after connecting; nil sends no AUTH.
    public var password: RedisPassword?
    /// How long connecting (including name resolution by hiredis) may take.
    public var connectTimeoutMilliseconds: Int
    /// How long one exchange may take in all, from the first byte sent to the last byte of
    /// the last reply; the connection is dropped after a timeout, since a late reply would
    /// otherwise answer the next command.
    public var commandTimeoutMilliseconds: Int
    /// What one reply may hold; a larger one is not read (the connection is dropped).
    public var replyLimits: RESPReader.Limits

    public init(
        endpoint: RedisEndpoint, database: Int = 0, password: RedisPassword? = nil,
        connectTimeoutMilliseconds: Int = 1_000, commandTimeoutMilliseconds: Int = 1_000,
        replyLimits: RESPReader.Limits = RESPReader.Limits()
    ) {
        self.endpoint = endpoint
        self.database = database
        self.password = password
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.commandTimeoutMilliseconds = commandTimeoutMilliseconds
        self.replyLimits = replyLimits
    }
}
