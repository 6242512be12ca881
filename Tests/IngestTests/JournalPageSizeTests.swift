import Foundation
import RoadSaveModel
import Storage
import Testing

@testable import IngestService

/// A new journal takes large pages (a chunk is tens of KiB, and SQLite moves a page a system call); one made with
/// SQLite's 4 KiB pages, as journals were before, opens and works as it is.
@Suite struct JournalPageSizeTests {
    static func pageSize(_ path: String) throws -> Int64? {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        return try database.integer("PRAGMA page_size")
    }

    @Test func aNewJournalHasLargePages() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try Journal(directory: directory.path, shards: 1, log: Records.quiet)
        journal.close()
        #expect(try Self.pageSize(journal.path) == Int64(Journal.pageSize))
        // The log is still folded into the file every 4 MiB, not every 1000 pages (64 MB of these).
        let database = try SQLiteDatabase(path: journal.path)
        defer { database.close() }
        #expect(try database.integer("PRAGMA wal_autocheckpoint") == 64)
    }

    @Test func aJournalWithSmallPagesKeepsThemAndItsRecords() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/" + Journal.fileName
        // A journal as ingest made them before: SQLite's default page size, records stored, closed.
        let old = try SQLiteDatabase(path: path)
        old.close()
        #expect(try Self.pageSize(path) == 4096)
        let records = Records.drive(user: "u1", count: 50)
        do {
            let journal = try Journal(directory: directory.path, shards: 1, log: Records.quiet)
            for record in records { journal.admit(record.device) }
            try journal.append([Journal.Batch(id: "1", records: records)])
            journal.close()
        }
        let journal = try Journal(directory: directory.path, shards: 1, log: Records.quiet)
        defer { journal.close() }
        #expect(try Self.pageSize(path) == 4096, "the page size a journal was made with stays")
        try journal.append([Journal.Batch(id: "2", records: Records.drive(user: "u1", count: 5, start: 1_772_434_000))])
        let read = try journal.read(Requests.request(after: 0))
        #expect(read.items.count == 2 && read.to == 2)
    }
}
