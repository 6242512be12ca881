// The Aalto TrafficSense phones as devices: a location per row, Google's most probable activity per row, and a report
// of what was derived (the time zone above all) and what the phone's sleeping does to its fixes.

import Foundation
import RoadSaveModel

extension AaltoConverter {
    /// One device per device_id, in device_id order.
    public static func recordings(of contents: Contents, app: String = "recorded") -> [ConvertedRecording] {
        let byDevice = Dictionary(grouping: contents.samples, by: \.deviceID)
        return byDevice.keys.sorted().map { device in
            recording(
                of: byDevice[device]!, deviceID: device, model: contents.models[device],
                legs: contents.legs.filter { $0.deviceID == device }, app: app)
        }
    }

    static func recording(of samples: [Sample], deviceID: Int, model: String?, legs: [Leg], app: String)
        -> ConvertedRecording
    {
        let device = DeviceID(app: app, user: user(deviceID))
        let times = samples.map(\.t)
        let start = times.min()!
        let end = times.max()!
        var records: [SensorRecord] = []
        var derived: [String] = []
        var notes: [String] = []

        let withActivity = samples.filter { !$0.activities.isEmpty }
        let hasClassifier = !withActivity.isEmpty
        records.append(
            SensorRecord.capabilities(of: device, at: start, activity: hasClassifier, pedometer: false))
        derived.append(
            "capabilities: activityAvailable \(hasClassifier) ("
                + (hasClassifier
                    ? "Google activity recognition is in the rows" : "no row of this phone has an activity")
                + "), pedometerAvailable false (the TrafficSense client records no steps)")
        derived.append(
            "times: the files' local times are EEST (UTC+3, Helsinki summer time; SOURCE.txt and the README: "
                + "\"timestamp without timezone\"), written as UTC: 3 h earlier (this phone: "
                + "\(ISO8601.string(fromSeconds: start)) to \(ISO8601.string(fromSeconds: end)))")

        // Activity first, so the reading a fix carries sorts before the fix: the client took it at or before the fix.
        var unknownNames = Set<String>()
        var repeated = 0
        var previous: [Activity]?
        for sample in samples {
            guard let top = sample.activities.first else { continue }
            let kind = GoogleActivityRecognition.activity(forName: top.name)
            if kind == nil { unknownNames.insert(top.name) }
            if sample.activities == previous { repeated += 1 }
            previous = sample.activities
            records.append(
                SensorRecord(
                    device: device, t: sample.t,
                    payload: .activity(
                        ActivityObservation(
                            kind ?? .unknown, GoogleActivityRecognition.confidence(forPercent: Double(top.percent))))))
        }
        if hasClassifier {
            let counts = Dictionary(grouping: withActivity, by: { $0.activities[0].name }).mapValues(\.count)
            derived.append(
                "activity: one per row with an activity (\(withActivity.count): "
                    + counts.keys.sorted().map { "\($0) \(counts[$0]!)" }.joined(separator: ", ")
                    + "), from activity_1 and activity_1_conf, Google's most probable activity, mapped as every "
                    + "converter of Google activity recognition maps it: IN_VEHICLE→automotive, ON_BICYCLE→cycling, "
                    + "ON_FOOT/WALKING→walking, RUNNING→running, STILL→stationary, TILTING/UNKNOWN→unknown; confidence "
                    + "≥ 75 high, ≥ 50 medium, else low. activity_2 and activity_3 (the alternatives Google ranked "
                    + "lower) are not written: a record carries one activity, and a second at the same instant would "
                    + "replace the first")
            notes.append(
                "each row's activity is the client's latest reading, dated at the fix it was stamped on (the "
                    + "reading's own time is not in the file); \(repeated) of \(withActivity.count) rows repeat the "
                    + "previous row's three activities and confidences, each kept: the file cannot tell a reading carried over "
                    + "from a new one that reads the same")
        }
        if !unknownNames.isEmpty {
            notes.append("activity names Google does not define, written as unknown: \(unknownNames.sorted())")
        }

        var coarse = 0
        var withoutAccuracy = 0
        for sample in samples {
            if let accuracy = sample.accuracy {
                if accuracy > 50 { coarse += 1 }
            } else {
                withoutAccuracy += 1
            }
            records.append(
                SensorRecord(
                    device: device, t: sample.t,
                    payload: .location(
                        LocationFix(latitude: sample.lat, longitude: sample.lon, horizontalAccuracy: sample.accuracy))))
        }
        derived.append(
            "location: one per device_data.csv row (\(samples.count)): lat, lng, hacc = accuracy (the fused "
                + "location's radius, metres); no speed or course, which the client did not record (none invented)")
        if coarse > 0 {
            notes.append(
                "\(coarse) of \(samples.count) fixes report an accuracy over 50 m (Wi-Fi or cell positions), which "
                    + "the engines' GPS filter does not use")
        }
        if withoutAccuracy > 0 { notes.append("\(withoutAccuracy) rows without accuracy: no hacc") }

        let sorted = times.sorted()
        let gaps = zip(sorted.dropFirst(), sorted).map { $0 - $1 }.sorted()
        if let longest = gaps.last {
            notes.append(
                "fix interval: median \(decimal(gaps[gaps.count / 2], 1)) s, longest \(decimal(longest / 60, 1)) min; "
                    + "\(gaps.filter { $0 > 200 }.count) gaps over 200 s (the client sleeps after 40 s of STILL and "
                    + "may take ~200 s to wake: README, \"Missing points\")")
        }
        if zip(times.dropFirst(), times).contains(where: { $0 < $1 }) {
            notes.append("rows out of time order: records sorted by time")
        }
        let modes = Dictionary(grouping: legs, by: \.mode).mapValues(\.count)
        notes.append(
            "phone \(deviceID)" + (model.map { " (\($0), device_models.csv)" } ?? "") + ": \(legs.count) legs in "
                + "manual_log.csv"
                + (legs.isEmpty
                    ? ""
                    : " ("
                        + modes.keys.sorted().map { "\(modes[$0]!) \($0)" }
                        .joined(separator: ", ") + ")"))
        notes.append("Aalto TrafficSense public-transport dataset, Aalto University, CC BY 4.0")

        return ConvertedRecording(
            dataset: .aalto, sourceFile: "\(samplesFile) device \(deviceID)", device: device, records: records,
            label: model, derived: derived, notes: notes)
    }
}
