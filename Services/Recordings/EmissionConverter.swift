// e-mission phone traces (whole days from the e-mission server's test fixtures) → records.
// A day file is a JSON list of entries `{"metadata": {"key", "platform", …}, "data": {…}}` as the e-mission app uploaded
// them: `background/location` (latitude, longitude, ts, accuracy, sensed_speed, heading), `background/motion_activity`
// (the phone's own activity recognition as an e-mission MotionType with a confidence), and entries the records have no
// field for (e-mission's filtered copy of the locations, its state machine, the battery).

import Foundation
import RoadSaveModel

public enum EmissionConverter: RecordingBytesConverter {
    public enum Platform: String, Sendable {
        case ios
        case android
    }

    public struct Fix: Sendable, Equatable, Hashable {
        public var t: Double
        public var lat: Double
        public var lon: Double
        /// sensed_speed as recorded (m/s; iOS writes -1 when it has none, Android 0).
        public var sensedSpeed: Double?
        /// heading as recorded (degrees; iOS -1 when it has none, Android 0).
        public var heading: Double?
        /// accuracy as recorded (metres).
        public var accuracy: Double?
        public var platform: Platform
    }

    public struct MotionReading: Sendable, Equatable, Hashable {
        public var t: Double
        /// The e-mission MotionType.
        public var type: Int
        /// Android: a percentage 0–100; iOS: 50/75/100 for CMMotionActivity's low/medium/high.
        public var confidence: Double?
        /// iOS only: e-mission's own word for the confidence (low, medium, high).
        public var confidenceLevel: String?
        public var platform: Platform

        public init(t: Double, type: Int, confidence: Double?, confidenceLevel: String?, platform: Platform) {
            self.t = t
            self.type = type
            self.confidence = confidence
            self.confidenceLevel = confidenceLevel
            self.platform = platform
        }
    }

    public struct Day: Sendable, Equatable {
        /// Readings in file order, each once (see `repeatedFixes`).
        public var fixes: [Fix] = []
        public var activities: [MotionReading] = []
        public var entryCount = 0
        /// Entries with another metadata.key, by key.
        public var otherKeys: [String: Int] = [:]
        /// Readings identical to one met before (the same reading uploaded twice): dropped.
        public var repeatedFixes = 0
        public var repeatedActivities = 0
        /// Location entries without a time or a position: skipped.
        public var fixesWithoutTime = 0
        public var fixesWithoutPosition = 0
        /// Readings earlier than the reading of their kind before (iOS uploads in batches): sorted by time.
        public var outOfOrderFixes = 0
        public var outOfOrderActivities = 0
        /// The platform most entries name (metadata.platform).
        public var platform: Platform?
        /// metadata.time_zone of the first entry that has one.
        public var timeZone: String?
    }

    /// e-mission's MotionTypes (emission/core/wrapper/motionactivity.py) as the records' activities. Codes it does not
    /// define give nil (written as unknown, with a note).
    public static func activity(forType type: Int) -> ActivityType? {
        switch type {
        case 0: return .automotive // IN_VEHICLE
        case 1: return .cycling // BICYCLING
        case 2, 7: return .walking // ON_FOOT, WALKING
        case 8: return .running // RUNNING
        case 3: return .stationary // STILL
        case 4, 5, 9: return .unknown // UNKNOWN, TILTING, NONE (iOS: every flag false)
        // STOPPED_WHILE_IN_VEHICLE is iOS saying automotive and stationary at once: a car standing at lights or in a
        // queue. The phone still says it is in a vehicle, which is what keeps the engine's stop delay running from
        // the latest report rather than ending the trip at a red light (README "Trips").
        case 10: return .automotive
        // AIR_OR_HSR is not something a phone reports: e-mission's pipeline infers it for flights and high-speed
        // rail. Neither is a car, so it is not turned into the in-vehicle signal that starts trips.
        case 11: return .unknown
        default: return nil
        }
    }

    /// e-mission's names for its MotionTypes, for the report.
    static let typeNames: [Int: String] = [
        0: "IN_VEHICLE", 1: "BICYCLING", 2: "ON_FOOT", 3: "STILL", 4: "UNKNOWN", 5: "TILTING", 7: "WALKING",
        8: "RUNNING", 9: "NONE", 10: "STOPPED_WHILE_IN_VEHICLE", 11: "AIR_OR_HSR",
    ]

    /// Android: Google's percentage, with the thresholds the TMD converter uses for the same API (≥ 75 high, ≥ 50
    /// medium, else low). iOS: CMMotionActivity's own three levels, which e-mission writes as `confidence_level` and
    /// as 50/75/100 (raw 0/1/2 is read too). Nil when an iOS reading has neither in a form known here.
    public static func confidence(of reading: MotionReading) -> ActivityConfidence? {
        switch reading.platform {
        case .android:
            guard let percent = reading.confidence else { return nil }
            return percent >= 75 ? .high : percent >= 50 ? .medium : .low
        case .ios:
            if let level = reading.confidenceLevel { return ActivityConfidence(rawValue: level.lowercased()) }
            switch reading.confidence {
            case 0, 50: return .low
            case 1, 75: return .medium
            case 2, 100: return .high
            default: return nil
            }
        }
    }

