import Foundation
@testable import DetectionEngine
import Recordings
import RoadSaveModel
import Testing

/// Driving behaviour on the enviroCar drives (issue 31; Contains enviroCar data (enviroCar.org), ODbL): each track has
/// the phone's GPS speed and the car's own OBD-II speed at every point, so what `DrivingBehaviour` finds in the
/// phone's GPS can be checked against what it finds in the car's speed on the same drive.
@Suite(.enabled(if: SharedData.has(.envirocar),
                "../shared/data/envirocar-car-tracks is absent: the enviroCar behaviour tests skipped"))
struct EnvirocarBehaviourTests {
    static func tracks() throws -> [EnvirocarConverter.Track] {
        try EnvirocarDriveTests.files.map { try EnvirocarConverter.parse(Array(try RecordingFile.data(of: $0)), fileName: $0.lastPathComponent) }
    }

    /// The drive's behaviour from one of its speeds: the phone's GPS (with its accuracy), or the car's OBD speed
    /// at the same points (accuracy taken as 5 m: the car's speedometer is no GPS estimate).
    static func judged(_ track: EnvirocarConverter.Track, obd: Bool) -> TripBehaviour {
        let settings = BehaviourSettings()
        var engine = DrivingBehaviour()
        var distance = 0.0
        var last: AcceptedFix?
        for point in track.points {
            guard let kmh = obd ? point.obdSpeedKmh : point.gpsSpeedKmh else { continue }
            let fix = AcceptedFix(t: point.t, latitude: point.lat, longitude: point.lon,
                                  speed: EnvirocarConverter.metresPerSecond(kmh: kmh),
                                  accuracy: obd ? 5 : (point.gpsAccuracy ?? 100), isMovement: kmh >= 7.2,
                                  course: point.gpsBearing.flatMap { (0..<360).contains($0) ? $0 : nil })
            if let last { distance += last.distance(to: fix) }
            last = fix
            engine.add(fix, settings: settings)
        }
        let duration = (track.points.last?.t ?? 0) - (track.points.first?.t ?? 0)
        return engine.judge(tripID: track.id ?? "?", endDate: track.points.last?.t ?? 0, distance: distance, duration: duration,
                            mode: .car, crashed: false,
                            settings: settings)
    }

    /// The car's steepest fall in speed between consecutive points (m/s², negative).
    static func steepestOBDBraking(_ track: EnvirocarConverter.Track) -> Double {
        let speeds = track.points.compactMap { point in point.obdSpeedKmh.map { (point.t, $0 / 3.6) } }
        return zip(speeds, speeds.dropFirst()).reduce(0.0) { steepest, pair in
            let elapsed = pair.1.0 - pair.0.0
            return elapsed > 0 ? min(steepest, (pair.1.1 - pair.0.1) / elapsed) : steepest
        }
    }

    @Test func noHardBrakingFromGPSWhereTheCarNeverBrakedHard() throws {
        let tracks = try Self.tracks()
        #expect(tracks.count == 112)
        var gentle = 0, sparse = 0
        var gpsByKind: [DrivingEventKind: Int] = [:], obdByKind: [DrivingEventKind: Int] = [:]
        var matchedByKind: [DrivingEventKind: Int] = [:]
        var smoothness: [(gps: Double, obd: Double)] = [], scores: [(gps: Double, obd: Double)] = []
        for track in tracks {
            let gps = Self.judged(track, obd: false)
            let obd = Self.judged(track, obd: true)
            if gps.unscored == .sparseGPS { sparse += 1 }
            if Self.steepestOBDBraking(track) > -2 {
                gentle += 1
                #expect(gps.count(of: .hardBraking) == 0,
                        "\(track.id ?? "?"): hard braking in GPS where the car's own speed never fell faster than 2 m/s²")
            }
            // How far the phone's events agree with the car's: the same kind overlapping within 3 s.
            for event in gps.events {
                gpsByKind[event.kind, default: 0] += 1
                if obd.events.contains(where: { $0.kind == event.kind && $0.start - 3 <= event.end && event.start <= $0.end + 3 }) {
                    matchedByKind[event.kind, default: 0] += 1
                }
            }
            for event in obd.events { obdByKind[event.kind, default: 0] += 1 }
            if let fromGPS = gps.longitudinalRMS, let fromOBD = obd.longitudinalRMS { smoothness.append((fromGPS, fromOBD)) }
            if let fromGPS = gps.score, let fromOBD = obd.score { scores.append((fromGPS, fromOBD)) }
        }
        let kinds = DrivingEventKind.allCases.map {
            "\($0.rawValue) GPS \(gpsByKind[$0] ?? 0), OBD \(obdByKind[$0] ?? 0), matched \(matchedByKind[$0] ?? 0)"
        }
        print("enviroCar behaviour: \(gentle) drives never braking harder than 2 m/s² by OBD; \(sparse) of \(tracks.count) sparseGPS; \(kinds.joined(separator: "; ")); longitudinal RMS, GPS against OBD, rank correlation \(Self.rankCorrelation(smoothness)) over \(smoothness.count) drives scored both ways; score, GPS against OBD, rank correlation \(Self.rankCorrelation(scores)) over \(scores.count)")
        #expect(gentle > 0)
        // The phone's GPS ranks the drives by how smoothly they were driven as the car's own speed does.
        #expect(smoothness.count >= 10 && Self.rankCorrelation(smoothness) >= 0.7)
    }

    /// Spearman's rank correlation of the pairs (no ties expected in measured values).
    static func rankCorrelation(_ pairs: [(gps: Double, obd: Double)]) -> Double {
        guard pairs.count > 2 else { return .nan }
        func ranks(_ values: [Double]) -> [Double] {
            var rank = [Double](repeating: 0, count: values.count)
            for (position, index) in values.indices.sorted(by: { values[$0] < values[$1] }).enumerated() {
                rank[index] = Double(position)
            }
            return rank
        }
        let a = ranks(pairs.map(\.gps)), b = ranks(pairs.map(\.obd))
        let n = Double(pairs.count)
        let squares = zip(a, b).reduce(0.0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
        return 1 - 6 * squares / (n * (n * n - 1))
    }
}
