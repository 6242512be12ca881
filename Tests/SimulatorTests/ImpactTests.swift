// Impacts are cut by the gateway trigger from synthetic 100 Hz traces: crashes are 30–60 g pulses at ≥ 50 km/h
// followed by a standstill, drops are preceded by free fall, potholes stay under 8 g with the speed kept, and
// emergency stops produce no impact at all.

import Foundation
import Simulator
import Testing

@Suite struct Impacts {
    static func impacts(_ run: Run, _ device: ScenarioTruth) -> [Rec] {
        run.records(of: device.user).filter { $0.kind == "impact" }
    }

    @Test func impactRecordsMatchTheTruth() {
        for run in [Fixture.mix, Fixture.crashes, Fixture.potholes, Fixture.hardBrakes, Fixture.drops] {
            for device in run.truth {
                let records = Self.impacts(run, device)
                #expect(records.map(\.ms) == device.impacts.map { milliseconds($0.t) })
                #expect(records.map(\.peakG!) == device.impacts.map(\.peakG))
            }
        }
    }

    @Test func crashesAreViolentAndEndInAStandstill() throws {
        let run = Fixture.crashes
        for device in run.truth {
            let crash = try #require(device.crashes.first, "\(device.user) did not crash")
            #expect(device.crashes.count == 1)
            let record = try #require(Self.impacts(run, device).first { $0.ms == milliseconds(crash.t) })
            #expect(record.peakG! >= 30 && record.peakG! <= 60, "\(record.peakG!) g")
            #expect(record.durationMs! >= 60 && record.durationMs! <= 120, "\(record.durationMs!) ms")
            #expect(crash.speedBefore >= 50 / 3.6 && crash.speedBefore <= 70 / 3.6 + 0.01)
            #expect(crash.standstillAt - crash.t <= 1.0 && crash.standstillAt >= crash.t)
            let drive = try #require(device.drives.last)
            #expect(drive.endReason == "crash" && abs(drive.end - crash.standstillAt) < 0.001)

            let fixes = goodFixes(run, device)
            let before = try #require(fixes.last { $0.t < crash.t })
            // Up to a second before the crash, accelerating at ≤ 3 m/s² towards ≥ 50 km/h.
            #expect(before.speed! >= 50 / 3.6 - 3.3, "\(before.line)")
            // Standing still afterwards: GPS goes on at ~0 m/s (the driver may only get out minutes later).
            let after = fixes.filter { $0.t > crash.standstillAt + 1 && $0.t < crash.standstillAt + 60 }
            #expect(after.count > 30)
            #expect(after.allSatisfy { $0.speed! <= 0.5 }, "\(after.map(\.speed!))")
            // The crash site is where the position stays.
            #expect(after.allSatisfy { haversine($0, before) < 120 })

            let activities = run.records(of: device.user).filter { $0.kind == "activity" && $0.t > crash.t }
            #expect(activities.contains { $0.activity == "stationary" && $0.t < crash.t + 60 })
            #expect(!activities.contains { $0.activity == "automotive" && $0.confidence == "high" })
        }
    }

    @Test func secondaryHitsLaterThanTheWindowGetTheirOwnRecord() {
        let run = Run(SimulationOptions(devices: 12, seed: 21, durationMinutes: 12, scenario: "crash"))
        var secondaries = 0
        for device in run.truth {
            for crash in device.crashes {
                let records = Self.impacts(run, device).filter { $0.t >= crash.t && $0.t <= crash.t + 3.5 }
                if let hit = crash.secondaryHitT, hit - crash.t > 2.05 {
                    secondaries += 1
                    #expect(records.count == 2 && crash.secondaryRecorded)
                } else {
                    #expect(records.count == 1 && !crash.secondaryRecorded)
                }
            }
        }
        #expect(run.truth.filter { !$0.crashes.isEmpty }.count >= 10)
        _ = secondaries
    }

