import CSQLite

/// One SQLite connection, in WAL mode, owned by one thread (the service's reactor thread): SQLite's connections are
/// safe to use from one thread at a time, and one owner keeps transactions simple. Statements are prepared once and
/// kept by their SQL text.
///
/// Durability: `synchronous=FULL` fsyncs the write-ahead log at every commit, so a committed transaction survives
/// a crash of the process or of the machine; `normal` survives a crash of the process but may lose the last
/// commits on a power cut. A transaction cut short by a crash is rolled back when the file is next opened.
public final class SQLiteDatabase {
    public enum Synchronous: String, Sendable {
        case full = "FULL"
        case normal = "NORMAL"
    }

    public let path: String
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]
    private var transactionDepth = 0

    /// `SQLITE_TRANSIENT`: SQLite copies bound values before the call returns.
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    /// SQLITE_STATIC: the bound bytes stay where they are until the statement is reset (`SQLiteStatement.run`).
    static let staticData: sqlite3_destructor_type? = nil

    /// Opens (creating if needed) the database at `path`. `pageSize` (bytes, a power of two from 512 to 65536) is
    /// taken by a database created here; one that exists keeps the size it was made with.
    public init(
        path: String, synchronous: Synchronous = .full, busyTimeoutMilliseconds: Int32 = 5000,
        pageSize: Int? = nil
    ) throws(StorageError) {
        self.path = path
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &opened, flags, nil)
        guard result == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(opened)
            throw StorageError(code: result, message: "cannot open \(path): \(message)")
        }
        handle = opened
        sqlite3_extended_result_codes(opened, 1)
        sqlite3_busy_timeout(opened, busyTimeoutMilliseconds)
        // Only an empty database takes a page size, and only before WAL mode: for any other it changes nothing.
        if let pageSize { try execute("PRAGMA page_size=\(pageSize)") }
        let mode = try text("PRAGMA journal_mode=WAL")
        guard mode.lowercased() == "wal" else {
            throw StorageError(
                code: -1, message: "\(path): the file system does not support WAL mode (journal_mode=\(mode))")
        }
        try execute("PRAGMA synchronous=\(synchronous.rawValue)")
        try execute("PRAGMA foreign_keys=ON")
        // SQLite folds the log into the file every 1000 pages, 4 MB of 4 KiB pages but 64 MB of 64 KiB ones: one fold
        // of that size would hold up the owning thread for tens of milliseconds. About 4 MiB, whatever the pages.
        let size = try integer("PRAGMA page_size") ?? 4096
        try execute("PRAGMA wal_autocheckpoint=\(max(1, Self.logFoldBytes / max(512, size)))")
    }

    /// Bytes of log after which a commit folds it into the file.
    static let logFoldBytes: Int64 = 4 << 20

    deinit {
        close()
    }

    /// Closes the connection; statements kept are finalised first.
    public func close() {
        statements.removeAll()
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Runs SQL text that may hold several statements and returns no rows (schema, pragmas).
    public func execute(_ sql: String) throws(StorageError) {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(try connection(), sql, nil, nil, &message)
        guard result == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_free(message)
            throw StorageError(code: result, message: text, sql: sql)
        }
    }

    /// The statement for this SQL, prepared on first use and kept.
    public func statement(_ sql: String) throws(StorageError) -> SQLiteStatement {
        if let kept = statements[sql] { return kept }
        var prepared: OpaquePointer?
        let result = sqlite3_prepare_v3(try connection(), sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard result == SQLITE_OK, let prepared else { throw error(result, sql: sql) }
        let statement = SQLiteStatement(handle: prepared, sql: sql, database: self)
        statements[sql] = statement
        return statement
    }

    /// The steps SQLite's virtual machine has taken in the statements this connection keeps (`statement`), all told:
    /// the work of queries, which, unlike their time, does not move with the machine's load. For tests that a
    /// query's work does not grow with rows it need not read.
    public var virtualMachineSteps: Int {
        statements.values.reduce(0) { $0 + Int(sqlite3_stmt_status($1.handle, SQLITE_STMTSTATUS_VM_STEP, 0)) }
    }

    /// Runs `body` in one transaction (BEGIN IMMEDIATE … COMMIT): all of it is stored, or none of it. Nested calls
    /// join the outer transaction.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        if transactionDepth > 0 {
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            return try body()
        }
        // Prepared once and kept, as any statement: sqlite3_exec would parse them again every transaction.
        try statement("BEGIN IMMEDIATE").run()
        transactionDepth = 1
        do {
            let value = try body()
            transactionDepth = 0
            try statement("COMMIT").run()
            return value
        } catch {
            transactionDepth = 0
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The rowid of the last row inserted on this connection.
    public var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// Bytes of the database in use (pages holding data; free pages left by deletions are reused, not counted).
    public func bytesInUse() throws(StorageError) -> Int64 {
        let pages = try integer("PRAGMA page_count") ?? 0
        let free = try integer("PRAGMA freelist_count") ?? 0
        let size = try integer("PRAGMA page_size") ?? 4096
        return (pages - free) * size
    }

    /// Copies the write-ahead log into the database file and empties it, so the log does not grow without bound
    /// while a reader is always busy. Safe at any time outside a transaction.
    public func checkpointLog() throws(StorageError) {
        try execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// The first column of the first row of a one-off query.
    public func integer(_ sql: String) throws(StorageError) -> Int64? {
        try statement(sql).integer()
    }

    private func text(_ sql: String) throws(StorageError) -> String {
        var value = ""
        do {
            try statement(sql).query { row in value = row.text(0) }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(code: -1, message: "\(error)", sql: sql)
        }
        return value
    }

    private func connection() throws(StorageError) -> OpaquePointer {
        guard let handle else { throw StorageError(code: -1, message: "\(path) is closed") }
        return handle
    }

    func error(_ code: Int32, sql: String?) -> StorageError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return StorageError(code: code, message: message, sql: sql)
    }
}