    /// Reads one day. An entry that is not an object, a value of the wrong type, a position out of range or an unknown
    /// platform is an error naming the field; a location without a time or a position is skipped and counted.
    public static func parse(_ bytes: [UInt8], fileName: String) throws -> Day {
        let root = try JSONField.document(bytes, file: fileName)
        guard case .array = root.value else {
            var reason = "expected a list of entries {\"metadata\", \"data\"}, found \(root.value.typeName)"
            if root.value["metadata"] != nil || fileName.contains("ground_truth") {
                reason += " (a .ground_truth file holds the e-mission pipeline's expected trips, not the phone's trace)"
            }
            throw root.mismatch(reason)
        }
        var day = Day()
        var seenFixes = Set<Fix>()
        var seenActivities = Set<MotionReading>()
        var platformCounts: [Platform: Int] = [:]
        var lastFixT = -Double.infinity
        var lastActivityT = -Double.infinity
        for entry in try root.elements() {
            day.entryCount += 1
            let metadata = try entry.required("metadata")
            let key = try metadata.required("key").string()
            if day.timeZone == nil { day.timeZone = try metadata.string("time_zone") }
            guard key == "background/location" || key == "background/motion_activity" else {
                day.otherKeys[key, default: 0] += 1
                continue
            }
            let platformField = try metadata.required("platform")
            let platformName = try platformField.string()
            guard let platform = Platform(rawValue: platformName.lowercased()) else {
                throw platformField.mismatch("expected ios or android, found \"\(platformName)\"")
            }
            platformCounts[platform, default: 0] += 1
            let data = try entry.required("data")

            if key == "background/location" {
                guard let t = try data.number("ts") else {
                    day.fixesWithoutTime += 1
                    continue
                }
                var lat = try data.number("latitude")
                var lon = try data.number("longitude")
                if lat == nil || lon == nil, let coordinates = try data.member("loc")?.member("coordinates") {
                    // The GeoJSON copy of the position, [longitude, latitude].
                    let position = try coordinates.elements()
                    if position.count >= 2 {
                        lon = try position[0].number()
                        lat = try position[1].number()
                    }
                }
                guard let lat, let lon else {
                    day.fixesWithoutPosition += 1
                    continue
                }
                guard (-90...90).contains(lat) else {
                    throw try data.required("latitude").mismatch("\(lat) is outside -90…90")
                }
                guard (-180...180).contains(lon) else {
                    throw try data.required("longitude").mismatch("\(lon) is outside -180…180")
                }
                // The course: `heading` in the e-mission days, `bearing` in the MobilityNet dumps.
                let heading = try data.number("heading") ?? data.number("bearing")
                let fix = Fix(
                    t: t, lat: lat, lon: lon, sensedSpeed: try data.number("sensed_speed"),
                    heading: heading, accuracy: try data.number("accuracy"), platform: platform)
                guard seenFixes.insert(fix).inserted else {
                    day.repeatedFixes += 1
                    continue
                }
                if t < lastFixT { day.outOfOrderFixes += 1 }
                lastFixT = t
                day.fixes.append(fix)
            } else {
                let fields = try activityFields(data, platform: platform)
                let t = fields.t
                let reading = MotionReading(
                    t: t, type: fields.type, confidence: fields.confidence,
                    confidenceLevel: fields.confidenceLevel, platform: platform)
                guard confidence(of: reading) != nil else {
                    // The field to blame: the iOS level if there is one, else the number, else the missing number.
                    if platform == .ios, let level = try data.member("confidence_level") {
                        throw level.mismatch("expected low, medium or high")
                    }
                    throw try data.required("confidence").mismatch(
                        platform == .ios
                            ? "an iOS confidence without confidence_level is 50, 75 or 100 (or 0, 1, 2)"
                            : "expected a percentage")
                }
                guard seenActivities.insert(reading).inserted else {
                    day.repeatedActivities += 1
                    continue
                }
                if t < lastActivityT { day.outOfOrderActivities += 1 }
                lastActivityT = t
                day.activities.append(reading)
            }
        }
        day.platform = platformCounts.max { $0.value < $1.value }?.key
        return day
    }

