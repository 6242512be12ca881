import Foundation
import Storage
import Testing

private func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "roadsave-storage-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite("SQLite database")
struct SQLiteDatabaseTests {
    @Test("WAL mode, values of every type round-trip, statements are kept")
    func roundTrip() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try SQLiteDatabase(path: directory + "/t.sqlite")
        #expect(try database.integer("PRAGMA synchronous") == 2, "FULL by default")
        try database.execute("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, n)")
        let insert = try database.statement("INSERT INTO t VALUES (?, ?, ?, ?, ?)")
        try insert.run(Int64.max, 1.5, "zoë", [UInt8](), Optional<String>.none)
        try insert.run(-1, -0.25, "", [0, 255], "x")
        #expect(try database.statement("INSERT INTO t VALUES (?, ?, ?, ?, ?)") === insert)
        var rows: [String] = []
        try database.statement("SELECT i, r, s, b, n FROM t ORDER BY rowid").query { row in
            rows.append("\(row.integer(0)) \(row.double(1)) \(row.text(2)) \(row.blob(3)) \(row.isNull(4))")
        }
        #expect(rows == ["\(Int64.max) 1.5 zoë [] true", "-1 -0.25  [0, 255] false"])
        #expect(
            try database.statement("SELECT count(*) FROM t WHERE b IS NULL").integer() == 0,
            "an empty blob is stored as a blob, not NULL")
    }

    @Test("a transaction that throws leaves nothing behind; a committed one survives reopening")
    func transactions() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/t.sqlite"
        do {
            let database = try SQLiteDatabase(path: path)
            try database.execute("CREATE TABLE t(v INTEGER)")
            struct Boom: Error {}
            #expect(throws: Boom.self) {
                try database.transaction {
                    try database.statement("INSERT INTO t VALUES (?)").run(1)
                    throw Boom()
                }
            }
            try database.transaction {
                try database.statement("INSERT INTO t VALUES (?)").run(2)
                // Nested calls join the outer transaction.
                try database.transaction { try database.statement("INSERT INTO t VALUES (?)").run(3) }
            }
            #expect(database.lastInsertRowID == 2)
        }
        let reopened = try SQLiteDatabase(path: path)
        var values: [Int64] = []
        try reopened.statement("SELECT v FROM t ORDER BY v").query { values.append($0.integer(0)) }
        #expect(values == [2, 3])
        #expect(try reopened.bytesInUse() > 0)
    }

    @Test("errors carry SQLite's message and the statement")
    func errors() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try SQLiteDatabase(path: directory + "/t.sqlite")
        do {
            _ = try database.statement("SELECT * FROM missing")
            Issue.record("a statement on a missing table was prepared")
        } catch {
            #expect(error.message.contains("no such table") && error.sql == "SELECT * FROM missing")
        }
        #expect(throws: StorageError.self) { try SQLiteDatabase(path: directory + "/no/such/dir/t.sqlite") }
    }

    @Test("a data directory is created private, and a file in its place is refused")
    func dataDirectory() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try DataDirectory.prepare(directory + "/a/b")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o700)
        #expect(FileManager.default.createFile(atPath: directory + "/file", contents: Data()))
        #expect(throws: StorageError.self) { try DataDirectory.prepare(directory + "/file") }
        #expect(DataDirectory.file("x.sqlite", in: "/d/") == "/d/x.sqlite")
    }
}
