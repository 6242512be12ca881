// CBS Smart Survey open geodata → records.
// A day file holds 1 Hz phone GPS (`user_id,timestamp,latitude,longitude,stop,mode`, times in UTC) labelled from a
// travel diary: `stop` TRUE while the person was not moving, `mode` the diary's mode while moving. There is no speed,
// accuracy or course, and the diary is minute-resolution.

import Foundation
import Logging
import RoadSaveModel

/// A run of GPS points with the same diary label (stop flag and mode).
public struct DiarySegment: Sendable, Equatable {
    /// Unix seconds of the first and last point.
    public var start: Double
    public var end: Double
    /// Diary mode (Walk, Bike, Bus, Tram, Metro, Train, Ferry, Car); empty during stops.
    public var mode: String
    public var stop: Bool
    public var pointCount: Int
}

public enum CBSConverter {
    public struct Fix: Sendable, Equatable {
        public var t: Double
        public var lat: Double
        public var lon: Double
        public var stop: Bool
        public var mode: String
    }

    public struct Log: Sendable, Equatable {
        public var fixes: [Fix] = []
        /// The file's user_id column (first row).
        public var userID: String?
        /// Rows that could not be read (bad time, coordinates or stop flag).
        public var malformedLines = 0
        /// Rows with the same timestamp as the row before: kept, because a detection engine must cope with them.
        public var duplicateTimestamps = 0
        /// Rows earlier than the row before (none in the published files).
        public var outOfOrderLines = 0
    }

    public static func parse(_ text: String) throws -> Log {
        var log = Log()
        var lines = textLines(text)[...]
        guard let header = lines.first else { return log }
        let names = fields(header).map { $0.lowercased() }
        guard let timeColumn = names.firstIndex(of: "timestamp"), let latColumn = names.firstIndex(of: "latitude"),
            let lonColumn = names.firstIndex(of: "longitude"), let stopColumn = names.firstIndex(of: "stop"),
            let modeColumn = names.firstIndex(of: "mode")
        else {
            throw RecordingError.malformed(
                file: "CBS file",
                reason: "the header must name timestamp, latitude, longitude, stop and mode")
        }
        let userColumn = names.firstIndex(of: "user_id")
        lines = lines.dropFirst()
        let width = max(timeColumn, latColumn, lonColumn, stopColumn, modeColumn) + 1
        for line in lines {
            let parts = fields(line)
            guard parts.count >= width, let t = RecordingTime.seconds(from: parts[timeColumn]),
                let lat = Double(parts[latColumn]), let lon = Double(parts[lonColumn]),
                (-90...90).contains(lat), (-180...180).contains(lon)
            else {
                log.malformedLines += 1
                continue
            }
            let stop: Bool
            switch parts[stopColumn].uppercased() {
            case "TRUE": stop = true
            case "FALSE": stop = false
            default:
                log.malformedLines += 1
                continue
            }
            if log.userID == nil, let userColumn, userColumn < parts.count { log.userID = String(parts[userColumn]) }
            if let previous = log.fixes.last {
                if t == previous.t { log.duplicateTimestamps += 1 } else if t < previous.t { log.outOfOrderLines += 1 }
            }
            log.fixes.append(Fix(t: t, lat: lat, lon: lon, stop: stop, mode: stop ? "" : String(parts[modeColumn])))
        }
        return log
    }

    /// Runs of identical (stop, mode), the way segments_derived.csv beside the data was made.
    public static func segments(_ fixes: [Fix]) -> [DiarySegment] {
        var segments: [DiarySegment] = []
        for fix in fixes {
            if var last = segments.last, last.stop == fix.stop, last.mode == fix.mode {
                last.end = fix.t
                last.pointCount += 1
                segments[segments.count - 1] = last
            } else {
                segments.append(DiarySegment(start: fix.t, end: fix.t, mode: fix.mode, stop: fix.stop, pointCount: 1))
            }
        }
        return segments
    }

