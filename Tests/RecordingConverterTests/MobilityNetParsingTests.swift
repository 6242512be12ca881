// The MobilityNet dumps' entry shapes on small inline samples (run everywhere): Android's DetectedActivity under its
// obfuscated names timed by write_ts, iOS's CMMotionActivity flags with a confidence word, `bearing` as the course,
// and errors that name the file and the field.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("MobilityNet parsing")
struct MobilityNetParsingTests {
    static let t0 = 1_564_174_916.0

    static func androidActivity(writeTS: Double, type: Int, percent: Int) -> String {
        #"{"metadata": {"key": "background/motion_activity", "platform": "android", "write_ts": \#(writeTS)}, "data": {"zzbhB": \#(type), "zzbhC": \#(percent), "write_ts": \#(writeTS)}}"#
    }

    static func iosActivity(ts: Double, flags: [String], confidence: String) -> String {
        let members = ["automotive", "cycling", "running", "walking", "stationary", "unknown"]
            .map { #""\#($0)": \#(flags.contains($0))"# }.joined(separator: ", ")
        return
            #"{"metadata": {"key": "background/motion_activity", "platform": "ios"}, "data": {\#(members), "ts": \#(ts), "confidence": "\#(confidence)", "write_ts": \#(ts)}}"#
    }

    static func location(_ platform: String, ts: Double, speed: Double, bearing: Double) -> String {
        #"{"metadata": {"key": "background/location", "platform": "\#(platform)"}, "data": {"ts": \#(ts), "latitude": 37.39, "longitude": -122.08, "sensed_speed": \#(speed), "bearing": \#(bearing), "accuracy": 8}}"#
    }

    static func day(_ entries: [String]) -> [UInt8] { Array(("[" + entries.joined(separator: ",\n") + "]").utf8) }

    @Test func androidDetectedActivityIsTimedByItsWriteTime() throws {
        let parsed = try EmissionConverter.parse(
            Self.day([
                Self.androidActivity(writeTS: Self.t0, type: 0, percent: 96),
                Self.androidActivity(writeTS: Self.t0 + 30, type: 3, percent: 40),
            ]), fileName: "android.json")
        #expect(parsed.activities.map(\.t) == [Self.t0, Self.t0 + 30])
        #expect(parsed.activities.map(\.type) == [0, 3])
        #expect(parsed.activities.compactMap { EmissionConverter.confidence(of: $0) } == [.high, .low])
    }

    @Test func iosFlagsMapAsTheAppMapsThem() throws {
        let parsed = try EmissionConverter.parse(
            Self.day([
                Self.iosActivity(ts: Self.t0, flags: ["automotive"], confidence: "high"),
                Self.iosActivity(ts: Self.t0 + 1, flags: ["automotive", "stationary"], confidence: "medium"),
                Self.iosActivity(ts: Self.t0 + 2, flags: ["walking"], confidence: "high"),
                Self.iosActivity(ts: Self.t0 + 3, flags: ["stationary"], confidence: "low"),
                Self.iosActivity(ts: Self.t0 + 4, flags: [], confidence: "high"),
                Self.iosActivity(ts: Self.t0 + 5, flags: ["cycling"], confidence: "high"),
            ]), fileName: "ios.json")
        // IN_VEHICLE, STOPPED_WHILE_IN_VEHICLE, WALKING, STILL, NONE, BICYCLING.
        #expect(parsed.activities.map(\.type) == [0, 10, 7, 3, 9, 1])
        #expect(
            parsed.activities.map { EmissionConverter.activity(forType: $0.type) }
                == [.automotive, .automotive, .walking, .stationary, .unknown, .cycling])
        #expect(
            parsed.activities.compactMap { EmissionConverter.confidence(of: $0) }
                == [.high, .medium, .high, .low, .high, .high])
    }

    @Test func theBearingIsTheCourse() throws {
        let recording = try EmissionConverter.convert(
            bytes: Self.day([
                Self.location("ios", ts: Self.t0, speed: 12, bearing: 271),
                Self.location("ios", ts: Self.t0 + 1, speed: -1, bearing: -1),
            ]), fileName: "ios.json")
        let fixes = recording.records.compactMap { record -> LocationFix? in
            if case .location(let fix) = record.payload { fix } else { nil }
        }
        #expect(fixes.map(\.course) == [271, nil])
        #expect(fixes.map(\.speed) == [12, nil])
    }

    /// The derived tables of a folder made for the test: a bad one is an error naming the file and the line or the
    /// column, never a crash.
    @Test func badDerivedTablesNameTheirFileAndLine() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mobilitynet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func reason(runs: String? = nil, legs: String? = nil) -> String {
            do {
                if let runs {
                    try runs.write(
                        to: folder.appendingPathComponent("runs_DERIVED.csv"), atomically: true, encoding: .utf8)
                    _ = try MobilityNetConverter.phoneRuns(in: folder)
                }
                if let legs {
                    try legs.write(
                        to: folder.appendingPathComponent("legs_DERIVED.csv"), atomically: true, encoding: .utf8)
                    _ = try MobilityNetConverter.legs(in: folder)
                }
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        let runsHeader = "spec,run,phone,role,sensing_config,file"
        #expect(reason(runs: runsHeader + ",run\n").contains("column run twice"))
        let short = reason(runs: runsHeader + "\na,b,c\n")
        #expect(short.contains("runs_DERIVED.csv") && short.contains("line 2"))
        #expect(reason(runs: "spec,run\n").contains("no column phone"))
        let legsHeader = "spec,run,trip_id,leg_id,leg_type,mode,start_ts,end_ts"
        #expect(reason(legs: legsHeader + "\ns,r,t,l,TRAVEL,CAR,10,5\n").contains("line 2"))
        #expect(reason(legs: legsHeader + "\ns,r,t,l,TRAVEL,CAR,soon,5\n").contains("start_ts"))
        #expect(reason(legs: legsHeader + "\ns,r,t,l,TRAVEL,CAR,5,10\n") == "accepted")
    }

    @Test func badEntriesNameTheirField() {
        func reason(_ entries: [String]) -> String {
            do {
                _ = try EmissionConverter.parse(Self.day(entries), fileName: "phone.json")
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        let noConfidence =
            #"{"metadata": {"key": "background/motion_activity", "platform": "android", "write_ts": 1}, "data": {"zzbhB": 0, "write_ts": 1}}"#
        #expect(reason([noConfidence]).contains("phone.json") && reason([noConfidence]).contains("[0].data.zzbhC"))
        let numericLevel =
            #"{"metadata": {"key": "background/motion_activity", "platform": "ios"}, "data": {"automotive": true, "ts": 1, "confidence": 2}}"#
        #expect(reason([numericLevel]).contains("[0].data.confidence"))
        let badFlag =
            #"{"metadata": {"key": "background/motion_activity", "platform": "ios"}, "data": {"automotive": "yes", "ts": 1, "confidence": "high"}}"#
        #expect(reason([badFlag]).contains("[0].data.automotive"))
        let neither =
            #"{"metadata": {"key": "background/motion_activity", "platform": "android"}, "data": {"write_ts": 1}}"#
        #expect(reason([neither]).contains("[0].data") && reason([neither]).contains("zzbhB"))
    }
}
