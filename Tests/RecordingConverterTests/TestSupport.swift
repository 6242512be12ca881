// Shared checks: every converted line must be a PROTOCOL §2 record that a JSON reader other than our own writer accepts.

import Foundation
import RecordCodecs
import Recordings
import RoadSaveModel
import Testing

let sharedDataAbsent: Comment =
    "../shared/data is absent (a clone outside the RoadSave workspace): real-recording test skipped"

/// Why a suite of one dataset is skipped when the shared data lacks just that dataset.
func datasetAbsent(_ dataset: Dataset) -> Comment {
    "\(dataset.folder) is not in ../shared/data (absent, or a copy older than the dataset): real-recording test skipped"
}

/// A parsed record.
typealias JSONObject = [String: Any]

/// Parses each line with JSONSerialization and checks the fields every record must have, the kind's own fields and
/// their ranges, `seq` 0..n-1, `t` with three decimals and never decreasing, and the capabilities record first; and
/// that the service's own decoder (`RecordDecoding`) accepts each line as a record of that device with that `seq`.
/// Returns the parsed objects for the caller's own checks.
@discardableResult
func checkRecords(
    _ lines: [String], app: String, user: String,
    sourceLocation: SourceLocation = #_sourceLocation
) -> [JSONObject] {
    var objects: [JSONObject] = []
    var previousT = -Double.infinity
    let tPattern = /"t":-?\d+\.\d{3}[,}]/
    for (index, line) in lines.enumerated() {
        guard let data = line.data(using: .utf8),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? JSONObject
        else {
            Issue.record("line \(index) is not a JSON object: \(line.prefix(200))", sourceLocation: sourceLocation)
            continue
        }
        objects.append(object)
        do {
            let record = try RecordDecoding.record(fromJSON: Array(line.utf8))
            #expect(
                record.device == DeviceID(app: app, user: user) && record.seq == UInt64(index),
                "line \(index): device and seq", sourceLocation: sourceLocation)
        } catch {
            Issue.record("line \(index) rejected by RecordDecoding: \(error)", sourceLocation: sourceLocation)
        }
        let kind = object["kind"] as? String
        #expect(
            ["capabilities", "location", "activity", "steps", "impact"].contains(kind ?? ""),
            "line \(index): kind \(kind ?? "nil")", sourceLocation: sourceLocation)
        #expect(object["app"] as? String == app, "line \(index): app", sourceLocation: sourceLocation)
        #expect(object["user"] as? String == user, "line \(index): user", sourceLocation: sourceLocation)
        #expect((object["seq"] as? NSNumber)?.intValue == index, "line \(index): seq", sourceLocation: sourceLocation)
        #expect(line.contains(tPattern), "line \(index): t with 3 decimals", sourceLocation: sourceLocation)
        guard let t = (object["t"] as? NSNumber)?.doubleValue else {
            Issue.record("line \(index): t missing", sourceLocation: sourceLocation)
            continue
        }
        #expect(
            t >= previousT, "line \(index): t \(t) before the previous \(previousT)", sourceLocation: sourceLocation)
        previousT = t
        if index == 0 {
            #expect(kind == "capabilities", "the first record is the capabilities", sourceLocation: sourceLocation)
        }
        switch kind {
        case "capabilities":
            #expect(
                object["activityAvailable"] is Bool && object["pedometerAvailable"] is Bool,
                "line \(index): capabilities flags", sourceLocation: sourceLocation)
        case "location":
            let lat = (object["lat"] as? NSNumber)?.doubleValue ?? .nan
            let lon = (object["lon"] as? NSNumber)?.doubleValue ?? .nan
            #expect(
                (-90...90).contains(lat) && (-180...180).contains(lon), "line \(index): lat/lon",
                sourceLocation: sourceLocation)
            // Speed is written only when known, so never negative.
            if let speed = object["speed"] {
                #expect(
                    ((speed as? NSNumber)?.doubleValue ?? -1) >= 0, "line \(index): speed",
                    sourceLocation: sourceLocation)
            }
            if let hacc = object["hacc"] {
                #expect(
                    ((hacc as? NSNumber)?.doubleValue ?? -1) >= 0, "line \(index): hacc", sourceLocation: sourceLocation
                )
            }
        case "activity":
            #expect(
                ["automotive", "walking", "running", "cycling", "stationary", "unknown"]
                    .contains(object["activity"] as? String ?? ""), "line \(index): activity",
                sourceLocation: sourceLocation)
            #expect(
                ["low", "medium", "high"].contains(object["confidence"] as? String ?? ""),
                "line \(index): confidence", sourceLocation: sourceLocation)
        case "steps":
            let steps = object["steps"] as? NSNumber
            #expect(
                steps != nil && steps!.doubleValue >= 0 && steps!.doubleValue == steps!.doubleValue.rounded(),
                "line \(index): steps", sourceLocation: sourceLocation)
        case "impact":
            let peak = (object["peakG"] as? NSNumber)?.doubleValue ?? 0
            #expect(peak > 2, "line \(index): peakG \(peak) above the 2 g trigger", sourceLocation: sourceLocation)
            #expect(
                ((object["durationMs"] as? NSNumber)?.doubleValue ?? -1) >= 0, "line \(index): durationMs",
                sourceLocation: sourceLocation)
            let samples = object["samples"] as? [[NSNumber]] ?? []
            #expect(
                !samples.isEmpty && samples.allSatisfy { $0.count == 4 }, "line \(index): samples [[dt,x,y,z]]",
                sourceLocation: sourceLocation)
            let dts = samples.compactMap { $0.first?.doubleValue }
            #expect(
                dts.allSatisfy { (-1.0001...2.0001).contains($0) }, "line \(index): dt within -1..+2 s",
                sourceLocation: sourceLocation)
        default:
            break
        }
    }
    #expect(objects.count == lines.count, sourceLocation: sourceLocation)
    return objects
}

func records(_ objects: [JSONObject], kind: String) -> [JSONObject] {
    objects.filter { $0["kind"] as? String == kind }
}

func double(_ object: JSONObject, _ key: String) -> Double? {
    (object[key] as? NSNumber)?.doubleValue
}

/// |a| of an impact sample [dt, x, y, z].
func magnitude(_ sample: [Double]) -> Double {
    (sample[1] * sample[1] + sample[2] * sample[2] + sample[3] * sample[3]).squareRoot()
}

func impactSamples(_ object: JSONObject) -> [[Double]] {
    (object["samples"] as? [[NSNumber]] ?? []).map { $0.map(\.doubleValue) }
}

/// A file of the shared data that the tests rely on; records an issue (rather than crash) when it is missing.
func sharedFile(_ relativePath: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL? {
    guard let url = SharedData.url(relativePath), FileManager.default.fileExists(atPath: url.path) else {
        Issue.record("missing \(relativePath) in the shared data", sourceLocation: sourceLocation)
        return nil
    }
    return url
}
