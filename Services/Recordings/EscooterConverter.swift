// E-scooter accelerometer (AccidDetec-Accel / RideSafeUM) → records.
// Tab-separated, no header: `index, unix time ms, ax, ay, az (m/s², gravity on y), tag`, about 200 Hz. The *crash*
// files each hold two staged accidents plus disturbances (steps, violent shaking) with no event times, so the labels
// are weak: the converter exposes every impact the gateway's trigger cuts and leaves judging them to the tests.

import Foundation
import GatewayKit
import Logging
import RoadSaveModel

public enum EscooterConverter {
    public struct Log: Sendable {
        /// Unix seconds, acceleration in g.
        public var samples: [AccelerationSample] = []
        /// The file's tag column (first row), e.g. `9febcrash`.
        public var tag: String?
        public var malformedLines = 0
        public var outOfOrderLines = 0
        /// Samples with the same millisecond as the one before (the logger delivers in bursts).
        public var repeatedTimes = 0
    }

    public static func parse(_ text: String) -> Log {
        var log = Log()
        var previous = -Double.infinity
        for line in textLines(text) {
            let parts = fields(line, separator: "\t")
            guard parts.count >= 5, let ms = Double(parts[1]), let x = Double(parts[2]), let y = Double(parts[3]),
                let z = Double(parts[4]), ms > 0, x.isFinite, y.isFinite, z.isFinite
            else {
                log.malformedLines += 1
                continue
            }
            if log.tag == nil, parts.count >= 6 { log.tag = String(parts[5]) }
            let t = ms / 1000
            if t < previous { log.outOfOrderLines += 1 } else if t == previous { log.repeatedTimes += 1 }
            previous = t
            log.samples.append(
                AccelerationSample(t: t, x: x / standardGravity, y: y / standardGravity, z: z / standardGravity))
        }
        if log.outOfOrderLines > 0 { log.samples.sort { $0.t < $1.t } }
        return log
    }

    public static func convert(file: URL, app: String = "recorded", user: String? = nil) throws -> ConvertedRecording {
        let text = try RecordingFile.text(of: file)
        return try convert(text: text, fileName: file.lastPathComponent, app: app, user: user)
    }

    /// Context choice: a capabilities record and one `cycling` activity at the start, nothing else. Cycling is the
    /// activity class nearest to riding an e-scooter, and it neither starts nor stops a trip (PROTOCOL §4), so the
    /// impacts reach the crash path without a made-up trip around them. No GPS is invented.
    public static func convert(text: String, fileName: String, app: String = "recorded", user: String? = nil) throws
        -> ConvertedRecording
    {
        let log = parse(text)
        guard let first = log.samples.first else {
            throw RecordingError.malformed(
                file: fileName, reason: "no readable rows (index, unix ms, ax, ay, az, tag; tab-separated)")
        }
        let device = DeviceID(app: app, user: user ?? userID(from: "escooter-" + fileStem(fileName)))
        let cut = cutImpacts(log.samples, device: device)
        var records = [
            SensorRecord.capabilities(of: device, at: first.t, activity: true, pedometer: false),
            SensorRecord(device: device, t: first.t, payload: .activity(ActivityObservation(.cycling, .high))),
        ]
        records += cut.records
        let derived = [
            "context chosen for an e-scooter ride: capabilities activityAvailable true, pedometerAvailable false (the sensor "
                + "rides on the scooter), one activity record cycling high at the start (the nearest class to riding a scooter)",
            "no location records: the recording has no GPS and none was invented",
            cut.derived,
        ]
        var notes = [cut.summary.sentence]
        if fileName.lowercased().contains("crash") {
            notes.append(
                "weak labels: the authors say this file holds two staged accidents plus disturbances (steps, "
                    + "violent shaking) and give no event times")
        }
        if log.repeatedTimes > 0 {
            notes.append("\(log.repeatedTimes) samples share the previous sample's millisecond")
        }
        if log.malformedLines > 0 { notes.append("skipped \(log.malformedLines) unreadable rows") }
        if log.outOfOrderLines > 0 {
            notes.append("\(log.outOfOrderLines) rows earlier than the row before: sorted by time")
        }
        return ConvertedRecording(
            dataset: .escooter, sourceFile: fileName, device: device, records: records,
            label: log.tag, impacts: cut.impacts, accelerometer: cut.summary,
            derived: derived, notes: notes)
    }
}
