/// One reply of the RESP2 protocol.
public enum RedisReply: Sendable, Equatable {
    /// A bulk string (binary-safe).
    case bulk([UInt8])
    /// A simple status such as `OK` or `QUEUED`.
    case status(String)
    case integer(Int64)
    /// The nil bulk string or nil array (a missing key, a lost `SET NX`, an `XREAD` timeout).
    case null
    case array([RedisReply])
    /// An error reply. Top-level errors are thrown as `RedisError`; this case only appears
    /// nested (inside `EXEC` or a script's array result) or in `pipeline` results.
    case error(String)

    /// The bytes of a bulk string; nil otherwise.
    public var bytes: [UInt8]? {
        if case .bulk(let bytes) = self { return bytes }
        return nil
    }

    /// A bulk string or status as text (invalid UTF-8 repaired); nil otherwise.
    public var text: String? {
        switch self {
        case .bulk(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .status(let status): return status
        default: return nil
        }
    }

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var array: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public var isNull: Bool { self == .null }
}
