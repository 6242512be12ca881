// Shared fixtures and helpers: small simulations run once (static lets are lazy and thread-safe) and their lines
// parsed back with JSONSerialization, as an outside consumer would.

import Foundation
import Simulator

/// One parsed record.
struct Rec: Sendable {
    let line: String
    let keys: Set<String>
    let kind: String
    let app: String
    let user: String
    let seq: Int
    let t: Double
    let lat: Double?
    let lon: Double?
    let speed: Double?
    let course: Double?
    let hacc: Double?
    let activity: String?
    let confidence: String?
    let steps: Int?
    let peakG: Double?
    let durationMs: Double?
    let samples: [[Double]]?

    init?(_ line: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let kind = object["kind"] as? String, let app = object["app"] as? String,
            let user = object["user"] as? String, let seq = (object["seq"] as? NSNumber)?.intValue,
            let t = (object["t"] as? NSNumber)?.doubleValue
        else { return nil }
        func number(_ key: String) -> Double? { (object[key] as? NSNumber)?.doubleValue }
        self.line = line
        keys = Set(object.keys)
        self.kind = kind
        self.app = app
        self.user = user
        self.seq = seq
        self.t = t
        lat = number("lat")
        lon = number("lon")
        speed = number("speed")
        course = number("course")
        hacc = number("hacc")
        activity = object["activity"] as? String
        confidence = object["confidence"] as? String
        steps = (object["steps"] as? NSNumber)?.intValue
        peakG = number("peakG")
        durationMs = number("durationMs")
        samples = (object["samples"] as? [Any])?.map {
            ($0 as? [Any] ?? []).map { ($0 as? NSNumber)?.doubleValue ?? .nan }
        }
    }

    /// Milliseconds, for exact comparisons with the truth.
    var ms: Int64 { Int64((t * 1000).rounded()) }
}

func milliseconds(_ t: Double) -> Int64 { Int64((t * 1000).rounded()) }

/// A simulation, its lines parsed, and its truth.
struct Run: Sendable {
    let options: SimulationOptions
    let lines: [String]
    let records: [Rec]
    let truth: [ScenarioTruth]

    init(_ options: SimulationOptions) {
        self.options = options
        (lines, truth) = simulate(options)
        records = lines.compactMap(Rec.init)
    }

    func records(of user: String) -> [Rec] { records.filter { $0.user == user } }

    func devices(_ scenario: String) -> [ScenarioTruth] { truth.filter { $0.scenario == scenario } }
}

enum Fixture {
    /// Every non-crash scenario once (mix cycles through the 11 of them).
    static let mix = Run(SimulationOptions(devices: 11, seed: 7, durationMinutes: 40))
    static let crashes = Run(SimulationOptions(devices: 4, seed: 11, durationMinutes: 20, scenario: "crash"))
    static let potholes = Run(SimulationOptions(devices: 3, seed: 5, durationMinutes: 25, scenario: "pothole"))
    static let hardBrakes = Run(SimulationOptions(devices: 3, seed: 9, durationMinutes: 25, scenario: "hardBrake"))
    static let drops = Run(SimulationOptions(devices: 4, seed: 13, durationMinutes: 20, scenario: "phoneDrop"))
}

/// Great-circle distance in metres.
func haversine(_ a: Rec, _ b: Rec) -> Double {
    let radius = 6_371_008.8
    let p1 = a.lat! * .pi / 180
    let p2 = b.lat! * .pi / 180
    let dp = p2 - p1
    let dl = (b.lon! - a.lon!) * .pi / 180
    let h = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2)
    return 2 * radius * asin(h.squareRoot())
}

extension ScenarioTruth {
    /// Times (ms) of the deliberately broken fixes.
    var brokenFixes: Set<Int64> { Set((gpsOutliers + invalidFixes).map(milliseconds)) }
}

/// The device's location records without the deliberately broken fixes.
func goodFixes(_ run: Run, _ device: ScenarioTruth) -> [Rec] {
    let broken = device.brokenFixes
    return run.records(of: device.user).filter { $0.kind == "location" && !broken.contains($0.ms) }
}

/// Magnitude of an impact sample [dt, x, y, z].
func magnitude(_ sample: [Double]) -> Double {
    (sample[1] * sample[1] + sample[2] * sample[2] + sample[3] * sample[3]).squareRoot()
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}
