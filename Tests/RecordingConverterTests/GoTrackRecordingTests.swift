// The Go!Track rides of ../shared/data converted: 163 tracks of 28 phones (87 car, 76 bus, as SOURCE.txt says), one
// GPS-only device per phone, the rides uploaded twice and those whose clock restarted left out and marked, the first
// and last point (07:24:32 local on 13 September 2014, 13:01:47 local on 19 January 2016) 3 h later in UTC.
// GPS Trajectories (Go!Track), UCI Machine Learning Repository, CC BY 4.0.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("Go!Track recordings", .enabled(if: SharedData.has(.gotrack), datasetAbsent(.gotrack)))
struct GoTrackRecordingTests {
    static var folder: URL { SharedData.url(Dataset.gotrack.folder)! }

    @Test func the163RidesOf28Phones() throws {
        let contents = try GoTrackConverter.read(folder: Self.folder)
        #expect(contents.skipped.count == 0, "\(contents.skipped.lines())")
        #expect(contents.tracks.count == 163)
        #expect(Dictionary(grouping: contents.tracks, by: \.mode).mapValues(\.count) == ["car": 87, "bus": 76])
        #expect(Set(contents.tracks.map(\.phone)).count == 28)
        // Every row of the points file but the two that repeat the row before (tracks 65 and 70).
        #expect(contents.tracks.reduce(0) { $0 + $1.points.count } == 18_107 - 2)
        #expect(contents.tracks.filter { $0.repeatedPoints > 0 }.map(\.id) == [65, 70])

        let status = GoTrackConverter.statuses(contents.tracks)
        let duplicates = status.filter { if case .duplicate = $0.value { true } else { false } }
        let overlapping = status.filter { if case .overlaps = $0.value { true } else { false } }
        #expect(duplicates.count == 17 && overlapping.count == 13)
        #expect(status[31] == .duplicate(of: 30) && status[38] == .overlaps(37) && status[139] == .duplicate(of: 138))
    }

    @Test func onePhoneIsOneGPSOnlyDevice() throws {
        let (recordings, skipped, legsCSV) = try RecordingConverter.gotrack(Self.folder)
        #expect(skipped.isEmpty)
        #expect(recordings.count == 28)
        #expect(Set(recordings.map(\.user)) == Set((0...27).map { "gotrack-\($0)" }))
        var locations = 0
        for recording in recordings {
            let objects = checkRecords(recording.lines, app: "recorded", user: recording.user)
            #expect(
                objects[0]["activityAvailable"] as? Bool == false && objects[0]["pedometerAvailable"] as? Bool == false)
            #expect(objects.count == 1 + recording.count(of: .location), "\(recording.user): locations only")
            #expect(records(objects, kind: "location").allSatisfy { $0["speed"] == nil && $0["hacc"] == nil })
            locations += recording.count(of: .location)
        }
        // The fixes of the 133 rides kept, as the legs file counts them.
        let legs = legsCSV.split(separator: "\n").dropFirst().map {
            $0.split(separator: ",", omittingEmptySubsequences: false)
        }
        #expect(legs.count == 163)
        let kept = legs.filter { $0.last == "kept" }
        #expect(kept.count == 133)
        #expect(locations == kept.reduce(0) { $0 + Int($1[5])! })
        #expect(locations == 13_373)
        // Phone 1 rode buses and drove: one device with both.
        #expect(recordings.first { $0.user == "gotrack-1" }?.label == "bus and car")

        let times = recordings.flatMap { $0.records.map(\.t) }
        #expect(ISO8601.string(fromSeconds: times.min()!) == "2014-09-13T10:24:32.000Z")
        #expect(ISO8601.string(fromSeconds: times.max()!) == "2016-01-19T16:01:47.000Z")
    }

    @Test func theCommandWritesALegPerRide() throws {
        let legs = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gotrack-legs-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: legs) }
        let result = ConvertCommandTests.run(["gotrack", Self.folder.path, "--legs", legs.path])
        #expect(result.status == 0, "stderr was: \(result.err)")
        #expect(result.err.contains("28 devices, 13401 records in all"))
        #expect(result.err.contains("track 56 left out: every point (55) identical to track 55's"))
        let rows = try String(contentsOf: legs, encoding: .utf8).split(separator: "\n")
        #expect(rows.first == "user,mode,start_ts,end_ts,track_id,fixes,duration_s,line,status")
        #expect(rows.count == 164)
        #expect(rows.filter { $0.hasPrefix("gotrack-1,car,") }.count == 20)
        #expect(rows.filter { $0.hasPrefix("gotrack-1,bus,") }.count == 36)
    }
}
