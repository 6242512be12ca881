import Foundation
import Recordings
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Driving behaviour on the enviroCar drives (issue 31; Contains enviroCar data (enviroCar.org), ODbL): each track has
/// the phone's GPS speed and the car's own OBD-II speed at every point, so what `DrivingBehaviour` finds in the
/// phone's GPS can be checked against what it finds in the car's speed on the same drive.
@Suite(
    .enabled(
        if: SharedData.has(.envirocar),
        "../shared/data/envirocar-car-tracks is absent: the enviroCar behaviour tests skipped"))
struct EnvirocarBehaviourTests {
    static func tracks() throws -> [EnvirocarConverter.Track] {
        try EnvirocarDriveTests.files.map {
            try EnvirocarConverter.parse(Array(try RecordingFile.data(of: $0)), fileName: $0.lastPathComponent)
        }
    }

    /// The drive's behaviour from one of its speeds: the phone's GPS (with its accuracy), or the car's OBD speed
    /// at the same points (accuracy taken as 5 m: the car's speedometer is no GPS estimate).
    static func judged(_ track: EnvirocarConverter.Track, obd: Bool, settings: BehaviourSettings = BehaviourSettings())
        -> TripBehaviour
    {
        var engine = DrivingBehaviour()
        var distance = 0.0
        var last: AcceptedFix?
        for point in track.points {
            guard let kmh = obd ? point.obdSpeedKmh : point.gpsSpeedKmh else { continue }
            let fix = AcceptedFix(
                t: point.t, latitude: point.lat, longitude: point.lon,
                speed: EnvirocarConverter.metresPerSecond(kmh: kmh),
                accuracy: obd ? 5 : (point.gpsAccuracy ?? 100), isMovement: kmh >= 7.2,
                course: point.gpsBearing.flatMap { (0..<360).contains($0) ? $0 : nil })
            if let last { distance += last.distance(to: fix) }
            last = fix
            engine.add(fix, settings: settings)
        }
        let duration = (track.points.last?.t ?? 0) - (track.points.first?.t ?? 0)
        return engine.judge(
            tripID: track.id ?? "?", endDate: track.points.last?.t ?? 0, distance: distance, duration: duration,
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
        var gentle = 0
        var sparse = 0
        var gpsByKind: [DrivingEventKind: Int] = [:]
        var obdByKind: [DrivingEventKind: Int] = [:]
        var matchedByKind: [DrivingEventKind: Int] = [:]
        var smoothness: [(gps: Double, obd: Double)] = []
        var scores: [(gps: Double, obd: Double)] = []
        for track in tracks {
            let gps = Self.judged(track, obd: false)
            let obd = Self.judged(track, obd: true)
            if gps.unscored == .sparseGPS { sparse += 1 }
            if Self.steepestOBDBraking(track) > -2 {
                gentle += 1
                #expect(
                    gps.count(of: .hardBraking) == 0,
                    "\(track.id ?? "?"): hard braking in GPS where the car's own speed never fell faster than 2 m/s²")
            }
            // How far the phone's events agree with the car's: the same kind overlapping within 3 s.
            for event in gps.events {
                gpsByKind[event.kind, default: 0] += 1
                if obd.events.contains(where: {
                    $0.kind == event.kind && $0.start - 3 <= event.end && event.start <= $0.end + 3
                }) {
                    matchedByKind[event.kind, default: 0] += 1
                }
            }
            for event in obd.events { obdByKind[event.kind, default: 0] += 1 }
            if let fromGPS = gps.longitudinalRMS, let fromOBD = obd.longitudinalRMS {
                smoothness.append((fromGPS, fromOBD))
            }
            if let fromGPS = gps.score, let fromOBD = obd.score { scores.append((fromGPS, fromOBD)) }
        }
        let kinds = DrivingEventKind.allCases.map {
            "\($0.rawValue) GPS \(gpsByKind[$0] ?? 0), OBD \(obdByKind[$0] ?? 0), matched \(matchedByKind[$0] ?? 0)"
        }
        print(
            "enviroCar behaviour: \(gentle) drives never braking harder than 2 m/s² by OBD; \(sparse) of \(tracks.count) sparseGPS; \(kinds.joined(separator: "; ")); longitudinal RMS, GPS against OBD, rank correlation \(Self.rankCorrelation(smoothness)) over \(smoothness.count) drives scored both ways; score, GPS against OBD, rank correlation \(Self.rankCorrelation(scores)) over \(scores.count)"
        )
        #expect(gentle > 0)
        // The phone's GPS ranks the drives by how smoothly they were driven as the car's own speed does.
        #expect(smoothness.count >= 10 && Self.rankCorrelation(smoothness) >= 0.7)
    }

