// Pedometer records: cumulative, every 2–5 s while walking or running, at human step rates; none while still or
// riding; none at all without a pedometer.

import Foundation
import Simulator
import Testing

@Suite struct Steps {
    static func stepRecords(_ run: Run, _ device: ScenarioTruth) -> [Rec] {
        run.records(of: device.user).filter { $0.kind == "steps" }
    }

    /// Steps per second between consecutive records whose interval lies inside one of `legs`.
    static func rates(_ records: [Rec], within legs: [TravelTruth]) -> [Double] {
        zip(records, records.dropFirst()).compactMap { a, b in
            guard legs.contains(where: { a.t >= $0.start + 10 && b.t <= $0.end - 5 }) else { return nil }
            return Double(b.steps! - a.steps!) / (b.t - a.t)
        }
    }

    @Test func countsAreCumulativeAndNeverFasterThanRunning() {
        for run in [Fixture.mix, Fixture.crashes, Fixture.drops] {
            for device in run.truth {
                let records = Self.stepRecords(run, device)
                for (a, b) in zip(records, records.dropFirst()) {
                    #expect(b.steps! > a.steps!)
                    #expect(b.t - a.t >= 1.9)
                    // At most 3 steps/s, give or take the step the whole-number count may carry over.
                    #expect(Double(b.steps! - a.steps! - 1) / (b.t - a.t) <= 3.05, "\(a.line) → \(b.line)")
                }
                if let last = records.last { #expect(last.steps! <= device.totalSteps) }
            }
        }
    }

    @Test func walkingAndRunningCadences() throws {
        let walker = try #require(Fixture.mix.devices("walk").first)
        let walking = Self.rates(Self.stepRecords(Fixture.mix, walker), within: walker.otherLegs)
        #expect(walking.count > 100)
        #expect((1.65...2.05).contains(median(walking)), "walking median \(median(walking))")

        let runner = try #require(Fixture.mix.devices("run").first)
        let running = Self.rates(
            Self.stepRecords(Fixture.mix, runner), within: runner.otherLegs.filter { $0.mode == "running" })
        #expect(running.count > 50)
        #expect((2.55...3.05).contains(median(running)), "running median \(median(running))")
    }

    @Test func recordsComeEveryTwoToFiveSecondsWhileWalking() throws {
        let walker = try #require(Fixture.mix.devices("walk").first)
        let leg = try #require(walker.otherLegs.first)
        let records = Self.stepRecords(Fixture.mix, walker).filter { $0.t > leg.start + 10 && $0.t < leg.end - 10 }
        let gaps = zip(records, records.dropFirst()).map { $1.t - $0.t }
        #expect(!gaps.isEmpty)
        // Waiting at a crossing pauses the records; walking never does.
        #expect(median(gaps) >= 2 && median(gaps) <= 5)
        #expect(gaps.filter { $0 <= 5.1 }.count > gaps.count * 8 / 10)
    }

    @Test func noStepsWhileStillRidingOrWithoutPedometer() throws {
        let run = Fixture.mix
        let parked = try #require(run.devices("parked").first)
        #expect(Self.stepRecords(run, parked).isEmpty)

        let noPedometer = try #require(run.devices("noPedometer").first)
        #expect(!noPedometer.pedometerAvailable)
        #expect(Self.stepRecords(run, noPedometer).isEmpty)
        #expect(!noPedometer.drives.isEmpty)

        let bus = try #require(run.devices("bus").first)
        let ride = try #require(bus.otherLegs.first { $0.mode == "bus" })
        #expect(!Self.stepRecords(run, bus).contains { $0.t >= ride.start && $0.t <= ride.end })
        #expect(!Self.stepRecords(run, bus).isEmpty)

        let cyclist = try #require(run.devices("cycle").first)
        let bike = try #require(cyclist.otherLegs.first { $0.mode == "cycling" })
        #expect(!Self.stepRecords(run, cyclist).contains { $0.t >= bike.start + 6 && $0.t <= bike.end })
    }

    @Test func drivingAddsAtMostASpuriousStepPerBump() {
        for run in [Fixture.mix, Fixture.potholes] {
            for device in run.truth {
                let records = Self.stepRecords(run, device)
                for drive in device.drives {
                    let during = zip(records, records.dropFirst()).filter {
                        $1.t > drive.start + 6 && $1.t <= drive.end
                    }
                    let added = during.reduce(0) { $0 + $1.1.steps! - $1.0.steps! }
                    let bumps = device.bumps.filter { $0.t >= drive.start && $0.t <= drive.end }.count
                    #expect(added <= bumps, "\(device.user): \(added) steps while driving over \(bumps) bumps")
                    #expect(during.allSatisfy { $0.1.steps! - $0.0.steps! == 1 })
                }
            }
        }
    }
}
