import CSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A prepared statement, kept by its database and reused (parsing SQL per row would cost more than the row).
/// Like its database, it belongs to one thread.
public final class SQLiteStatement {
    let handle: OpaquePointer
    public let sql: String
    private unowned let database: SQLiteDatabase

    init(handle: OpaquePointer, sql: String, database: SQLiteDatabase) {
        self.handle = handle
        self.sql = sql
        self.database = database
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Runs the statement with these parameters to the end (INSERT, UPDATE, DELETE, DDL).
    public func run(_ parameters: SQLiteBindable...) throws(StorageError) {
        try run(parameters)
    }

    public func run(_ parameters: [SQLiteBindable]) throws(StorageError) {
        try bound(parameters.count, { parameters[$0].sqliteValue }) { () throws(StorageError) in
            while try step() {}
        }
    }

    /// `run` with the values themselves: an array of `SQLiteValue` holds each inline, where an array of
    /// `SQLiteBindable` boxes those larger than three words (a slice of bytes) one by one.
    public func run(values: [SQLiteValue]) throws(StorageError) {
        try bound(values.count, { values[$0] }) { () throws(StorageError) in
            while try step() {}
        }
    }

    /// Runs a query and calls `row` for each result row, in order.
    public func query(_ parameters: SQLiteBindable..., row: (SQLiteRow) throws -> Void) throws {
        try query(parameters, row: row)
    }

    public func query(_ parameters: [SQLiteBindable], row: (SQLiteRow) throws -> Void) throws {
        try bind(parameters)
        defer { reset() }
        while try step() {
            try row(SQLiteRow(handle: handle))
        }
    }

    /// The first row's first column as an integer, or nil when there is no row or it is NULL.
    public func integer(_ parameters: SQLiteBindable...) throws(StorageError) -> Int64? {
        try bound(parameters.count, { parameters[$0].sqliteValue }) { () throws(StorageError) -> Int64? in
            guard try step() else { return nil }
            let row = SQLiteRow(handle: handle)
            return row.isNull(0) ? nil : row.integer(0)
        }
    }

    /// Runs `body` with `parameters` bound where they are (SQLITE_STATIC: SQLite neither copies a text nor a blob
    /// into memory of its own, which for a journal chunk was a copy of its every record), then resets the
    /// statement and clears the bindings before those bytes may go.
    private func bound<T>(
        _ count: Int, _ parameter: (Int) -> SQLiteValue, _ body: () throws(StorageError) -> T
    ) throws(StorageError) -> T {
        sqlite3_clear_bindings(handle)
        defer {
            reset()
            sqlite3_clear_bindings(handle)
        }
        return try bind(count, parameter, from: 0) { () -> Result<T, StorageError> in
            do throws(StorageError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }.get()
    }

    /// Binds the parameters from `offset` on, each inside the scope of its bytes, and runs `body` inside them all.
    private func bind<T>(
        _ count: Int, _ parameter: (Int) -> SQLiteValue, from offset: Int, _ body: () -> Result<T, StorageError>
    ) -> Result<T, StorageError> {
        guard offset < count else { return body() }
        let index = Int32(offset + 1)
        let result: Int32
        switch parameter(offset) {
        case .integer(let value): result = sqlite3_bind_int64(handle, index, value)
        case .real(let value): result = sqlite3_bind_double(handle, index, value)
        case .null: result = sqlite3_bind_null(handle, index)
        case .text(var value):
            return value.withUTF8 { bindText(UnsafeRawBufferPointer($0), index, count, parameter, offset, body) }
        case .blob(let bytes):
            return bytes.withUnsafeBytes { bindBlob($0, index, count, parameter, offset, body) }
        case .blobSlice(let bytes):
            return bytes.withUnsafeBytes { bindBlob($0, index, count, parameter, offset, body) }
        case .textSlice(let bytes):
            return bytes.withUnsafeBytes { bindText($0, index, count, parameter, offset, body) }
        }
        guard result == SQLITE_OK else { return .failure(database.error(result, sql: sql)) }
        return bind(count, parameter, from: offset + 1, body)
    }

    private func bindText<T>(
        _ utf8: UnsafeRawBufferPointer, _ index: Int32, _ count: Int, _ parameter: (Int) -> SQLiteValue,
        _ offset: Int, _ body: () -> Result<T, StorageError>
    ) -> Result<T, StorageError> {
        let bound = Self.bindText(utf8, to: handle, at: index, destructor: SQLiteDatabase.staticData)
        guard bound == SQLITE_OK else { return .failure(database.error(bound, sql: sql)) }
        return bind(count, parameter, from: offset + 1, body)
    }

    /// Binds text given as UTF-8 up to a NUL, as a C string would have been (and a non-null pointer for an empty one,
    /// or SQLite stores NULL).
    private static func bindText(
        _ utf8: UnsafeRawBufferPointer, to handle: OpaquePointer, at index: Int32, destructor: sqlite3_destructor_type?
    ) -> Int32 {
        var length = utf8.count
        if let base = utf8.baseAddress, let nul = memchr(base, 0, utf8.count) {
            length = UnsafeRawPointer(nul) - base
        }
        return sqlite3_bind_text(
            handle, index,
            (utf8.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
            Int32(length), destructor)
    }

    private func bindBlob<T>(
        _ buffer: UnsafeRawBufferPointer, _ index: Int32, _ count: Int, _ parameter: (Int) -> SQLiteValue,
        _ offset: Int, _ body: () -> Result<T, StorageError>
    ) -> Result<T, StorageError> {
        // A zero-length blob still needs a non-null pointer, or SQLite stores NULL.
        let bound = sqlite3_bind_blob(
            handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
            SQLiteDatabase.staticData)
        guard bound == SQLITE_OK else { return .failure(database.error(bound, sql: sql)) }
        return bind(count, parameter, from: offset + 1, body)
    }

    private func bind(_ parameters: [SQLiteBindable]) throws(StorageError) {
        sqlite3_clear_bindings(handle)
        for (offset, parameter) in parameters.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch parameter.sqliteValue {
            case .integer(let value): result = sqlite3_bind_int64(handle, index, value)
            case .real(let value): result = sqlite3_bind_double(handle, index, value)
            case .text(let value): result = sqlite3_bind_text(handle, index, value, -1, SQLiteDatabase.transient)
            case .blob(let bytes):
                result = bytes.withUnsafeBytes { buffer in
                    // A zero-length blob still needs a non-null pointer, or SQLite stores NULL.
                    sqlite3_bind_blob(
                        handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
                        SQLiteDatabase.transient)
                }
            case .blobSlice(let bytes):
                result = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob(
                        handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
                        SQLiteDatabase.transient)
                }
            case .textSlice(let bytes):
                result = bytes.withUnsafeBytes {
                    Self.bindText($0, to: handle, at: index, destructor: SQLiteDatabase.transient)
                }
            case .null: result = sqlite3_bind_null(handle, index)
            }
            guard result == SQLITE_OK else { throw database.error(result, sql: sql) }
        }
    }

    /// One step: true when a row is ready.
    private func step() throws(StorageError) -> Bool {
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error(result, sql: sql)
        }
    }

    private func reset() {
        sqlite3_reset(handle)
    }
}

/// The current row of a query; valid only inside the `row` closure.
public struct SQLiteRow {
    let handle: OpaquePointer

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    public func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    public func unsigned(_ column: Int32) -> UInt64 { UInt64(bitPattern: sqlite3_column_int64(handle, column)) }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
