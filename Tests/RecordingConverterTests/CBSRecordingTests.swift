// CBS Smart Survey day files from ../shared/data: GPS as recorded (no speed), activity optionally derived from the
// travel diary, diary segments checked against segments_derived.csv made independently beside the data.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("CBS recordings", .enabled(if: SharedData.isAvailable, sharedDataAbsent))
struct CBSRecordingTests {
    static let folder = "cbs-smart-survey-gps/split-by-day"

    struct ReferenceSegment {
        var stop: Bool
        var mode: String
        var start: Double
        var end: Double
        var points: Int
    }

    /// segments_derived.csv: file,user,stop,mode,start_utc,end_utc,duration_min,n_points,distance_km
    static func referenceSegments() throws -> [String: [ReferenceSegment]] {
        let url = try #require(sharedFile("cbs-smart-survey-gps/segments_derived.csv"))
        let text = try String(contentsOf: url, encoding: .utf8)
        var result: [String: [ReferenceSegment]] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 8, let start = RecordingTime.seconds(from: Substring(f[4])),
                let end = RecordingTime.seconds(from: Substring(f[5])), let points = Int(f[7])
            else {
                Issue.record("unreadable reference line \(line)")
                continue
            }
            result[f[0], default: []].append(
                ReferenceSegment(
                    stop: f[2] == "True", mode: f[3], start: start, end: end,
                    points: points))
        }
        return result
    }

    @Test func segmentsMatchTheDerivedSegmentsFile() throws {
        let reference = try Self.referenceSegments()
        let files = SharedData.files(in: Self.folder, suffix: ".csv.gz")
        #expect(files.count == 13)
        #expect(reference.count == 13)
        for file in files {
            let name = String(file.lastPathComponent.dropLast(".gz".count))
            let expected = try #require(reference[name], "\(name) in segments_derived.csv")
            let log = try CBSConverter.parse(try RecordingFile.text(of: file))
            let segments = CBSConverter.segments(log.fixes)
            #expect(segments.count == expected.count, "\(name)")
            for (ours, theirs) in zip(segments, expected) {
                #expect(ours.stop == theirs.stop && ours.mode == theirs.mode, "\(name): \(ours) vs \(theirs)")
                #expect(abs(ours.start - theirs.start) <= 60 && abs(ours.end - theirs.end) <= 60, "\(name): \(ours)")
                #expect(abs(ours.pointCount - theirs.points) <= max(2, theirs.points / 50), "\(name): \(ours)")
            }
        }
    }

    @Test func dayFileConvertsWithDerivedActivity() throws {
        let file = try #require(sharedFile("\(Self.folder)/ssi_open_geodata-Utrecht1-2024-06-10.csv.gz"))
        let recording = try RecordingConverter.cbs(file, app: "app-1", deriveActivity: true)
        #expect(recording.user == "Utrecht1-2024-06-10")
        #expect(recording.label == "Utrecht1")
        let objects = checkRecords(recording.lines, app: "app-1", user: "Utrecht1-2024-06-10")
        #expect(objects[0]["activityAvailable"] as? Bool == true && objects[0]["pedometerAvailable"] as? Bool == false)

        let locations = records(objects, kind: "location")
        #expect(locations.count == 21_107) // every data row, duplicates included
        #expect(locations.allSatisfy { $0["speed"] == nil && $0["course"] == nil && $0["hacc"] == nil })
        #expect(locations.allSatisfy { (50...54).contains(double($0, "lat")!) && (3...8).contains(double($0, "lon")!) })

        // One activity per diary segment, at its start, with the documented mapping.
        let activities = records(objects, kind: "activity")
        #expect(activities.count == recording.diarySegments.count)
        for (activity, segment) in zip(activities, recording.diarySegments) {
            #expect(double(activity, "t") == segment.start)
            let (kind, confidence) = CBSConverter.activity(for: segment)
            #expect(
                activity["activity"] as? String == kind.rawValue
                    && activity["confidence"] as? String == confidence.rawValue)
        }
        let kinds = Set(activities.compactMap { $0["activity"] as? String })
        #expect(kinds == ["stationary", "walking", "cycling", "automotive"])

        #expect(
            recording.report.derived.contains { $0.contains("activity records derived from the travel-diary labels") })
        #expect(recording.report.notes.contains { $0.contains("226 rows repeat the previous row's timestamp") })
        #expect(recording.report.notes.contains { $0.contains("no speed (unknown)") })
    }

    @Test func withoutDerivedActivityThereIsNoClassifier() throws {
        let file = try #require(sharedFile("\(Self.folder)/ssi_open_geodata-Utrecht6-2024-06-18.csv.gz"))
        let recording = try RecordingConverter.cbs(file)
        let objects = checkRecords(recording.lines, app: "recorded", user: "Utrecht6-2024-06-18")
        #expect(objects[0]["activityAvailable"] as? Bool == false)
        #expect(records(objects, kind: "activity").isEmpty)
        #expect(records(objects, kind: "location").count == 471)
        #expect(recording.diarySegments.map(\.mode) == ["", "Tram", "Walk", "Tram", "Walk"])
    }
}
