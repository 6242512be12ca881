// From a parsed e-mission trace to records: the capabilities, one activity per motion reading, one location per fix,
// and the report of what was taken, derived and dropped.

import Foundation
import RoadSaveModel

extension EmissionConverter {
    /// The records of a parsed trace (a day file, or the files of one MobilityNet phone and run merged), with the
    /// report of what was taken and derived.
    static func recording(
        of day: Day, device: DeviceID, dataset: Dataset, sourceFile fileName: String, label: String?,
        notes extraNotes: [String] = []
    ) throws -> ConvertedRecording {
        let times = day.fixes.map(\.t) + day.activities.map(\.t)
        guard let start = times.min(), let end = times.max() else {
            throw RecordingError.malformed(
                file: fileName,
                reason: "no background/location or background/motion_activity "
                    + "entries (\(day.entryCount) entries)")
        }
        var records: [SensorRecord] = []
        var derived: [String] = []
        var notes: [String] = []

        let hasClassifier = !day.activities.isEmpty
        records.append(
            SensorRecord.capabilities(of: device, at: start, activity: hasClassifier, pedometer: false))
        derived.append(
            "capabilities: activityAvailable \(hasClassifier) ("
                + (hasClassifier
                    ? "the phone's own activity recognition is in the trace"
                    : "the trace has no background/motion_activity")
                + "), pedometerAvailable false (e-mission records no steps)")

        // Activity first, so a report sorts before a fix taken at the same instant.
        var typeCounts: [Int: Int] = [:]
        var undefinedTypes = Set<Int>()
        for reading in day.activities {
            typeCounts[reading.type, default: 0] += 1
            let kind = activity(forType: reading.type) ?? .unknown
            if activity(forType: reading.type) == nil { undefinedTypes.insert(reading.type) }
            // parse() refused readings without a confidence known here.
            let level = confidence(of: reading) ?? .low
            records.append(
                SensorRecord(device: device, t: reading.t, payload: .activity(ActivityObservation(kind, level))))
        }
        if hasClassifier {
            let counts = typeCounts.keys.sorted().map { "\(typeNames[$0] ?? "type \($0)") \(typeCounts[$0]!)" }
            derived.append(
                "activity: one per background/motion_activity reading (\(day.activities.count): "
                    + counts.joined(separator: ", ") + "), mapped IN_VEHICLE→automotive, BICYCLING→cycling, "
                    + "ON_FOOT/WALKING→walking, RUNNING→running, STILL→stationary, UNKNOWN/TILTING/NONE→unknown, "
                    + "STOPPED_WHILE_IN_VEHICLE→automotive (iOS saying automotive and stationary at once: a car standing "
                    + "in traffic), AIR_OR_HSR→unknown (a pipeline inference for flights and high-speed rail, not a car)"
            )
            derived.append(
                "confidence: Android's percentage ≥ 75 high, ≥ 50 medium, else low (as for TMD's Google "
                    + "activity recognition); iOS's own level (confidence_level low/medium/high, written by e-mission as "
                    + "50/75/100)")
        }
        if !undefinedTypes.isEmpty {
            notes.append("MotionType codes e-mission does not define, written as unknown: \(undefinedTypes.sorted())")
        }

        var speedsUnknown = 0
        var coarse = 0
        for fix in day.fixes {
            let (speed, course) = motion(of: fix)
            if speed == nil { speedsUnknown += 1 }
            if let accuracy = fix.accuracy, accuracy > 50 { coarse += 1 }
            records.append(
                SensorRecord(
                    device: device, t: fix.t,
                    payload: .location(
                        LocationFix(
                            latitude: fix.lat, longitude: fix.lon, speed: speed, course: course,
                            horizontalAccuracy: fix.accuracy))))
        }
        derived.append(
            "location: one per background/location entry with a position and ts (\(day.fixes.count)): "
                + "lat/lon and t (ts) as recorded, hacc = accuracy (metres), speed = sensed_speed (m/s) and course = "
                + "heading, except iOS's -1 and Android's 0, which mean the phone had none (Android's Location reports 0.0 "
                + "for a missing speed or bearing): written as unknown (\(speedsUnknown) fixes without a speed)")
        if let filtered = day.otherKeys["background/filtered_location"] {
            notes.append(
                "background/filtered_location (\(filtered)) not used: it is e-mission's filtered copy of "
                    + "background/location")
        }
        if coarse > 0 {
            notes.append(
                "\(coarse) of \(day.fixes.count) fixes report an accuracy over 50 m (cell or Wi-Fi positions), "
                    + "which the engines' GPS filter does not use")
        }
        if day.repeatedFixes + day.repeatedActivities > 0 {
            notes.append(
                "dropped \(day.repeatedFixes) locations and \(day.repeatedActivities) activity readings identical "
                    + "to one before (the same reading uploaded twice)")
        }
        if day.fixesWithoutTime + day.fixesWithoutPosition > 0 {
            notes.append(
                "skipped \(day.fixesWithoutTime) locations without ts and \(day.fixesWithoutPosition) without a position"
            )
        }
        if day.outOfOrderFixes + day.outOfOrderActivities > 0 {
            notes.append(
                "\(day.outOfOrderFixes) locations and \(day.outOfOrderActivities) activity readings earlier than "
                    + "the one before (uploaded in batches): records sorted by time")
        }
        let fixTimes = day.fixes.map(\.t).sorted()
        let gaps = zip(fixTimes.dropFirst(), fixTimes).map { $0 - $1 }.sorted()
        if let longest = gaps.last {
            notes.append(
                "location interval: median \(decimal(gaps[gaps.count / 2], 1)) s, longest "
                    + "\(decimal(longest / 60, 1)) min")
        }
        let ignored = day.otherKeys.keys.sorted().map { "\($0) \(day.otherKeys[$0]!)" }
        if !ignored.isEmpty {
            notes.append("ignored entries the records do not carry: " + ignored.joined(separator: ", "))
        }
        notes.append(
            "day: \(day.platform?.rawValue ?? "unknown platform"), \(day.entryCount) entries from "
                + "\(ISO8601.string(fromSeconds: start)) to \(ISO8601.string(fromSeconds: end)) "
                + "(\(decimal((end - start) / 3600, 1)) h" + (day.timeZone.map { ", phone in \($0)" } ?? "") + ")")

        return ConvertedRecording(
            dataset: dataset, sourceFile: fileName, device: device, records: records,
            label: label, derived: derived, notes: extraNotes + notes)
    }
}
