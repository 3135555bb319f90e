/// Why the state store could not open, read or write. Messages name the database file and never
/// contain cookie values.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure; may grow, so it is a struct rather than a public enum.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case corrupt, diskFull, unavailable, incompatibleSchema, ioError, closed
        }
        private let value: Value

        /// The file is damaged or not a database (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, quick_check).
        public static let corrupt = Code(value: .corrupt)
        /// The disk is full (`SQLITE_FULL`); the write was rolled back and nothing earlier was lost.
        public static let diskFull = Code(value: .diskFull)
        /// The file or its directory cannot be opened, created or written (permissions, read-only).
        public static let unavailable = Code(value: .unavailable)
        /// The database was written by a newer httpdnsd (it has migrations this one does not know).
        public static let incompatibleSchema = Code(value: .incompatibleSchema)
        /// Any other sqlite failure while reading or writing (I/O errors, busy, ...).
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

    public let code: Code
    /// A sentence for logs and clients, starting with the database path.
    public let message: String
    /// The sqlite failure behind it, if any.
    public let underlying: SQLiteError?
    public let file: String
    public let line: Int

    public init(
        _ code: Code, _ message: String, underlying: SQLiteError? = nil, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    /// Classifies a sqlite failure on the database at `path`.
    init(_ error: SQLiteError, path: String, file: String = #fileID, line: Int = #line) {
        let code: Code
        switch error.code {
        case .corrupt, .notADatabase: code = .corrupt
        case .full: code = .diskFull
        case .cantOpen, .readOnly: code = .unavailable
        default: code = .ioError
        }
        self.init(code, "\(path): \(error.message)", underlying: error, file: file, line: line)
    }

    public var description: String { message }
}
