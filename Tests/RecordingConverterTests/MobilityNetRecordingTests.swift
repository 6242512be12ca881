// The MobilityNet whole journeys of ../shared/data converted, every phone and run: each device's records are
// PROTOCOL §2 records, a location per distinct location entry and an activity per activity entry of its files (read
// independently with JSONSerialization), and the legs written for the quality tool are each run's legs, for each
// phone converted.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("MobilityNet recordings", .enabled(if: SharedData.has(.mobilitynet), datasetAbsent(.mobilitynet)))
struct MobilityNetRecordingTests {
    static var folder: URL { SharedData.url(Dataset.mobilitynet.folder)! }

    /// The entries of one of a phone run's files (none when the file is not there).
    static func entries(_ phoneRun: MobilityNetConverter.PhoneRun, _ key: String) throws -> [[String: Any]] {
        let file = folder.appendingPathComponent(phoneRun.phone).appendingPathComponent(phoneRun.spec)
            .appendingPathComponent(key).appendingPathComponent("\(phoneRun.file).json.gz")
        guard FileManager.default.fileExists(atPath: file.path) else { return [] }
        return try #require(
            try JSONSerialization.jsonObject(with: try RecordingFile.data(of: file)) as? [[String: Any]])
    }

    @Test func everyPhoneRunGivesItsReadings() throws {
        let phoneRuns = try MobilityNetConverter.phoneRuns(in: Self.folder)
        let (recordings, skipped) = try MobilityNetConverter.convert(folder: Self.folder)
        #expect(recordings.count + skipped.count == phoneRuns.count)
        #expect(Set(recordings.map(\.user)).count == recordings.count, "one device per phone and run")
        #expect(recordings.count >= 70, "most phone runs have readings (\(recordings.count))")
        for recording in recordings {
            let phoneRun = try #require(phoneRuns.first { $0.user == recording.user })
            checkRecords(recording.lines, app: "recorded", user: recording.user)
            // Distinct location readings with a position and a time, and every activity entry (none repeated here).
            let locations = try Self.entries(phoneRun, "background~location").compactMap { entry -> String? in
                guard let data = entry["data"] as? [String: Any], data["ts"] != nil, data["latitude"] != nil else {
                    return nil
                }
                return ["ts", "latitude", "longitude", "sensed_speed", "bearing", "accuracy"]
                    .map { "\(data[$0] ?? "-")" }.joined(separator: " ")
            }
            let activities = try Self.entries(phoneRun, "background~motion_activity")
            #expect(recording.count(of: .location) == Set(locations).count, "\(recording.user): locations")
            #expect(recording.count(of: .activity) == activities.count, "\(recording.user): activities")
            #expect(recording.label == "\(phoneRun.os) \(phoneRun.config)")
        }
    }

    @Test func theLegsAreEachRunsForEachPhoneConverted() throws {
        let legs = try MobilityNetConverter.legs(in: Self.folder)
        #expect(legs.count > 200)
        #expect(legs.allSatisfy { $0.end >= $0.start })
        let phoneRuns = try MobilityNetConverter.phoneRuns(in: Self.folder).filter { $0.phone == "ucb-sdb-ios-2" }
        let lines = MobilityNetConverter.legsCSV(legs, for: phoneRuns).split(separator: "\n")
        #expect(lines.first == "user,os,role,config,spec,run,trip_id,leg_id,leg_type,mode,start_ts,end_ts")
        let expected = phoneRuns.reduce(0) { count, phoneRun in
            count + legs.filter { $0.spec == phoneRun.spec && $0.run == phoneRun.run }.count
        }
        #expect(lines.count - 1 == expected)
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("ios-2.") && $0.contains(",ios,") })
        // The car legs of the journeys with a car.
        #expect(legs.filter { $0.mode == "CAR" }.count >= 9)
    }
}
