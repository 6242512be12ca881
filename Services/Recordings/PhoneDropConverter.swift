// Phone drops and tosses (phyphox exports of a falling smartphone) → records.
// `raw_data.tar.gz` holds one zip per trial (`fall_N`: dropped from rest from about 2 m; `up_and_down_N`: tossed up,
// then falling); each zip has `Raw Data.csv` ("Time (s)","Acceleration x (m/s^2)",…, about 200 Hz) and `meta/time.csv`
// with the wall-clock time of the START. The recording is accelerometer only, so each trial is spliced into a chosen,
// ordinary non-driving context (a person walking, standing to drop the phone, picking it up and walking on), which is
// what a dropped phone looks like to the detection service: it must not raise a crash.

import Foundation
import GatewayKit
import RoadSaveModel

public struct PhoneDropTrial: Sendable {
    /// The gateway's accelerometer sample (time in s, acceleration in g), named here so users of this module need not
    /// import GatewayKit.
    public typealias Sample = AccelerationSample

    public enum Kind: String, Sendable {
        /// `fall_N`: released from rest.
        case drop
        /// `up_and_down_N`: thrown up, then falling.
        case toss
    }

    /// `fall_3`, `up_and_down_7`.
    public var name: String
    public var kind: Kind
    /// Unix seconds of the phyphox START (from meta/time.csv), nil when the export has no time file.
    public var recordedStart: Double?
    /// The raw accelerometer stream: `t` in seconds from the START, acceleration in g.
    public var samples: [Sample]

    public init(name: String, kind: Kind, recordedStart: Double?, samples: [Sample]) {
        self.name = name
        self.kind = kind
        self.recordedStart = recordedStart
        self.samples = samples
    }
}

public enum PhoneDropConverter {
    /// The chosen place of the context: the UFF campus in Niterói, Brazil, where the dataset's authors work. The
    /// recording has no position.
    public static let place = (lat: -22.9056, lon: -43.1331)
    /// Used when a trial has no recorded START time and the caller chose none (2024-09-17 12:00 UTC, the first day
    /// of the recordings).
    public static let fallbackStart = 1_726_574_400.0

    /// The context around a trial, in seconds.
    static let walkBefore = 60.0, standBefore = 20.0, standAfter = 10.0, walkAfter = 50.0
    static let cadence = 1.8 // steps per second while walking
    static let stepRecordEvery = 10.0 // seconds between pedometer records

    /// Reads a phyphox "Raw Data.csv": columns are found by their names, values converted from m/s² to g.
    public static func parseAccelerometerCSV(_ text: String, file: String = "Raw Data.csv") throws
        -> [AccelerationSample]
    {
        let lines = textLines(text)
        guard let header = lines.first else { throw RecordingError.malformed(file: file, reason: "empty") }
        let names = fields(header).map { $0.lowercased() }
        func column(_ prefix: String) -> Int? { names.firstIndex { $0.hasPrefix(prefix) } }
        guard let tColumn = column("time"), let xColumn = column("acceleration x"),
            let yColumn = column("acceleration y"), let zColumn = column("acceleration z")
        else {
            throw RecordingError.malformed(
                file: file,
                reason: "expected columns \"Time (s)\" and \"Acceleration x/y/z (m/s^2)\"")
        }
        var samples: [AccelerationSample] = []
        samples.reserveCapacity(lines.count)
        for line in lines.dropFirst() {
            let parts = fields(line)
            guard parts.count > max(tColumn, xColumn, yColumn, zColumn),
                let t = Double(parts[tColumn]), let x = Double(parts[xColumn]),
                let y = Double(parts[yColumn]), let z = Double(parts[zColumn]),
                t.isFinite, x.isFinite, y.isFinite, z.isFinite
            else { continue } // phyphox leaves gaps as empty cells
            samples.append(
                AccelerationSample(t: t, x: x / standardGravity, y: y / standardGravity, z: z / standardGravity))
        }
        return samples.sorted { $0.t < $1.t }
    }

    /// The Unix time of the first START event in a phyphox meta/time.csv.
    public static func parseStartTime(_ text: String) -> Double? {
        let lines = textLines(text)
        guard let header = lines.first else { return nil }
        let names = fields(header).map { $0.lowercased() }
        guard let eventColumn = names.firstIndex(of: "event"), let timeColumn = names.firstIndex(of: "system time")
        else { return nil }
        for line in lines.dropFirst() {
            let parts = fields(line)
            if parts.count > max(eventColumn, timeColumn), parts[eventColumn] == "START" {
                return Double(parts[timeColumn])
            }
        }
        return nil
    }

