// US-TransportationMode (TMD) raw Android sensor logs → records.
// A log line is `time_ms_since_start,sensor_name,values…`; the start time (Unix ms) and the label are in the file name
// `sensorfile_<user>_<Mode>_<startms>.csv.gz`. The logs are event-driven and sparse: GPS speed arrives every few tens of
// seconds with no coordinates, Google activity recognition a few times a file, the accelerometer at a few Hz.

import Foundation
import GatewayKit
import Logging
import RoadSaveModel

public enum TMDConverter {
    /// The readings of one log that the converter uses.
    public struct Log: Sendable, Equatable {
        public struct Speed: Sendable, Equatable {
            public var ms: Int64
            public var speed: Double
            public var accuracy: Double
        }
        public struct Activity: Sendable, Equatable {
            public var ms: Int64
            public var label: String
            public var percent: Int
        }
        public struct StepCount: Sendable, Equatable {
            public var ms: Int64
            public var steps: Int
        }
        public struct Acceleration: Sendable, Equatable {
            public var ms: Int64
            public var x, y, z: Double
        }

        public var speeds: [Speed] = []
        public var activities: [Activity] = []
        public var stepCounts: [StepCount] = []
        /// m/s², as logged.
        public var accelerations: [Acceleration] = []
        /// Lines whose time is negative or not an integer (the TMD authors' own cleaning drops or repairs these).
        public var badTimeLines = 0
        /// Lines of a used sensor whose values cannot be read.
        public var malformedLines = 0
        /// Lines whose time is earlier than the line before (the log is written by several threads).
        public var outOfOrderLines = 0
        /// Lines of sensors the records have no field for, by sensor name (empty name = the logger's status lines).
        public var ignoredSensors: [String: Int] = [:]
        /// Time of the last line read, ms from the start.
        public var lastMs: Int64 = 0
    }

    /// The recording's identity from its file name.
    public struct FileInfo: Sendable, Equatable {
        public var person: String
        /// Car, Bus, Train, Still or Walking.
        public var label: String
        /// Unix ms of the log's time 0.
        public var startMs: Int64
    }

    /// `sensorfile_<person>_<Mode>_<startms>.csv[.gz]`; the person's name may itself contain '_'.
    public static func fileInfo(_ fileName: String) -> FileInfo? {
        let stem = fileStem(fileName)
        guard stem.hasPrefix("sensorfile_") else { return nil }
        let parts = stem.dropFirst("sensorfile_".count).split(separator: "_")
        guard parts.count >= 3, let start = Int64(parts[parts.count - 1]), start > 0 else { return nil }
        return FileInfo(
            person: parts[0..<(parts.count - 2)].joined(separator: "_"), label: String(parts[parts.count - 2]),
            startMs: start)
    }

    public static func parse(_ text: String) -> Log {
        var log = Log()
        var previousMs: Int64 = -1
        for line in textLines(text) {
            let parts = fields(line)
            guard parts.count >= 2 else {
                log.malformedLines += 1
                continue
            }
            guard let ms = Int64(parts[0]), ms >= 0 else {
                log.badTimeLines += 1
                continue
            }
            if ms < previousMs { log.outOfOrderLines += 1 }
            previousMs = ms
            log.lastMs = max(log.lastMs, ms)
            let values = parts.dropFirst(2)
            switch parts[1] {
            case "speed":
                guard values.count >= 2, let speed = Double(values[values.startIndex]),
                    let accuracy = Double(values[values.startIndex + 1]), speed.isFinite, accuracy.isFinite
                else {
                    log.malformedLines += 1
                    continue
                }
                log.speeds.append(.init(ms: ms, speed: speed, accuracy: accuracy))
            case "activityrecognition":
                guard values.count >= 2,
                    let percent = Int(values[values.startIndex + 1])
                        ?? Double(values[values.startIndex + 1]).map({ Int($0) })
                else {
                    log.malformedLines += 1
                    continue
                }
                log.activities.append(.init(ms: ms, label: String(values[values.startIndex]), percent: percent))
            case "android.sensor.step_counter":
                guard let value = values.first.flatMap({ Double($0) }), value.isFinite, value >= 0
                else {
                    log.malformedLines += 1
                    continue
                }
                log.stepCounts.append(.init(ms: ms, steps: Int(value)))
            case "android.sensor.accelerometer":
                let numbers = values.prefix(3).compactMap { Double($0) }
                guard numbers.count == 3, numbers.allSatisfy(\.isFinite) else {
                    log.malformedLines += 1
                    continue
                }
                log.accelerations.append(.init(ms: ms, x: numbers[0], y: numbers[1], z: numbers[2]))
            default:
                log.ignoredSensors[String(parts[1]), default: 0] += 1
            }
        }
        return log
    }

