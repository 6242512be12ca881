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
        // the latest report rather than ending the trip at a red light (docs/detection.md "Trips").
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

    /// Android: Google's percentage, with the thresholds of every converter of the same API
    /// (`GoogleActivityRecognition`: ≥ 75 high, ≥ 50 medium, else low). iOS: CMMotionActivity's own three levels, which e-mission writes as `confidence_level` and
    /// as 50/75/100 (raw 0/1/2 is read too). Nil when an iOS reading has neither in a form known here.
    public static func confidence(of reading: MotionReading) -> ActivityConfidence? {
        switch reading.platform {
        case .android:
            guard let percent = reading.confidence else { return nil }
            return GoogleActivityRecognition.confidence(forPercent: percent)
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