    @Test func crashesOptionMakesExactlyThatManyCrashingDevices() {
        let run = Run(SimulationOptions(devices: 4, seed: 2, durationMinutes: 15, crashes: 1))
        #expect(run.truth.map(\.scenario).filter { $0 == "crash" } == ["crash"])
        #expect(run.truth[0].user == "user-001" && run.truth[0].scenario == "crash")
        #expect(run.truth.filter { !$0.crashes.isEmpty }.map(\.user) == ["user-001"])
        #expect(run.records.filter { $0.kind == "impact" && $0.peakG! >= 30 }.allSatisfy { $0.user == "user-001" })
    }

    @Test func dropsArePrecededByFreeFall() throws {
        let run = Fixture.drops
        var drops = 0
        for device in run.truth {
            #expect(!device.drops.isEmpty, "\(device.user) dropped nothing")
            for drop in device.drops {
                drops += 1
                let record = try #require(Self.impacts(run, device).first { $0.ms == milliseconds(drop.t) })
                #expect(record.peakG! >= 16 && record.peakG! <= 28)
                #expect(record.durationMs! >= 5 && record.durationMs! <= 40)
                let samples = record.samples!
                let fall = samples.filter { $0[0] >= -0.55 && $0[0] <= -0.05 }
                #expect(fall.count >= 45)
                #expect(fall.allSatisfy { magnitude($0) < 0.25 }, "free fall \(fall.map(magnitude).max()!) g")
                // Held in the hand before it slipped (when the window reaches back that far).
                let held = samples.filter { $0[0] < -drop.freeFallSeconds - 0.1 }
                #expect(held.allSatisfy { magnitude($0) > 0.6 })
                // Lying still at 1 g afterwards.
                let resting = samples.filter { $0[0] > 1.0 }
                #expect(resting.allSatisfy { abs(magnitude($0) - 1) < 0.1 })
                // A person on foot: never faster than walking around the drop.
                let nearby = goodFixes(run, device).filter { abs($0.t - drop.t) < 10 }
                #expect(nearby.allSatisfy { $0.speed! <= 2.0 })
            }
        }
        #expect(drops >= 4)
    }

    @Test func potholesStayUnder8gAndKeepTheSpeed() throws {
        let run = Fixture.potholes
        var bumps = 0
        for device in run.truth {
            let fixes = goodFixes(run, device)
            for bump in device.bumps {
                bumps += 1
                #expect(bump.peakG >= 2.5 && bump.peakG < 8)
                #expect(bump.durationMs >= 10 && bump.durationMs <= 60)
                #expect(bump.speed >= 30 / 3.6)
                let before = try #require(fixes.last { $0.t <= bump.t })
                let after = try #require(fixes.first { $0.t > bump.t })
                guard before.speed! >= 0, after.speed! >= 0, after.t - before.t <= 2.01 else { continue }
                #expect(abs(after.speed! - before.speed!) <= 4, "\(before.line) → \(after.line)")
                #expect(after.speed! >= 5)
            }
            #expect(device.impacts.allSatisfy { $0.cause == "pothole" && $0.peakG < 8 })
        }
        #expect(bumps >= 8)
    }

    @Test func hardBrakesProduceNoImpact() throws {
        let run = Fixture.hardBrakes
        var brakes = 0
        for device in run.truth {
            #expect(!device.hardBrakes.isEmpty, "\(device.user) never braked hard")
            #expect(!device.impacts.contains { $0.cause == "hardBrake" })
            let fixes = goodFixes(run, device)
            for brake in device.hardBrakes {
                brakes += 1
                #expect(brake.deceleration >= 0.8 * 9.80665 - 0.01 && brake.deceleration <= 0.9 * 9.80665 + 0.01)
                #expect(!Self.impacts(run, device).contains { $0.t >= brake.start - 1 && $0.t <= brake.end + 2 })
                // The stop shows in the Doppler speeds: a drop of more than 6.5 m/s in one second.
                let around = fixes.filter { $0.t >= brake.start - 1 && $0.t <= brake.end + 1.5 && $0.speed! >= 0 }
                let steepest = zip(around, around.dropFirst()).map { $1.speed! - $0.speed! }.min() ?? 0
                #expect(steepest < -6.5, "\(device.user) \(steepest)")
            }
        }
        #expect(brakes >= 3)
    }
}
