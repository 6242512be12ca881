// MobilityNet whole journeys (mobilitynet-whole-journeys/) → records: one device per phone and run. Eight phones
// (4 Android, 4 iOS) were carried together on scripted journeys (walk → car → walk, walk → wait → train / bus / light
// rail → walk, bicycle, e-bike, e-scooter); each phone's files of a run are e-mission entries, read as the e-mission
// days are (`EmissionConverter`): `background~location/<range>.json.gz` and `background~motion_activity/<range>.json.gz`
// under `<phone>/<spec>/`. `runs_DERIVED.csv` names each phone's file of each run, its role and sensing settings;
// `legs_DERIVED.csv` the legs of each run (mode, start, end), marked by hand on one phone and true for all eight.

import Foundation
import RoadSaveModel

public enum MobilityNetConverter {
    /// One phone's part of one run (a row of runs_DERIVED.csv).
    public struct PhoneRun: Sendable, Equatable {
        /// The evaluation spec (journey family), e.g. `car_scooter_brex_san_jose`.
        public var spec: String
        /// The run, named by the range of ucb-sdb-ios-1 (the phone the legs were marked on).
        public var run: String
        /// `ucb-sdb-ios-1` … `ucb-sdb-android-4`.
        public var phone: String
        /// accuracy_control, evaluation_0, evaluation_1, power_control.
        public var role: String
        /// `<comparison>:<config>`, e.g. `HAHFDC v/s MAHFDC:MAHFDC` or `fixed:ACCURACY_CONTROL`.
        public var sensingConfig: String
        /// This phone's file name (its own range) of the run, without `.json.gz`.
        public var file: String

        /// ios or android.
        public var os: String { phone.contains("ios") ? "ios" : "android" }
        /// The configuration alone: ACCURACY_CONTROL, POWER_CONTROL, HAHFDC, HAMFDC, MAHFDC or MAMFDC.
        public var config: String { String(sensingConfig.split(separator: ":").last ?? "") }
        /// The device's clientUserID: the phone and the run (`ios-1.1564174916`: one device per phone and run).
        public var user: String {
            "\(phone.replacingOccurrences(of: "ucb-sdb-", with: "")).\(run.split(separator: "_").first ?? "")"
        }
    }

    /// One leg of a run (a row of legs_DERIVED.csv): the same for every phone of the run.
    public struct Leg: Sendable, Equatable {
        public var spec: String
        public var run: String
        public var tripID: String
        public var legID: String
        /// TRAVEL, ACCESS, WAITING, TRANSFER.
        public var legType: String
        /// WALKING, CAR, BUS, TRAIN, SUBWAY, LIGHT_RAIL, BICYCLING, E_BIKE, ESCOOTER, STOPPED.
        public var mode: String
        public var start: Double
        public var end: Double
    }

    static let runsFile = "runs_DERIVED.csv"
    static let legsFile = "legs_DERIVED.csv"

    /// The rows of a derived CSV as dictionaries by header; an error names the file, the line and the column.
    static func table(_ file: URL, columns: [String]) throws -> [(line: Int, values: [String: String])] {
        let table = try CSVTable(text: try RecordingFile.text(of: file), file: file.path, required: columns)
        return try table.rows.map { row in
            guard row.fields.count == table.columns.count else {
                throw RecordingError.malformed(
                    file: file.path,
                    reason: "line \(row.line): \(row.fields.count) fields, "
                        + "the header has \(table.columns.count)")
            }
            return (row.line, Dictionary(uniqueKeysWithValues: zip(table.columns, row.fields)))
        }
    }

    /// Every phone's part of every run in `folder` (the dataset's folder).
    public static func phoneRuns(in folder: URL) throws -> [PhoneRun] {
        let file = folder.appendingPathComponent(runsFile)
        return try table(file, columns: ["spec", "run", "phone", "role", "sensing_config", "file"]).map { _, row in
            PhoneRun(
                spec: row["spec"]!, run: row["run"]!, phone: row["phone"]!, role: row["role"]!,
                sensingConfig: row["sensing_config"]!, file: row["file"]!)
        }
    }

    /// Every leg of every run in `folder`.
    public static func legs(in folder: URL) throws -> [Leg] {
        let file = folder.appendingPathComponent(legsFile)
        return try table(file, columns: ["spec", "run", "trip_id", "leg_id", "leg_type", "mode", "start_ts", "end_ts"])
            .map { line, row in
                guard let start = Double(row["start_ts"]!), let end = Double(row["end_ts"]!), end >= start else {
                    throw RecordingError.malformed(
                        file: file.path,
                        reason: "line \(line): start_ts and end_ts must be "
                            + "times in seconds, the end not before the start (\(row["start_ts"]!), \(row["end_ts"]!))")
                }
                return Leg(
                    spec: row["spec"]!, run: row["run"]!, tripID: row["trip_id"]!, legID: row["leg_id"]!,
                    legType: row["leg_type"]!, mode: row["mode"]!, start: start, end: end)
            }
    }

