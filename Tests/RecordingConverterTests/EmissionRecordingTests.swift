// Every e-mission day of ../shared/data converted, checked against the day read independently (Foundation's
// JSONSerialization): a location per background/location reading, an activity per motion_activity reading (each
// reading uploaded twice counted once), with the documented mapping.

import Foundation
import Recordings
import Testing

@Suite("e-mission recordings", .enabled(if: SharedData.has(.emission), datasetAbsent(.emission)))
struct EmissionRecordingTests {
    static let folder = "emission-activity-traces"

    /// The day files (the .ground_truth files beside them are the pipeline's expected output, not a trace).
    static var days: [URL] {
        SharedData.files(in: folder, suffix: ".json.gz").filter { !$0.lastPathComponent.contains("ground_truth") }
    }

    /// Readings of one day read independently: locations and activities, each distinct reading once.
    struct Reference {
        var platform = ""
        var locations: [[String: Double]] = []
        /// (ts in ms, MotionType, confidence, confidence_level)
        var activities: [(ms: Int64, type: Int, confidence: Double, level: String?)] = []
    }

    static func reference(_ file: URL) throws -> Reference {
        let entries = try #require(
            try JSONSerialization.jsonObject(with: try RecordingFile.data(of: file)) as? [[String: Any]])
        var reference = Reference()
        var seen = Set<String>()
        for entry in entries {
            let metadata = entry["metadata"] as? [String: Any] ?? [:]
            let data = entry["data"] as? [String: Any] ?? [:]
            reference.platform = metadata["platform"] as? String ?? reference.platform
            func number(_ key: String) -> Double? { (data[key] as? NSNumber)?.doubleValue }
            switch metadata["key"] as? String {
            case "background/location":
                guard let ts = number("ts"), let lat = number("latitude"), let lon = number("longitude") else {
                    continue
                }
                var reading = ["ts": ts, "lat": lat, "lon": lon]
                for key in ["sensed_speed", "heading", "accuracy"] { reading[key] = number(key) }
                guard seen.insert("location \(reading.sorted { $0.key < $1.key })").inserted else { continue }
                reference.locations.append(reading)
            case "background/motion_activity":
                let reading = (
                    ms: Int64((number("ts")! * 1000).rounded()), type: Int(number("type")!),
                    confidence: number("confidence")!, level: data["confidence_level"] as? String
                )
                guard
                    seen.insert(
                        "activity \(number("ts")!) \(reading.type) \(reading.confidence) \(reading.level ?? "")"
                    ).inserted
                else { continue }
                reference.activities.append(reading)
            default:
                continue
            }
        }
        return reference
    }

    /// The activity and confidence the converter must write for a reading (docs/real-data.md "Real data", `--help`).
    static func expected(_ reading: (ms: Int64, type: Int, confidence: Double, level: String?), platform: String)
        -> String
    {
        let activity =
            [
                0: "automotive", 1: "cycling", 2: "walking", 3: "stationary", 7: "walking", 8: "running",
                10: "automotive",
            ][reading.type] ?? "unknown"
        let confidence =
            platform == "ios"
            ? reading.level!
            : reading.confidence >= 75 ? "high" : reading.confidence >= 50 ? "medium" : "low"
        return "\(reading.ms) \(activity) \(confidence)"
    }

    @Test func everyDayConvertsWithEachReadingOnce() throws {
        let days = Self.days
        #expect(
            days.map(\.lastPathComponent) == [
                "iphone_2015-11-06.json.gz", "iphone_2016-02-22.json.gz",
                "iphone_3_2016-02-22.json.gz", "shankari_2015-aug-27.json.gz",
                "shankari_2016-independence_day.json.gz",
            ])
        // Counted by hand from the files (background/location, background/motion_activity, readings uploaded twice
        // dropped), to catch a reference reader that goes wrong the same way as the converter.
        let counts: [String: (locations: Int, activities: Int)] = [
            "iphone_2015-11-06": (473, 594), "iphone_2016-02-22": (248, 569), "iphone_3_2016-02-22": (268, 1166),
            "shankari_2015-aug-27": (548, 580), "shankari_2016-independence_day": (793, 479),
        ]
        for file in days {
            let day = file.lastPathComponent.replacingOccurrences(of: ".json.gz", with: "")
            let recording = try RecordingConverter.emission(file)
            let objects = checkRecords(recording.lines, app: "recorded", user: "emission-\(day)")
            #expect(
                objects[0]["activityAvailable"] as? Bool == true && objects[0]["pedometerAvailable"] as? Bool == false)
            let reference = try Self.reference(file)
            #expect(recording.label == reference.platform)

            let locations = records(objects, kind: "location")
            let activities = records(objects, kind: "activity")
            #expect(locations.count == reference.locations.count, "\(day)")
            #expect(activities.count == reference.activities.count, "\(day)")
            #expect(locations.count == counts[day]?.locations && activities.count == counts[day]?.activities, "\(day)")

            // Activities: the same readings with the documented mapping (compared as sorted lists: the records are
            // in time order, the file in upload order).
            let written = activities.map {
                "\(Int64((double($0, "t")! * 1000).rounded())) \($0["activity"] as! String) \($0["confidence"] as! String)"
            }
            #expect(
                written.sorted()
                    == reference.activities.map { Self.expected($0, platform: reference.platform) }.sorted(),
                "\(day)")

            // Locations: what means "none" on the platform is unknown, the rest as recorded (to the record's 0.01 m/s
            // and 0.1 m, half a unit either way).
            let speeds = locations.compactMap { double($0, "speed") }
            let recordedSpeeds = reference.locations.compactMap(\.["sensed_speed"])
                .filter { reference.platform == "ios" ? $0 >= 0 : $0 > 0 }
            #expect(speeds.count == recordedSpeeds.count, "\(day)")
            #expect(zip(speeds.sorted(), recordedSpeeds.sorted()).allSatisfy { abs($0 - $1) <= 0.0051 }, "\(day)")
            #expect(
                locations.map { double($0, "hacc")! }.sorted().elementsEqual(
                    reference.locations.map { $0["accuracy"]! }.sorted()
                ) { abs($0 - $1) <= 0.051 }, "\(day)")
        }
    }

    @Test func theDaysThatHoldMotionOnlyInTheirPositions() throws {
        // shankari_2015-aug-27: Android stored a 0 speed for 554 of 555 fixes while the phone travelled; all of them
        // are written without a speed, so the engine reads motion from the positions.
        let android = try RecordingConverter.emission(
            try #require(sharedFile("\(Self.folder)/shankari_2015-aug-27.json.gz")))
        #expect(android.report.derived.contains { $0.contains("(547 fixes without a speed)") })
        // iphone_2015-11-06: every fix is a coarse one (65 m to 15 km), so the GPS filter will use none of them.
        let coarse = try RecordingConverter.emission(
            try #require(sharedFile("\(Self.folder)/iphone_2015-11-06.json.gz")))
        #expect(coarse.report.notes.contains { $0.contains("473 of 473 fixes report an accuracy over 50 m") })
    }

    @Test func aGroundTruthFileIsRefusedWithAReason() throws {
        let file = try #require(sharedFile("\(Self.folder)/iphone_2016-02-22.ground_truth.json.gz"))
        let error = #expect(throws: RecordingError.self) { try RecordingConverter.emission(file) }
        #expect(
            error.map { "\($0)".contains("a .ground_truth file holds the e-mission pipeline's expected trips") } == true
        )
    }
}
