// The motion behind the records must be physically sound: speeds and accelerations of real people and cars, and
// positions that integrate the speeds. GPS noise is allowed for: Doppler speed ±0.3 m/s (and 0 below 0.5 m/s), position
// error correlated with sigma ≈ hacc/2.

import Foundation
import Simulator
import Testing

@Suite struct Physics {
    static let runs = [Fixture.mix, Fixture.crashes, Fixture.potholes, Fixture.hardBrakes]

    @Test func accelerationsBetweenFixesArePlausible() {
        var hardestBraking = 0.0
        for run in Self.runs {
            for device in run.truth {
                let crashes = device.crashes.map(\.t)
                let fixes = goodFixes(run, device)
                for (a, b) in zip(fixes, fixes.dropFirst()) where b.ms - a.ms == 1000 {
                    guard a.speed! >= 0, b.speed! >= 0, !crashes.contains(where: { a.t >= $0 - 1.5 && a.t < $0 + 5 })
                    else {
                        continue
                    }
                    let acceleration = b.speed! - a.speed!
                    // Cars accelerate at ≤ 3 m/s², brake at ≤ 9 m/s² (emergency stops); plus Doppler noise and
                    // the 0.5 m/s floor below which phones report 0.
                    #expect(acceleration <= 3.0 + 0.6 + 0.5, "\(device.user) \(a.line) → \(b.line)")
                    #expect(acceleration >= -(9.0 + 0.6 + 0.5), "\(device.user) \(a.line) → \(b.line)")
                    hardestBraking = min(hardestBraking, acceleration)
                }
            }
        }
        // The emergency stops really happened.
        #expect(hardestBraking < -6.5)
    }

    @Test func positionsIntegrateTheSpeeds() {
        var compared = 0
        for run in Self.runs {
            for device in run.truth {
                let fixes = goodFixes(run, device)
                for (a, b) in zip(fixes, fixes.dropFirst()) where b.ms - a.ms == 1000 {
                    guard a.speed! >= 0, b.speed! >= 0, a.hacc! >= 0, a.hacc! <= 15, b.hacc! <= 15 else { continue }
                    let expected = (a.speed! + b.speed!) / 2
                    let tolerance = 2 + 0.8 * max(a.hacc!, b.hacc!)
                    #expect(abs(haversine(a, b) - expected) <= tolerance, "\(a.line) → \(b.line)")
                    compared += 1
                }
            }
        }
        #expect(compared > 10_000)
    }

    @Test func legsCoverTheirDistanceAtTheirSpeeds() {
        let limits: [String: (low: Double, high: Double)] = [
            "walking": (1.2, 1.6), "running": (2.5, 3.5), "cycling": (5.0, 6.0), "bus": (0, 50 / 3.6),
            "car": (0, 120 / 3.6),
        ]
        for run in Self.runs {
            for device in run.truth {
                let fixes = goodFixes(run, device)
                for leg in device.drives + device.otherLegs {
                    let limit = limits[leg.mode]!
                    #expect(leg.maxSpeed <= limit.high + 0.01, "\(device.user) \(leg.mode) \(leg.maxSpeed)")
                    let inside = fixes.filter { $0.t > leg.start && $0.t <= leg.end }
                    #expect(inside.allSatisfy { $0.speed! <= limit.high + 0.31 }, "\(device.user) \(leg.mode)")
                    guard leg.end - leg.start > 120, leg.mode != "car", leg.mode != "bus" else { continue }
                    // Average speed over the leg, stops at crossings included, near the walking/running/cycling pace.
                    let average = leg.distanceMetres / (leg.end - leg.start)
                    #expect(average > limit.low * 0.6 && average <= limit.high, "\(device.user) \(leg.mode) \(average)")
                }
                // Doppler speeds integrate to the leg's distance.
                for leg in device.drives + device.otherLegs where leg.distanceMetres > 1000 {
                    let integrated = fixes.filter { $0.t > leg.start && $0.t <= leg.end + 1 }
                        .reduce(0.0) { $0 + max(0, $1.speed!) }
                    #expect(
                        abs(integrated - leg.distanceMetres) / leg.distanceMetres < 0.08,
                        "\(device.user) \(leg.mode) \(integrated) vs \(leg.distanceMetres)")
                }
            }
        }
    }

    @Test func cityDrivingIsCitySpeedAndHighwaysStayUnder120() {
        for run in Self.runs {
            for device in run.truth {
                for drive in device.drives {
                    #expect(drive.maxSpeed >= 30 / 3.6 && drive.maxSpeed <= 120 / 3.6 + 0.01)
                    let average = drive.distanceMetres / (drive.end - drive.start)
                    #expect(average > 4 && average < 25, "\(device.user) average \(average) m/s")
                }
            }
        }
    }

    @Test func brokenFixesAreRecognisable() throws {
        var outliers = 0
        for run in Self.runs {
            for device in run.truth {
                let records = run.records(of: device.user).filter { $0.kind == "location" }
                let invalid = Set(device.invalidFixes.map(milliseconds))
                let outlierTimes = Set(device.gpsOutliers.map(milliseconds))
                for (index, fix) in records.enumerated() {
                    if invalid.contains(fix.ms) {
                        #expect(fix.hacc == -1 && fix.speed == -1)
                    } else {
                        #expect(fix.hacc! > 0)
                    }
                    // An outlier is ~300 m from both neighbours while claiming a normal accuracy.
                    if outlierTimes.contains(fix.ms), index > 0, index + 1 < records.count {
                        outliers += 1
                        #expect(fix.hacc! <= 65)
                        #expect(haversine(records[index - 1], fix) > 150, "\(fix.line)")
                        #expect(haversine(fix, records[index + 1]) > 150, "\(fix.line)")
                    }
                }
            }
        }
        #expect(outliers > 0)
        let invalidCount = Self.runs.reduce(0) { $0 + $1.truth.reduce(0) { $0 + $1.invalidFixes.count } }
        #expect(invalidCount > 0)
    }

    @Test func accuracyIsMostlyGoodWithOccasionalUrbanCanyons() {
        let hacc = Fixture.mix.records.compactMap { $0.kind == "location" && $0.hacc! >= 0 ? $0.hacc : nil }
        let good = hacc.filter { $0 <= 15 }.count
        #expect(Double(good) / Double(hacc.count) > 0.85)
        #expect(hacc.contains { $0 >= 20 })
        #expect(hacc.allSatisfy { $0 >= 3 && $0 <= 65 })
    }

    @Test func parkedPhonesJitterAroundOneSpot() throws {
        let device = try #require(Fixture.mix.devices("parked").first)
        let fixes = goodFixes(Fixture.mix, device)
        #expect(fixes.count > 2000)
        #expect(fixes.allSatisfy { $0.speed == 0 || $0.speed == -1 })
        #expect(fixes.allSatisfy { $0.hacc! >= 5 && $0.hacc! <= 30 })
        let first = fixes[0]
        #expect(fixes.allSatisfy { haversine(first, $0) < 150 })
        #expect(fixes.contains { haversine(first, $0) > 3 })
        #expect(device.drives.isEmpty && device.otherLegs.isEmpty)
    }
}
