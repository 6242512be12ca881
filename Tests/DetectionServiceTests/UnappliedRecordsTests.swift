import DetectionEngine
import Foundation
import Logging
import RoadSaveModel
import Storage
import Testing

@testable import DetectionService

/// Records detection cannot apply are kept where an operator sees them, said in the log without flooding it, and
/// the stale-run case (a data directory holding a newer run of the same devices) is said once, plainly.
@Suite struct UnappliedRecordsTests {
    static let device = DeviceID(app: "app-1", user: "u-1")

    static func fix(at t: Double, seq: UInt64? = nil) -> SensorRecord {
        SensorRecord(
            device: device, seq: seq, t: t,
            payload: .location(LocationFix(latitude: -33.9, longitude: 18.4, speed: 3, horizontalAccuracy: 5)))
    }

    @Test func aFloodIsSaidAFewLinesAndACountPerInterval() {
        var log = UnappliedRecordsLog(dataDirectory: "/data/detect", linesPerInterval: 5, interval: 10)
        var lines: [UnappliedRecordsLog.Line] = []
        for index in 0..<1000 {
            lines += log.noted(
                Self.fix(at: 1000 + Double(index)), .late(appliedUpTo: 1005 + Double(index)),
                now: 100 + Double(index) * 0.001)
        }
        #expect(lines.count == 5, "five lines of their own, the rest counted")
        #expect(lines.allSatisfy { $0.level == .warning && $0.message.hasPrefix("record not applied") })
        let summary = log.roll(now: 111)
        #expect(summary.count == 1)
        #expect(summary.first?.fields.first { $0.0 == "records" }?.1 == "995")
        #expect(summary.first?.fields.first { $0.0 == "total" }?.1 == "1000")
        #expect(log.roll(now: 130).isEmpty, "nothing more to say")
        #expect(!log.staleRunReported, "seconds behind: disorder or a re-send, not another run")
    }

    @Test func recordsFarBehindWhatWasAppliedSayOnceThatTheDataDirectoryHoldsANewerRun() throws {
        var log = UnappliedRecordsLog(dataDirectory: "/data/detect")
        var lines: [UnappliedRecordsLog.Line] = []
        for index in 0..<100 {
            lines += log.noted(Self.fix(at: 1000 + Double(index)), .late(appliedUpTo: 90_000), now: 100)
        }
        let errors = lines.filter { $0.level == .error }
        #expect(errors.count == 1)
        let error = try #require(errors.first)
        #expect(error.message.contains("newer run") && error.message.contains("remove detection's data directory"))
        #expect(error.fields.contains { $0 == ("dataDir", "/data/detect") })
        // Duplicates by seq far behind say the same, once, where nothing said it yet.
        var other = UnappliedRecordsLog(dataDirectory: "/d")
        #expect(other.duplicate(Self.fix(at: 1000, seq: 3), appliedUpTo: 1005).isEmpty, "a re-send, seconds later")
        let said = other.duplicate(Self.fix(at: 1000, seq: 3), appliedUpTo: 90_000)
        #expect(said.count == 1 && said[0].message.contains("duplicates"))
        #expect(other.duplicate(Self.fix(at: 1001, seq: 4), appliedUpTo: 90_000).isEmpty)
    }

    @Test func theStoreKeepsEachRecordOnceWithWhy() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rs-unapplied-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DetectionStore(directory: directory, shard: "all")
        let late = UnappliedRecord(record: Self.fix(at: 1000, seq: 1), reason: .late(appliedUpTo: 1020))
        let future = UnappliedRecord(record: Self.fix(at: 9_000, seq: 2), reason: .farInFuture(streamTime: 1020))
        try store.commit(inputs: [], events: [], unapplied: [late, future], at: 50)
        // A re-run meets the same records again: kept once.
        try store.commit(inputs: [], events: [], unapplied: [late], at: 60)
        #expect(try store.unappliedCount() == 2)
        var rows: [String] = []
        try store.database.statement(
            "SELECT app, user, t, kind, reason, applied_up_to, record FROM unapplied ORDER BY id"
        ).query { row in
            rows.append(
                "\(row.text(0)) \(row.text(1)) \(row.double(2)) \(row.text(3)) \(row.text(4)) \(row.isNull(5) ? "-" : String(row.double(5)))"
            )
            #expect(row.text(6).hasPrefix("{") && row.text(6).contains("\"kind\":\"location\""))
        }
        #expect(rows == ["app-1 u-1 1000.0 location late 1020.0", "app-1 u-1 9000.0 location farInFuture -"])
        store.close()
    }
}