    /// The recording of one phone's run: its locations and activity readings (either may be absent, as on the phones
    /// whose location sensing was off or duty cycled); nil when it has neither.
    public static func convert(folder: URL, phoneRun: PhoneRun, app: String = "recorded") throws -> ConvertedRecording?
    {
        let base = folder.appendingPathComponent(phoneRun.phone).appendingPathComponent(phoneRun.spec)
        var day: EmissionConverter.Day?
        var missing: [String] = []
        for key in ["background~location", "background~motion_activity"] {
            let file = base.appendingPathComponent(key).appendingPathComponent("\(phoneRun.file).json.gz")
            guard FileManager.default.fileExists(atPath: file.path) else {
                missing.append(key)
                continue
            }
            let parsed = try EmissionConverter.parse(
                [UInt8](try RecordingFile.data(of: file)),
                fileName: "\(phoneRun.phone)/\(phoneRun.spec)/\(key)/\(file.lastPathComponent)")
            day = day.map { $0.merged(with: parsed) } ?? parsed
        }
        guard let day, !(day.fixes.isEmpty && day.activities.isEmpty) else { return nil }
        var notes = [
            "MobilityNet \(phoneRun.spec), run \(phoneRun.run), \(phoneRun.phone) (\(phoneRun.os), "
                + "\(phoneRun.role), sensing \(phoneRun.config))",
            phoneRun.os == "ios"
                ? "iOS activity: CMMotionActivity's flags as e-mission maps them (automotive with stationary: "
                    + "STOPPED_WHILE_IN_VEHICLE; no flag set: NONE) with its confidence low/medium/high"
                : "Android activity: Google's DetectedActivity as dumped (zzbhB: the type, zzbhC: the "
                    + "percentage), timed by write_ts (the app writes each detection as it comes)",
            "course: the fixes' bearing (-1 on iOS, 0 on Android when the phone had none: unknown)",
        ]
        if !missing.isEmpty { notes.append("no \(missing.joined(separator: " or ")) file for this phone and run") }
        return try EmissionConverter.recording(
            of: day, device: DeviceID(app: app, user: phoneRun.user), dataset: .mobilitynet,
            sourceFile: "\(phoneRun.phone)/\(phoneRun.spec)/\(phoneRun.file)",
            label: "\(phoneRun.os) \(phoneRun.config)",
            notes: notes)
    }

    /// Every phone's run in `folder` (or those of `run` and `phone` when given: a run's name or a phone's, e.g.
    /// `ucb-sdb-ios-2`), each as its own device; the phone runs with no readings are named in `skipped`.
    public static func convert(
        folder: URL, app: String = "recorded", run: String? = nil, phone: String? = nil,
        phoneRead: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) throws
        -> (recordings: [ConvertedRecording], skipped: [String])
    {
        let chosen = try phoneRuns(in: folder).filter { entry in
            (run == nil || entry.run == run) && (phone == nil || entry.phone == phone)
        }
        guard !chosen.isEmpty else {
            throw RecordingError.malformed(
                file: folder.appendingPathComponent(runsFile).path,
                reason: "no phone run matches" + (run.map { " run \($0)" } ?? "")
                    + (phone.map { " phone \($0)" } ?? ""))
        }
        var recordings: [ConvertedRecording] = []
        var skipped: [String] = []
        phoneRead(0, chosen.count)
        for (index, entry) in chosen.enumerated() {
            if let recording = try convert(folder: folder, phoneRun: entry, app: app) {
                recordings.append(recording)
            } else {
                skipped.append("\(entry.phone) \(entry.spec) \(entry.run): no location or activity readings")
            }
            phoneRead(index + 1, chosen.count)
        }
        return (recordings, skipped)
    }

    /// The legs of the converted devices, one CSV line each (the header first), for `scripts/quality.py`: the
    /// device's user, its OS and sensing configuration, and the leg.
    public static func legsCSV(_ legs: [Leg], for phoneRuns: [PhoneRun]) -> String {
        var lines = ["user,os,role,config,spec,run,trip_id,leg_id,leg_type,mode,start_ts,end_ts"]
        for entry in phoneRuns {
            for leg in legs where leg.spec == entry.spec && leg.run == entry.run {
                lines.append(
                    [
                        entry.user, entry.os, entry.role, entry.config, leg.spec, leg.run, leg.tripID, leg.legID,
                        leg.legType, leg.mode, String(format: "%.3f", leg.start), String(format: "%.3f", leg.end),
                    ]
                    .joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