    /// An activity entry's time, MotionType and confidence, in the three shapes the app wrote: `{ts, type,
    /// confidence[, confidence_level]}` (the e-mission days); on Android in the MobilityNet dumps Google's
    /// DetectedActivity with its obfuscated member names, `{zzbhB: type, zzbhC: percent}`, timed by `write_ts` (the
    /// app writes each detection as it comes); on iOS there the CMMotionActivity flags `{automotive, cycling,
    /// running, walking, stationary, unknown, confidence: "high"}`.
    static func activityFields(_ data: JSONField, platform: Platform) throws
        -> (t: Double, type: Int, confidence: Double?, confidenceLevel: String?)
    {
        func code(_ field: JSONField) throws -> Int {
            let value = try field.number()
            guard value == value.rounded(), abs(value) < 1000 else {
                throw field.mismatch("\(value) is not a MotionType code")
            }
            return Int(value)
        }
        if let type = try data.member("type") {
            return (
                try data.required("ts").number(), try code(type), try data.number("confidence"),
                try data.string("confidence_level")
            )
        }
        if let type = try data.member("zzbhB") {
            let t = try data.number("ts") ?? data.required("write_ts").number()
            return (t, try code(type), try data.required("zzbhC").number(), nil)
        }
        guard try data.member("automotive") != nil else {
            throw RecordingError.malformed(
                file: data.file,
                reason: "\(data.name): an activity with neither type, "
                    + "zzbhB (Android's DetectedActivity) nor the CMMotionActivity flags (automotive, walking, …)")
        }
        func flag(_ name: String) throws -> Bool {
            guard let field = try data.member(name) else { return false }
            guard case .bool(let value) = field.value else { throw field.mismatch("expected true or false") }
            return value
        }
        // As e-mission's iOS app maps the flags to a MotionType (automotive with stationary: stopped in a vehicle).
        let type: Int
        if try flag("automotive") {
            type = try flag("stationary") ? 10 : 0
        } else if try flag("cycling") {
            type = 1
        } else if try flag("running") {
            type = 8
        } else if try flag("walking") {
            type = 7
        } else if try flag("stationary") {
            type = 3
        } else if try flag("unknown") {
            type = 4
        } else {
            type = 9
        }
        let level = try data.required("confidence")
        guard case .string(let text) = level.value else {
            throw level.mismatch("expected low, medium or high, found \(level.value.typeName)")
        }
        return (try data.required("ts").number(), type, nil, text)
    }

    /// Speed and course of a fix as the record gives them (nil = unknown).
    static func motion(of fix: Fix) -> (speed: Double?, course: Double?) {
        switch fix.platform {
        case .ios:
            // Core Location's -1 is "no value", as in the record.
            let speed = fix.sensedSpeed.flatMap { $0 < 0 ? nil : $0 }
            let course = fix.heading.flatMap { (0...360).contains($0) ? $0 : nil }
            return (speed, course)
        case .android:
            // Android's Location gives 0.0 for a speed and a bearing it does not have, and e-mission stores that 0:
            // on shankari_2015-aug-27, 554 of 555 fixes say 0 m/s while the positions move at up to 26 m/s. A zero
            // is therefore unknown; a phone that really stood still loses nothing, because the engine derives a
            // speed from the displacement of fixes without one (jitter reads as zero).
            let speed = fix.sensedSpeed.flatMap { $0 > 0 ? $0 : nil }
            let course = fix.heading.flatMap { heading -> Double? in
                guard (0...360).contains(heading) else { return nil }
                return heading == 0 && speed == nil ? nil : heading
            }
            return (speed, course)
        }
    }

    public static func convert(bytes: [UInt8], fileName: String, app: String = "recorded", user: String? = nil) throws
        -> ConvertedRecording
    {
        let day = try parse(bytes, fileName: fileName)
        let device = DeviceID(app: app, user: user ?? userID(from: "emission-" + fileStem(fileName)))
        return try recording(
            of: day, device: device, dataset: .emission, sourceFile: fileName, label: day.platform?.rawValue)
    }

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
            SensorRecord(
                device: device, t: start,
                payload: .capabilities(
                    DeviceCapabilities(activityAvailable: hasClassifier, pedometerAvailable: false))))
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

extension EmissionConverter.Day {
    /// This trace and `other` (another file of the same phone and time: its locations, its activity) as one: readings
    /// in time order, counts added.
    func merged(with other: Self) -> Self {
        var day = self
        day.fixes = (fixes + other.fixes).sorted { $0.t < $1.t }
        day.activities = (activities + other.activities).sorted { $0.t < $1.t }
        day.entryCount += other.entryCount
        day.otherKeys.merge(other.otherKeys, uniquingKeysWith: +)
        day.repeatedFixes += other.repeatedFixes
        day.repeatedActivities += other.repeatedActivities
        day.fixesWithoutTime += other.fixesWithoutTime
        day.fixesWithoutPosition += other.fixesWithoutPosition
        day.outOfOrderFixes += other.outOfOrderFixes
        day.outOfOrderActivities += other.outOfOrderActivities
        day.platform = platform ?? other.platform
        day.timeZone = timeZone ?? other.timeZone
        return day
    }
}
