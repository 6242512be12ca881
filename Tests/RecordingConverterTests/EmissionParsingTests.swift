// e-mission day files on small inline samples (run everywhere): the MotionType and confidence mapping, speeds and
// headings that mean "none" on each platform, repeated uploads, and errors that name the file and the field.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("e-mission parsing")
struct EmissionParsingTests {
    static func location(
        _ platform: String, ts: Double?, lat: Double? = 37.39, lon: Double = -122.08, speed: Double,
        heading: Double, accuracy: Double
    ) -> String {
        let tsMember = ts.map { #""ts": \#($0), "# } ?? ""
        let latMember = lat.map { #""latitude": \#($0), "# } ?? ""
        return
            #"{"metadata": {"key": "background/location", "platform": "\#(platform)", "time_zone": "America/Los_Angeles"}, "data": {\#(tsMember)\#(latMember)"longitude": \#(lon), "sensed_speed": \#(speed), "heading": \#(heading), "accuracy": \#(accuracy), "filter": "distance"}}"#
    }

    static func iosActivity(ts: Double, type: Int, level: String) -> String {
        let confidence = ["low": 50, "medium": 75, "high": 100][level] ?? 0
        return
            #"{"metadata": {"key": "background/motion_activity", "platform": "ios"}, "data": {"ts": \#(ts), "type": \#(type), "confidence": \#(confidence), "confidence_level": "\#(level)", "automotive": \#(type == 0 || type == 10)}}"#
    }

    static func androidActivity(ts: Double, type: Int, confidence: Int) -> String {
        #"{"metadata": {"key": "background/motion_activity", "platform": "android"}, "data": {"ts": \#(ts), "type": \#(type), "confidence": \#(confidence)}}"#
    }

    static let t0 = 1_456_175_166.0

    static let iosDay =
        "["
        + [
            location("ios", ts: t0, speed: -1, heading: -1, accuracy: 65),
            location("ios", ts: t0 + 4, speed: 5.5, heading: 180, accuracy: 10),
            location("ios", ts: t0 + 4, speed: 5.5, heading: 180, accuracy: 10), // uploaded twice
            location("ios", ts: t0 + 2, speed: 4.25, heading: 179, accuracy: 10), // a later batch
            location("ios", ts: nil, speed: 1, heading: 1, accuracy: 5),
            iosActivity(ts: t0 + 1, type: 0, level: "high"),
            iosActivity(ts: t0 + 3, type: 10, level: "medium"),
            iosActivity(ts: t0 + 3, type: 10, level: "medium"),
            iosActivity(ts: t0 + 5, type: 9, level: "low"),
            iosActivity(ts: t0 + 6, type: 11, level: "high"),
            iosActivity(ts: t0 + 7, type: 6, level: "high"),
            #"{"metadata": {"key": "statemachine/transition", "platform": "ios"}, "data": {"ts": 1456175170, "transition": 1}}"#,
        ].joined(separator: ",\n") + "]"

    static let androidDay =
        "["
        + [
            location("android", ts: t0, speed: 0, heading: 0, accuracy: 34.5),
            location("android", ts: t0 + 30, speed: 12, heading: 0, accuracy: 5),
            location("android", ts: t0 + 60, speed: 0, heading: 97, accuracy: 20),
            androidActivity(ts: t0 + 1, type: 0, confidence: 75),
            androidActivity(ts: t0 + 2, type: 0, confidence: 74),
            androidActivity(ts: t0 + 3, type: 0, confidence: 49),
            androidActivity(ts: t0 + 4, type: 5, confidence: 100),
            androidActivity(ts: t0 + 5, type: 2, confidence: 50),
            androidActivity(ts: t0 + 6, type: 3, confidence: 92),
            androidActivity(ts: t0 + 7, type: 1, confidence: 62),
            androidActivity(ts: t0 + 8, type: 4, confidence: 33),
        ].joined(separator: ",\n") + "]"

    @Test func motionTypesAndConfidences() {
        let expected: [Int: ActivityType] = [
            0: .automotive, 1: .cycling, 2: .walking, 3: .stationary, 4: .unknown,
            5: .unknown, 7: .walking, 8: .running, 9: .unknown, 10: .automotive,
            11: .unknown,
        ]
        for (type, activity) in expected {
            #expect(EmissionConverter.activity(forType: type) == activity, "type \(type)")
        }
        #expect(EmissionConverter.activity(forType: 6) == nil)

        func android(_ percent: Double) -> ActivityConfidence? {
            EmissionConverter.confidence(
                of: .init(t: 0, type: 0, confidence: percent, confidenceLevel: nil, platform: .android))
        }
        #expect(android(100) == .high && android(75) == .high && android(74) == .medium && android(50) == .medium)
        #expect(android(49) == .low && android(0) == .low)
        func ios(_ confidence: Double?, _ level: String?) -> ActivityConfidence? {
            EmissionConverter.confidence(
                of: .init(t: 0, type: 0, confidence: confidence, confidenceLevel: level, platform: .ios))
        }
        // e-mission writes iOS's three levels as a word and as 50/75/100; 50 is iOS's low, not Android's medium.
        #expect(ios(50, "low") == .low && ios(75, "medium") == .medium && ios(100, "high") == .high)
        #expect(ios(50, nil) == .low && ios(75, nil) == .medium && ios(100, nil) == .high)
        #expect(ios(0, nil) == .low && ios(1, nil) == .medium && ios(2, nil) == .high)
        #expect(ios(60, nil) == nil && ios(nil, nil) == nil)
    }

    @Test func iosDay() throws {
        let recording = try EmissionConverter.convert(
            text: Self.iosDay, fileName: "iphone_2016-02-22.json.gz", app: "app-1")
        #expect(recording.user == "emission-iphone_2016-02-22" && recording.label == "ios")
        let objects = checkRecords(recording.lines, app: "app-1", user: "emission-iphone_2016-02-22")
        #expect(objects[0]["activityAvailable"] as? Bool == true && objects[0]["pedometerAvailable"] as? Bool == false)
        #expect(double(objects[0], "t") == Self.t0)

        // -1 is iOS's "none"; the repeated upload is dropped; the late batch is sorted in.
        let locations = records(objects, kind: "location")
        #expect(locations.map { double($0, "t")! - Self.t0 } == [0, 2, 4])
        #expect(locations.map { double($0, "speed") } == [nil, 4.25, 5.5])
        #expect(locations.map { double($0, "course") } == [nil, 179, 180])
        #expect(locations.map { double($0, "hacc") } == [65, 10, 10])

        let activities = records(objects, kind: "activity")
        #expect(
            activities.map { $0["activity"] as? String } == [
                "automotive", "automotive", "unknown", "unknown", "unknown",
            ])
        #expect(activities.map { $0["confidence"] as? String } == ["high", "medium", "low", "high", "high"])

        let report = recording.report
        #expect(report.notes.contains { $0.contains("dropped 1 locations and 1 activity readings identical") })
        #expect(report.notes.contains { $0.contains("skipped 1 locations without ts") })
        #expect(
            report.notes.contains { $0.contains("1 locations and 0 activity readings earlier than the one before") })
        #expect(
            report.notes.contains { $0.contains("MotionType codes e-mission does not define, written as unknown: [6]") }
        )
        #expect(report.notes.contains { $0.contains("statemachine/transition 1") })
        #expect(report.notes.contains { $0.contains("1 of 3 fixes report an accuracy over 50 m") })
        #expect(
            report.derived.contains {
                $0.contains("STOPPED_WHILE_IN_VEHICLE→automotive") && $0.contains("AIR_OR_HSR→unknown")
            })
    }

    @Test func androidDay() throws {
        let recording = try EmissionConverter.convert(text: Self.androidDay, fileName: "shankari_2015-aug-27.json")
        #expect(recording.user == "emission-shankari_2015-aug-27" && recording.label == "android")
        let objects = checkRecords(recording.lines, app: "recorded", user: "emission-shankari_2015-aug-27")

        // Android's 0 is "none" for a speed, and for a heading only when there is no speed with it.
        let locations = records(objects, kind: "location")
        #expect(locations.map { double($0, "speed") } == [nil, 12, nil])
        #expect(locations.map { double($0, "course") } == [nil, 0, 97])
        #expect(locations.map { double($0, "hacc") } == [34.5, 5, 20])

        let activities = records(objects, kind: "activity")
        #expect(
            activities.map { $0["activity"] as? String }
                == ["automotive", "automotive", "automotive", "unknown", "walking", "stationary", "cycling", "unknown"])
        #expect(
            activities.map { $0["confidence"] as? String }
                == ["high", "medium", "low", "high", "medium", "high", "medium", "low"])
        #expect(recording.report.derived.contains { $0.contains("≥ 75 high, ≥ 50 medium, else low") })
    }

    static func error(_ text: String, fileName: String = "day.json") -> String {
        do {
            _ = try EmissionConverter.convert(text: text, fileName: fileName)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [
        ("[{\"metadata\": ", "day.json", "not valid JSON at line 1, column 15"),
        (
            #"{"metadata": {"key": "analysis/cleaned_trip"}, "data": {}}"#, "day.ground_truth.json",
            "the top level: expected a list of entries {\"metadata\", \"data\"}, found an object (a .ground_truth file"
        ),
        (#"[{"data": {"ts": 1}}]"#, "day.json", "field [0].metadata is missing"),
        (
            #"[{"metadata": {"key": "background/location", "platform": "windows"}, "data": {}}]"#, "day.json",
            #"field [0].metadata.platform: expected ios or android, found "windows""#
        ),
        (
            #"[{"metadata": {"key": "background/location", "platform": "ios"}, "data": {"ts": 1, "latitude": "north", "longitude": 1}}]"#,
            "day.json", "field [0].data.latitude: expected a number, found a string"
        ),
        (
            #"[{"metadata": {"key": "background/location", "platform": "ios"}, "data": {"ts": 1, "latitude": 95, "longitude": 1}}]"#,
            "day.json", "field [0].data.latitude: 95.0 is outside -90…90"
        ),
        (
            #"[{"metadata": {"key": "background/motion_activity", "platform": "ios"}, "data": {"ts": 1, "type": 0, "confidence_level": "sure"}}]"#,
            "day.json", "field [0].data.confidence_level: expected low, medium or high"
        ),
        (
            #"[{"metadata": {"key": "background/motion_activity", "platform": "android"}, "data": {"ts": 1, "type": 0}}]"#,
            "day.json", "field [0].data.confidence is missing"
        ),
        (
            #"[{"metadata": {"key": "background/motion_activity", "platform": "android"}, "data": {"ts": 1, "type": 0.5, "confidence": 9}}]"#,
            "day.json", "field [0].data.type: 0.5 is not a MotionType code"
        ),
        (
            #"[{"metadata": {"key": "background/battery", "platform": "android"}, "data": {"ts": 1}}]"#, "day.json",
            "no background/location or background/motion_activity entries (1 entries)"
        ),
    ])
    func badInputNamesTheFileAndTheField(text: String, fileName: String, message: String) {
        let description = Self.error(text, fileName: fileName)
        #expect(description.hasPrefix("\(fileName) is not in the expected format: "), "\(description)")
        #expect(description.contains(message), "\(description)")
    }
}
