import CSQLite

/// A value bound to a statement parameter.
public enum SQLiteValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A prepared statement, finalized when released. Confined to its database's thread.
public final class SQLiteStatement {
    /// Kept so the connection is not closed under a live statement.
    private let database: SQLiteDatabase
    private let handle: OpaquePointer
    /// The SQL text, for errors.
    public let sql: String
    /// The texts of the last `bind(_:)`, copied in one after another and bound in place
    /// (SQLITE_STATIC), so that sqlite neither allocates nor copies each value (it did with
    /// SQLITE_TRANSIENT: a seventh of a cookie upsert). Replaced only after clearing the bindings,
    /// so no binding ever points at freed memory; freed after the statement.
    private var scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)

    init(database: SQLiteDatabase, handle: OpaquePointer, sql: String) {
        self.database = database
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
        scratch.deallocate()
    }

    /// Binds `values` to parameters 1...n, after resetting the statement and clearing old bindings.
    public func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        var bytes = 0
        for value in values {
            if case .text(let string) = value { bytes += string.utf8.count }
        }
        if bytes > scratch.count {
            sqlite3_clear_bindings(handle)
            scratch.deallocate()
            scratch = .allocate(byteCount: max(bytes, scratch.count * 2), alignment: 1)
        } else if values.count < Int(sqlite3_bind_parameter_count(handle)) {
            // Only parameters left out keep an old value: clearing all is work when all are bound.
            sqlite3_clear_bindings(handle)
        }
        var used = 0
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .text(let string):
                let place = copyIntoScratch(at: used, string)
                used += place.count
                try check(
                    sqlite3_bind_text64(
                        handle, index, place.baseAddress!.assumingMemoryBound(to: CChar.self),
                        sqlite3_uint64(place.count), csqlite_static(), UInt8(SQLITE_UTF8)))
            default:
                try bind(value, at: index)
            }
        }
    }

    /// Copies a text's UTF-8 into the scratch at `offset`: the place it now has there.
    private func copyIntoScratch(at offset: Int, _ string: String) -> UnsafeMutableRawBufferPointer {
        func copy(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeMutableRawBufferPointer {
            let place = UnsafeMutableRawBufferPointer(rebasing: scratch[offset..<(offset + bytes.count)])
            place.copyBytes(from: bytes)
            return place
        }
        if let place = string.utf8.withContiguousStorageIfAvailable(copy) { return place }
        var contiguous = string
        return contiguous.withUTF8(copy)
    }

    private func check(_ rc: Int32) throws(SQLiteError) {
        guard rc == SQLITE_OK else { throw database.error(sql: sql) }
    }

    /// Binds one value to the 1-based parameter `index`.
    public func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        let rc: Int32
        switch value {
        case .null:
            rc = sqlite3_bind_null(handle, index)
        case .integer(let number):
            rc = sqlite3_bind_int64(handle, index, number)
        case .real(let number):
            rc = sqlite3_bind_double(handle, index, number)
        case .text(let string):
            // Explicit length: the octets are stored as they are, including any NUL. In place (a
            // `var` copy for `withUTF8` is a retain and a release); sqlite copies them (TRANSIENT).
            func bindText(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
                sqlite3_bind_text64(
                    handle, index, bytes.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                    sqlite3_uint64(bytes.count), csqlite_transient(), UInt8(SQLITE_UTF8))
            }
            if let inPlace = string.utf8.withContiguousStorageIfAvailable(bindText) {
                rc = inPlace
            } else {
                var copy = string
                rc = copy.withUTF8(bindText)
            }
        case .blob(let bytes):
            rc = bytes.withUnsafeBytes { raw in
                sqlite3_bind_blob64(handle, index, raw.baseAddress, sqlite3_uint64(raw.count), csqlite_transient())
            }
        }
        try check(rc)
    }

    /// Advances to the next row: true when a row is available, false when the statement is done.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.error(sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Binds `values` and runs the statement to completion (INSERT, UPDATE, DELETE).
    public func run(_ values: [SQLiteValue] = []) throws(SQLiteError) {
        try bind(values)
        while try step() {}
        sqlite3_reset(handle)
    }

    /// Binds `values` and calls `row` for each result row.
    public func query(_ values: [SQLiteValue] = [], row: (SQLiteStatement) throws(SQLiteError) -> Void)
        throws(SQLiteError)
    {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() { try row(self) }
    }

    // MARK: - Columns of the current row (0-based)

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    public func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    /// The column as text (decoded as UTF-8, with invalid sequences repaired); "" for NULL.
    public func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    public func optionalString(_ column: Int32) -> String? { isNull(column) ? nil : string(column) }

    public func blob(_ column: Int32) -> [UInt8] {
        guard let bytes = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

@available(*, unavailable)
extension SQLiteStatement: Sendable {}
