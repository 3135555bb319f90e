import CSQLite

/// A failed sqlite3 call: the result codes, sqlite's message and the SQL that failed.
///
/// Bound values are never recorded: cookie values are login sessions, and errors end up in logs.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A primary sqlite3 result code (`SQLITE_*`); extended codes carry it in their low byte.
    public struct ResultCode: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `SQLITE_ERROR`: generic error (syntax, missing table, ...).
        public static let error = ResultCode(rawValue: SQLITE_ERROR)
        /// `SQLITE_BUSY`: another connection holds a lock longer than the busy timeout.
        public static let busy = ResultCode(rawValue: SQLITE_BUSY)
        /// `SQLITE_READONLY`: the file or directory cannot be written.
        public static let readOnly = ResultCode(rawValue: SQLITE_READONLY)
        /// `SQLITE_IOERR`: the operating system reported an I/O error.
        public static let ioError = ResultCode(rawValue: SQLITE_IOERR)
        /// `SQLITE_CORRUPT`: the database disk image is malformed.
        public static let corrupt = ResultCode(rawValue: SQLITE_CORRUPT)
        /// `SQLITE_FULL`: the disk (or `max_page_count`) is full.
        public static let full = ResultCode(rawValue: SQLITE_FULL)
        /// `SQLITE_CANTOPEN`: the file cannot be opened.
        public static let cantOpen = ResultCode(rawValue: SQLITE_CANTOPEN)
        /// `SQLITE_CONSTRAINT`: a constraint was violated.
        public static let constraint = ResultCode(rawValue: SQLITE_CONSTRAINT)
        /// `SQLITE_NOTADB`: the file is not a database.
        public static let notADatabase = ResultCode(rawValue: SQLITE_NOTADB)
    }

    /// The primary result code.
    public let code: ResultCode
    /// The extended result code (`SQLITE_IOERR_FSYNC`, `SQLITE_CORRUPT_INDEX`, ...).
    public let extendedCode: Int32
    /// `sqlite3_errmsg` (or `sqlite3_errstr` when there is no connection).
    public let message: String
    /// The SQL text that failed, if any; never the bound values.
    public let sql: String?

    public init(extendedCode: Int32, message: String, sql: String?) {
        self.code = ResultCode(rawValue: extendedCode & 0xFF)
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    public var description: String {
        var text = "\(message) (sqlite code \(code.rawValue), extended \(extendedCode))"
        if let sql { text += " in: \(sql)" }
        return text
    }
}