    /// Where the integrated positions start and which way they run. The recording has no coordinates; the origin is
    /// in Bologna, where the dataset was recorded, so positions look plausible on a map.
    public static let origin = (lat: 44.4938, lon: 11.3430)
    public static let bearing = 90.0

    public static func convert(file: URL, app: String = "recorded", user: String? = nil) throws -> ConvertedRecording {
        let text = try RecordingFile.text(of: file)
        return try convert(text: text, fileName: file.lastPathComponent, app: app, user: user)
    }

    public static func convert(text: String, fileName: String, app: String = "recorded", user: String? = nil) throws
        -> ConvertedRecording
    {
        guard let info = fileInfo(fileName) else {
            throw RecordingError.malformed(
                file: fileName,
                reason: "a TMD file is named sensorfile_<user>_<Mode>_<startms>.csv.gz")
        }
        let log = parse(text)
        let device = DeviceID(
            app: app, user: user ?? userID(from: String(fileStem(fileName).dropFirst("sensorfile_".count))))
        let start = Double(info.startMs) / 1000
        func time(_ ms: Int64) -> Double { start + Double(ms) / 1000 }

        var records: [SensorRecord] = []
        var derived: [String] = []
        var notes: [String] = []

        let hasPedometer = !log.stepCounts.isEmpty
        records.append(
            SensorRecord.capabilities(of: device, at: start, activity: true, pedometer: hasPedometer))
        derived.append(
            "capabilities: activityAvailable true (the logger recorded Google activity recognition), "
                + "pedometerAvailable \(hasPedometer) (" + (hasPedometer ? "the file has" : "the file has no")
                + " android.sensor.step_counter lines)")

        // Positions: integrate speed (trapezoids between fixes) along one bearing from the origin.
        let speeds = log.speeds.sorted { $0.ms < $1.ms }
        var distance = 0.0
        for (index, fix) in speeds.enumerated() {
            if index > 0 {
                let previous = speeds[index - 1]
                distance += max(0, (previous.speed + fix.speed) / 2) * Double(fix.ms - previous.ms) / 1000
            }
            let position = destination(from: origin, bearing: bearing, metres: distance)
            // A negative speed is the logger's "unknown", as in the record (PROTOCOL §2).
            records.append(
                SensorRecord(
                    device: device, t: time(fix.ms),
                    payload: .location(
                        LocationFix(
                            latitude: position.lat, longitude: position.lon, speed: fix.speed < 0 ? nil : fix.speed,
                            course: bearing,
                            horizontalAccuracy: fix.accuracy))))
        }
        if !speeds.isEmpty {
            derived.append(
                "positions integrated from GPS speed along a fixed bearing (\(Int(bearing))°, also written as course) "
                    + "from a chosen origin in Bologna (\(origin.lat), \(origin.lon)): the recording has speeds but no coordinates; "
                    + "one location per speed line (\(speeds.count), \(decimal(distance / 1000, 2)) km in all), "
                    + "speed as logged, hacc from the speed line's accuracy column")
        } else {
            notes.append("no speed lines: no location records")
        }

        var unknownLabels = Set<String>()
        for reading in log.activities {
            let kind = GoogleActivityRecognition.activity(forName: reading.label)
            if kind == nil { unknownLabels.insert(reading.label) }
            let confidence = GoogleActivityRecognition.confidence(forPercent: Double(reading.percent))
            records.append(
                SensorRecord(
                    device: device, t: time(reading.ms),
                    payload: .activity(ActivityObservation(kind ?? .unknown, confidence))))
        }
        if !log.activities.isEmpty {
            let labels = log.activities.map { "\($0.label) \($0.percent)%" }.joined(separator: ", ")
            derived.append(
                "activity from Google activity recognition (\(labels)): vehicle→automotive, on_foot/walking→walking, "
                    + "running, bicycle→cycling, still→stationary, tilting/unknown→unknown; confidence ≥75% high, ≥50% medium, else low"
            )
        }
        if !unknownLabels.isEmpty {
            notes.append("unrecognised activity labels written as unknown: \(unknownLabels.sorted())")
        }

        for reading in log.stepCounts {
            records.append(SensorRecord(device: device, t: time(reading.ms), payload: .steps(reading.steps)))
        }
        if hasPedometer {
            notes.append(
                "steps: android.sensor.step_counter values as logged (cumulative since the phone booted), "
                    + "\(log.stepCounts.first!.steps)…\(log.stepCounts.last!.steps)")
        }

        // The log is mostly in time order; the trigger needs it strictly so.
        let samples = log.accelerations.sorted { $0.ms < $1.ms }.map {
            AccelerationSample(
                t: time($0.ms), x: $0.x / standardGravity, y: $0.y / standardGravity, z: $0.z / standardGravity)
        }
        let cut = cutImpacts(
            samples, device: device,
            rateRemark: "the logger samples the accelerometer at a low, irregular rate, "
                + "so short peaks can be missed and durations are coarse")
        records += cut.records
        derived.append(cut.derived)
        notes.append(cut.summary.sentence)

        notes.append(
            "recording: \(decimal(Double(log.lastMs) / 60000, 1)) min from \(info.startMs) ms "
                + "(file name); label \(info.label) from the file name")
        if log.badTimeLines > 0 { notes.append("skipped \(log.badTimeLines) lines with a negative or unreadable time") }
        if log.malformedLines > 0 { notes.append("skipped \(log.malformedLines) lines with unreadable values") }
        if log.outOfOrderLines > 0 {
            notes.append("\(log.outOfOrderLines) lines earlier than the line before: records sorted by time")
        }
        let ignored = log.ignoredSensors.values.reduce(0, +)
        if ignored > 0 {
            notes.append(
                "ignored \(ignored) lines of sensors the records do not carry (\(log.ignoredSensors.count) kinds: "
                    + log.ignoredSensors.keys.sorted().map { $0.isEmpty ? "<no name>" : $0 }.joined(separator: ", ")
                    + ")")
        }

        return ConvertedRecording(
            dataset: .tmd, sourceFile: fileName, device: device, records: records, label: info.label,
            impacts: cut.impacts, accelerometer: cut.summary,
            derived: derived, notes: notes)
    }

    /// The point `metres` away along a great circle with the initial `bearing` (degrees clockwise from north).
    static func destination(from origin: (lat: Double, lon: Double), bearing: Double, metres: Double) -> (
        lat: Double, lon: Double
    ) {
        let radius = 6_371_008.8
        let angular = metres / radius
        let theta = bearing * .pi / 180
        let lat1 = origin.lat * .pi / 180
        let lon1 = origin.lon * .pi / 180
        let lat2 = asin(sin(lat1) * cos(angular) + cos(lat1) * sin(angular) * cos(theta))
        let lon2 = lon1 + atan2(sin(theta) * sin(angular) * cos(lat1), cos(angular) - sin(lat1) * sin(lat2))
        return (lat2 * 180 / .pi, lon2 * 180 / .pi)
    }
}
