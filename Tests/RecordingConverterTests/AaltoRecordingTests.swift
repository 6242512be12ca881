// The Aalto TrafficSense dataset of ../shared/data converted: eight phones, a location and an activity per row of
// device_data.csv (counted here from the file's lines), the day from 09:00 to 16:00 local (06:00–13:00 UTC) as SOURCE.txt
// says, and the 103 legs of manual_log.csv by mode. Aalto TrafficSense public-transport dataset, Aalto University,
// CC BY 4.0.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("Aalto TrafficSense recordings", .enabled(if: SharedData.has(.aalto), datasetAbsent(.aalto)))
struct AaltoRecordingTests {
    static var folder: URL { SharedData.url(Dataset.aalto.folder)! }

    /// Rows per device_id in device_data.csv, read as plain lines (the file quotes no comma).
    static func rowsPerDevice() throws -> [String: Int] {
        let text = try String(contentsOf: folder.appendingPathComponent("csv/device_data.csv"), encoding: .utf8)
        var counts: [String: Int] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            counts["aalto-" + line.split(separator: ",")[1], default: 0] += 1
        }
        return counts
    }

    @Test func everyPhoneGivesALocationAndAnActivityPerRow() throws {
        let (recordings, skipped, _) = try RecordingConverter.aalto(Self.folder)
        #expect(skipped.isEmpty, "\(skipped)")
        let expected = try Self.rowsPerDevice()
        #expect(expected.values.reduce(0, +) == 6030, "the README's 6030 entries")
        #expect(recordings.map(\.user) == (1...8).map { "aalto-\($0)" })
        for recording in recordings {
            let objects = checkRecords(recording.lines, app: "recorded", user: recording.user)
            #expect(objects[0]["activityAvailable"] as? Bool == true)
            #expect(recording.count(of: .location) == expected[recording.user], "\(recording.user)")
            #expect(recording.count(of: .activity) == expected[recording.user], "\(recording.user)")
            #expect(records(objects, kind: "location").allSatisfy { $0["speed"] == nil && $0["hacc"] != nil })
            #expect(recording.label != nil, "\(recording.user): its model from device_models.csv")
        }
        // 09:00 to 16:00 local, EEST: 06:00 to 13:00 UTC on 26 August 2016.
        let times = recordings.flatMap { $0.records.map(\.t) }
        #expect(ISO8601.string(fromSeconds: times.min()!) == "2016-08-26T06:00:00.206Z")
        #expect(ISO8601.string(fromSeconds: times.max()!) == "2016-08-26T12:59:58.568Z")
        #expect(recordings.first { $0.user == "aalto-7" }?.report.notes.contains { $0.contains("(3 car)") } == true)
    }

    @Test func theLogHas103LegsByMode() throws {
        let contents = try AaltoConverter.read(folder: Self.folder)
        #expect(contents.skipped.count == 0)
        let legs = contents.legs
        #expect(legs.count == 103)
        let modes = Dictionary(grouping: legs, by: \.mode).mapValues(\.count)
        #expect(modes == ["metro": 58, "bus": 15, "tram": 15, "train": 9, "car": 6])
        #expect(Set(legs.filter { $0.mode == "car" }.map(\.deviceID)) == [2, 3, 7])
        // Departures from 09:01:18 local (device 3's drive), the last arrival at 16:20 local (bus 156).
        #expect(ISO8601.string(fromSeconds: legs.map(\.start).min()!) == "2016-08-26T06:01:18.000Z")
        #expect(ISO8601.string(fromSeconds: legs.map(\.end).max()!) == "2016-08-26T13:20:00.000Z")
        #expect(legs.allSatisfy { $0.end >= $0.start })
        let csv = AaltoConverter.legsCSV(legs).split(separator: "\n")
        #expect(csv.count == 104)
    }

    @Test func theCommandWritesTheLegsAndSaysWhatItDerived() throws {
        let legs = FileManager.default.temporaryDirectory.appendingPathComponent("aalto-legs-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: legs) }
        let result = ConvertCommandTests.run(["aalto", Self.folder.path, "--legs", legs.path])
        #expect(result.status == 0, "stderr was: \(result.err)")
        #expect(result.out.split(separator: "\n").count == 6030 * 2 + 8)
        #expect(result.err.contains("derived: times: the files' local times are EEST (UTC+3"))
        #expect(result.err.contains("8 devices, 12068 records in all"))
        let rows = try String(contentsOf: legs, encoding: .utf8).split(separator: "\n")
        #expect(rows.count == 104 && rows.filter { $0.contains(",car,CAR,") }.count == 6)
    }
}