    /// The activity a phone's classifier would most plausibly report for a diary label. Rail and water modes get medium
    /// confidence: phone classifiers confuse them with other motion more often than road vehicles.
    public static func activity(for segment: DiarySegment) -> (ActivityType, ActivityConfidence) {
        if segment.stop { return (.stationary, .high) }
        switch segment.mode.lowercased() {
        case "walk": return (.walking, .high)
        case "bike": return (.cycling, .high)
        case "bus", "tram", "car": return (.automotive, .high)
        case "metro", "train", "ferry": return (.automotive, .medium)
        default: return (.unknown, .low)
        }
    }

    public static func convert(file: URL, app: String = "recorded", user: String? = nil, deriveActivity: Bool = false)
        throws
        -> ConvertedRecording
    {
        let text = try RecordingFile.text(of: file)
        return try convert(
            text: text, fileName: file.lastPathComponent, app: app, user: user, deriveActivity: deriveActivity)
    }

    public static func convert(
        text: String, fileName: String, app: String = "recorded", user: String? = nil,
        deriveActivity: Bool = false
    ) throws -> ConvertedRecording {
        let log: Log
        do { log = try parse(text) } catch RecordingError.malformed(_, let reason) {
            throw RecordingError.malformed(file: fileName, reason: reason)
        }
        guard let first = log.fixes.first else {
            throw RecordingError.malformed(file: fileName, reason: "no readable GPS rows")
        }
        let segments = segments(log.fixes)
        let device = DeviceID(app: app, user: user ?? userID(from: defaultUser(fileName)))
        var records: [SensorRecord] = []
        var derived: [String] = []
        var notes: [String] = []

        records.append(
            SensorRecord.capabilities(of: device, at: first.t, activity: deriveActivity, pedometer: false))
        derived.append(
            "capabilities: activityAvailable \(deriveActivity) ("
                + (deriveActivity
                    ? "activity derived from the diary" : "the recording has no activity classifier output")
                + "), pedometerAvailable false (no step data)")

        // Activity first, so a label change sorts before the GPS point taken at the same second.
        if deriveActivity {
            for segment in segments {
                let (kind, confidence) = Self.activity(for: segment)
                records.append(
                    SensorRecord(
                        device: device, t: segment.start, payload: .activity(ActivityObservation(kind, confidence))))
            }
            derived.append(
                "activity records derived from the travel-diary labels, one at each label change "
                    + "(\(segments.count) segments): Walk→walking high, Bike→cycling high, Bus/Tram/Car→automotive high, "
                    + "Metro/Train/Ferry→automotive medium, stop→stationary high; the diary is minute-resolution, so changes "
                    + "can be off by up to a minute")
        }

        for fix in log.fixes {
            records.append(
                SensorRecord(
                    device: device, t: fix.t, payload: .location(LocationFix(latitude: fix.lat, longitude: fix.lon))))
        }
        notes.append(
            "location: the 1 Hz GPS positions as recorded; no speed (unknown) because the recording has none, "
                + "no hacc or course")

        let modes = Dictionary(grouping: segments.filter { !$0.stop }, by: \.mode).mapValues(\.count)
        notes.append(
            "diary: \(segments.count) segments (\(segments.filter(\.stop).count) stops; "
                + modes.keys.sorted().map { "\(modes[$0]!) \($0)" }.joined(separator: ", ") + ")")
        if log.duplicateTimestamps > 0 {
            notes.append(
                "\(log.duplicateTimestamps) rows repeat the previous row's timestamp: kept as separate records")
        }
        if log.malformedLines > 0 { notes.append("skipped \(log.malformedLines) unreadable rows") }
        if log.outOfOrderLines > 0 {
            notes.append("\(log.outOfOrderLines) rows earlier than the row before: records sorted by time")
        }

        return ConvertedRecording(
            dataset: .cbs, sourceFile: fileName, device: device, records: records, label: log.userID,
            diarySegments: segments, derived: derived, notes: notes)
    }

    /// `ssi_open_geodata-Utrecht1-2024-06-02.csv.gz` → `Utrecht1-2024-06-02`: one device per user-day, so day files of
    /// one user converted together do not collide on seq.
    static func defaultUser(_ fileName: String) -> String {
        let stem = fileStem(fileName)
        return stem.hasPrefix("ssi_open_geodata-") ? String(stem.dropFirst("ssi_open_geodata-".count)) : stem
    }
}
