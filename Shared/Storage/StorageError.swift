import CSQLite

/// A failure of the embedded store, with SQLite's own words and the statement that failed.
public struct StorageError: Error, Sendable, CustomStringConvertible {
    /// SQLite's result code (`SQLITE_FULL`, `SQLITE_CORRUPT`, …), or -1 for errors of this module.
    public var code: Int32
    public var message: String
    public var sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The disk (or the file size limit) is full: the store refuses new data until room is made.
    public var isFull: Bool { code & 0xff == SQLITE_FULL }

    public var description: String {
        let statement = sql.map { " in \"\($0.prefix(120))\"" } ?? ""
        return "\(message) (SQLite code \(code))\(statement)"
    }
}
