/// Why a state store could not open, read or write. Messages name the store (for the SQLite
/// stores, the database file) and never contain cookie values.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure; may grow, so it is a struct rather than a public enum.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case corrupt, diskFull, unavailable, incompatibleSchema, ioError, closed
        }
        private let value: Value

        /// The stored state is damaged or not a database at all.
        public static let corrupt = Code(value: .corrupt)
        /// No room for the write (a full disk); the write was rolled back and nothing earlier was lost.
        public static let diskFull = Code(value: .diskFull)
        /// The store cannot be opened, created or written (permissions, a read-only file system).
        public static let unavailable = Code(value: .unavailable)
        /// The state was written by a newer httpdnsd (it has schema migrations this one does not know).
        public static let incompatibleSchema = Code(value: .incompatibleSchema)
        /// Any other failure while reading or writing (I/O errors, busy, ...).
        public static let ioError = Code(value: .ioError)
        /// The store was closed.
        public static let closed = Code(value: .closed)

        public var description: String {
            switch value {
            case .corrupt: return "corrupt"
            case .diskFull: return "disk-full"
            case .unavailable: return "unavailable"
            case .incompatibleSchema: return "incompatible-schema"
            case .ioError: return "io-error"
            case .closed: return "closed"
            }
        }
    }

    /// What kind of failure.
    public let code: Code
    /// A sentence for logs and clients, starting with what failed (for SQLite, the database path).
    public let message: String
    /// The lower-level failure behind it (an sqlite3 error), if any.
    public let underlying: (any Error)?
    /// Where the error was made, for logs.
    public let file: String
    /// Where the error was made, for logs.
    public let line: Int

    /// A failure of kind `code`, explained by `message`.
    public init(
        _ code: Code, _ message: String, underlying: (any Error)? = nil, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    public var description: String { message }
}