    /// `fall_3` → drop, `up_and_down_7` → toss.
    public static func kind(ofTrial name: String) -> PhoneDropTrial.Kind? {
        name.hasPrefix("fall_") ? .drop : name.hasPrefix("up_and_down_") ? .toss : nil
    }

    /// Unpacks the archive (tar, then each trial's zip) in a scratch folder and reads the trials, in natural order
    /// (fall_1, fall_2, …, fall_22, up_and_down_2, …). `only` reads one trial. `trialRead(done, total)` is called
    /// with 0 done before the first trial and after each trial read (unpacking a trial is what takes the time: a
    /// progress line counts them).
    public static func readTrials(
        archive: URL, only: String? = nil,
        trialRead: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) throws -> [PhoneDropTrial] {
        try RecordingFile.checkReadable(archive)
        return try ScratchDirectory.with { folder in
            _ = try ExternalTool.run("tar", ["-xzf", archive.path, "-C", folder.path], file: archive.path)
            let zips = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".zip") }
            var byName: [String: String] = [:] // trial name → zip path inside the scratch folder
            for path in zips {
                let name = String(URL(fileURLWithPath: path).lastPathComponent.dropLast(".zip".count))
                if byName[name] == nil { byName[name] = path }
            }
            guard !byName.isEmpty else {
                throw RecordingError.malformed(file: archive.path, reason: "no trial zips inside")
            }
            var names = byName.keys.sorted(by: naturalOrder)
            if let only {
                guard byName[only] != nil else { throw RecordingError.unknownTrial(name: only, available: names) }
                names = [only]
            }
            trialRead(0, names.count)
            return try names.enumerated().map { index, name in
                let zip = folder.appendingPathComponent(byName[name]!)
                let target = folder.appendingPathComponent("trial-\(name)", isDirectory: true)
                try extractZip(zip, into: target)
                let dataFile = target.appendingPathComponent("Raw Data.csv")
                guard let data = FileManager.default.contents(atPath: dataFile.path) else {
                    throw RecordingError.malformed(
                        file: "\(archive.lastPathComponent)/\(name).zip", reason: "no Raw Data.csv")
                }
                let samples = try parseAccelerometerCSV(
                    String(decoding: data, as: UTF8.self),
                    file: "\(archive.lastPathComponent)/\(name).zip/Raw Data.csv")
                let start = FileManager.default.contents(atPath: target.appendingPathComponent("meta/time.csv").path)
                    .flatMap { parseStartTime(String(decoding: $0, as: UTF8.self)) }
                let trial = PhoneDropTrial(
                    name: name, kind: kind(ofTrial: name) ?? .drop, recordedStart: start, samples: samples)
                trialRead(index + 1, names.count)
                return trial
            }
        }
    }

    /// python3's zipfile module is on every machine here; `unzip` is the fallback when it is not.
    static func extractZip(_ zip: URL, into folder: URL) throws {
        do {
            _ = try ExternalTool.run("python3", ["-m", "zipfile", "-e", zip.path, folder.path], file: zip.path)
        } catch let pythonError {
            do {
                _ = try ExternalTool.run("unzip", ["-q", "-o", zip.path, "-d", folder.path], file: zip.path)
            } catch {
                throw pythonError
            }
        }
    }

    /// `fall_2` before `fall_10`.
    static func naturalOrder(_ a: String, _ b: String) -> Bool {
        func split(_ s: String) -> (String, Int) {
            let digits = s.reversed().prefix { $0.isNumber }
            return (String(s.dropLast(digits.count)), Int(String(digits.reversed())) ?? -1)
        }
        let (pa, na) = split(a)
        let (pb, nb) = split(b)
        return pa != pb ? pa < pb : na < nb
    }

    public static func convert(
        archive: URL, app: String = "recorded", user: String? = nil, trial: String? = nil,
        trialRead: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) throws
        -> [ConvertedRecording]
    {
        let trials = try readTrials(archive: archive, only: trial, trialRead: trialRead)
        return trials.map { trial in
            // With several trials a chosen user is a prefix, so each trial stays its own device.
            let name = user.map { trials.count == 1 ? $0 : "\($0)-\(trial.name)" }
            return convert(trial: trial, app: app, user: name, source: "\(archive.lastPathComponent)/\(trial.name)")
        }
    }

    /// One trial spliced into its context. `startTime` (Unix seconds) is where the trial's time 0 goes; by default
    /// the trial's own recorded START, so trials keep their real spacing.
    public static func convert(
        trial: PhoneDropTrial, app: String = "recorded", user: String? = nil,
        startTime: Double? = nil, source: String? = nil
    ) -> ConvertedRecording {
        let t0 = startTime ?? trial.recordedStart ?? fallbackStart
        let trialEnd = t0 + (trial.samples.last?.t ?? 0)
        let contextStart = t0 - walkBefore - standBefore
        let standStart = t0 - standBefore
        let walkAgain = trialEnd + standAfter
        let contextEnd = walkAgain + walkAfter
        var random = SplitMix64(name: trial.name)
        let device = DeviceID(app: app, user: user ?? userID(from: trial.name))
        var records: [SensorRecord] = []
        func record(_ t: Double, _ payload: SensorRecord.Payload) {
            records.append(SensorRecord(device: device, t: t, payload: payload))
        }

        record(contextStart, .capabilities(.full))
        record(contextStart, .activity(ActivityObservation(.walking, .high)))
        record(standStart, .activity(ActivityObservation(.stationary, .high)))
        record(walkAgain, .activity(ActivityObservation(.walking, .high)))

        // Pedometer: counts only while walking; a record every 10 s and one as each walk ends.
        let baseSteps = 1000 + Int(random.next() % 3000)
        func stepsAt(_ t: Double) -> Int {
            let walked = min(max(t - contextStart, 0), walkBefore) + min(max(t - walkAgain, 0), walkAfter)
            return baseSteps + Int((walked * cadence).rounded(.down))
        }
        var stepTimes = Array(stride(from: contextStart, through: standStart, by: stepRecordEvery))
        stepTimes += Array(stride(from: walkAgain, through: contextEnd, by: stepRecordEvery))
        if stepTimes.last != contextEnd { stepTimes.append(contextEnd) }
        for t in stepTimes { record(t, .steps(stepsAt(t))) }

        // GPS: 1 Hz around one point; walking speeds while walking, near zero while standing.
        var t = contextStart
        while t <= contextEnd + 1e-9 {
            let walking = t < standStart || t >= walkAgain
            let speed = walking ? random.uniform(1.1, 1.4) : random.uniform(0, 0.2)
            let north = random.uniform(-3, 3)
            let east = random.uniform(-3, 3)
            let lat = place.lat + north / 111_320
            let lon = place.lon + east / (111_320 * cos(place.lat * .pi / 180))
            record(
                t,
                .location(
                    LocationFix(latitude: lat, longitude: lon, speed: speed, horizontalAccuracy: random.uniform(4, 8))))
            t += 1
        }

        let samples = trial.samples.map { AccelerationSample(t: t0 + $0.t, x: $0.x, y: $0.y, z: $0.z) }
        let cut = cutImpacts(samples, device: device)
        records += cut.records

        let startSource =
            startTime != nil
            ? "the chosen start time"
            : trial.recordedStart != nil ? "the trial's recorded phyphox START time" : "a fixed default start time"
        let derived = [
            "\(trial.kind == .drop ? "drop" : "toss") spliced into a chosen non-driving context (the recording is accelerometer "
                + "only): \(Int(walkBefore)) s walking, \(Int(standBefore)) s standing, the trial "
                + "(\(decimal(trialEnd - t0, 1)) s, time 0 at \(startSource)), \(Int(standAfter)) s "
                + "standing, \(Int(walkAfter)) s walking",
            "capabilities: both true (an ordinary phone, chosen for the context)",
            "activity: walking high while walking, stationary high while standing (chosen context)",
            "location: 1 Hz fixes at a chosen fixed point (UFF campus, Niterói, \(place.lat), \(place.lon)) with ±3 m jitter, "
                + "hacc 4–8 m, speed 1.1–1.4 m/s walking and 0–0.2 m/s standing, no course; the recording has no position",
            "steps: synthetic pedometer, \(cadence) steps/s while walking, a record every \(Int(stepRecordEvery)) s",
            cut.derived,
        ]
        return ConvertedRecording(
            dataset: .phoneDrops, sourceFile: source ?? trial.name, device: device, records: records,
            label: trial.name,
            impacts: cut.impacts, accelerometer: cut.summary, derived: derived,
            notes: [cut.summary.sentence])
    }
}