    /// The score's shape, fitted on the drives of the cars whose fixes come every 5 s (judged with pairs up to 6.5 s
    /// for the fit only: by default they are `sparseGPS`) and checked on the drives of the cars with 2 s fixes, scored
    /// as the product scores them. The reference is the car's own OBD speed: its longitudinal spread (how hard the
    /// speed changed), and the score judged from it.
    @Test func theScoreIsFittedOnSomeCarsAndChecksOnTheOthers() throws {
        var seen = Set<String>()
        let tracks = try Self.tracks().filter { track in
            // The dataset holds some drives twice under two track IDs.
            seen.insert("\(track.vehicle ?? "?")@\(track.points.first?.t ?? 0)/\(track.points.count)").inserted
        }
        var wide = BehaviourSettings()
        wide.maximumPairInterval = 6.5
        let check = tracks.filter { Self.judged($0, obd: false).unscored == nil }
        let checkCars = Set(check.compactMap(\.vehicle))
        let fit = tracks.filter {
            !checkCars.contains($0.vehicle ?? "?") && Self.judged($0, obd: false, settings: wide).unscored == nil
        }
        let fitCars = Set(fit.compactMap(\.vehicle))
        #expect(checkCars.count >= 2 && fitCars.count >= 8 && fit.count >= 50 && check.count >= 10)

        /// Rank agreement of the GPS score with the car's own spread (negated: more spread, lower score), and with
        /// the score judged from the car's speed.
        func agreement(_ drives: [EnvirocarConverter.Track], _ settings: BehaviourSettings) -> (
            spread: Double, score: Double
        ) {
            var bySpread: [(gps: Double, obd: Double)] = []
            var byScore: [(gps: Double, obd: Double)] = []
            for drive in drives {
                let gps = Self.judged(drive, obd: false, settings: settings)
                let obd = Self.judged(drive, obd: true, settings: settings)
                guard let score = gps.score, let obdScore = obd.score, let obdSpread = obd.longitudinalRMS else {
                    continue
                }
                bySpread.append((score, -obdSpread))
                byScore.append((score, obdScore))
            }
            return (Self.rankCorrelation(bySpread), Self.rankCorrelation(byScore))
        }
        let defaults = BehaviourSettings()
        func onFitDrives(_ change: (inout BehaviourSettings) -> Void) -> (spread: Double, score: Double) {
            var settings = wide
            change(&settings)
            return agreement(fit, settings)
        }
        // The lateral spread's weight is chosen by agreement with the car's own spread; how much events weigh, by
        // agreement with the score the car's own speed gives.
        let lateral = [0.0, 0.25, 0.5, 1].map { weight in (weight, onFitDrives { $0.lateralWeight = weight }.spread) }
        let rates = [10.0, 20, 40, 80, 160, 320].map { rate in (rate, onFitDrives { $0.eventsHalvingRate = rate }.score)
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let medianSpread = median(fit.compactMap { Self.judged($0, obd: false, settings: wide).longitudinalRMS })
        let onFit = agreement(fit, wide)
        let onCheck = agreement(check, defaults)
        // Drivers: each fit car's median score against its median spread by the car's own speed.
        let byCar = fitCars.map { car in
            let drives = fit.filter { $0.vehicle == car }
            return (
                gps: median(drives.compactMap { Self.judged($0, obd: false, settings: wide).score }),
                obd: -median(drives.compactMap { Self.judged($0, obd: true, settings: wide).longitudinalRMS })
            )
        }
        let carsAgreement = Self.rankCorrelation(byCar)
        func shown(_ choices: [(Double, Double)]) -> String {
            choices.map { "\($0.0): \(String(format: "%.3f", $0.1))" }.joined(separator: ", ")
        }
        print(
            "enviroCar score fit on \(fit.count) drives of \(fitCars.count) cars, checked on \(check.count) drives of "
                + "\(checkCars.count): lateral weight \(shown(lateral)); events halving rate \(shown(rates)); median spread "
                + String(format: "%.3f", medianSpread) + "; rank agreement with the car's own spread / score: fit "
                + String(
                    format: "%.3f / %.3f, check %.3f / %.3f", onFit.spread, onFit.score, onCheck.spread, onCheck.score)
                + "; the fit cars' medians against their own spread " + String(format: "%.3f", carsAgreement))
        let bestLateral = lateral.map(\.1).max() ?? .nan
        let bestRate = rates.map(\.1).max() ?? .nan
        #expect(lateral.first { $0.0 == defaults.lateralWeight }?.1 == bestLateral, "lateralWeight is the fit's best")
        #expect(
            (rates.first { $0.0 == defaults.eventsHalvingRate }?.1 ?? 0) >= bestRate - 0.01,
            "eventsHalvingRate is within 0.01 of the fit's best")
        // The fit drives' median spread scores 75: 1 + (spread / halving)² = 4/3.
        #expect(abs(defaults.smoothnessHalvingRMS - medianSpread * 3.0.squareRoot()) < 0.05)
        // On cars it was not fitted on, at their own 2 s fixes, it still ranks drives as the car's speed does.
        #expect(onFit.spread >= 0.85 && onCheck.spread >= 0.5 && onCheck.score >= 0.5)
        // And it tells the cars (drivers) apart as their own speed does.
        #expect(carsAgreement >= 0.8)
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
        let a = ranks(pairs.map(\.gps))
        let b = ranks(pairs.map(\.obd))
        let n = Double(pairs.count)
        let squares = zip(a, b).reduce(0.0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
        return 1 - 6 * squares / (n * (n * n - 1))
    }
}
