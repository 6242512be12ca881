// Activity records behave like Core Motion: on change plus refreshes, with the classifier's latency, automotive
// medium before high when a drive starts, automotive + stationary together at red lights.

import Foundation
import Simulator
import Testing

@Suite struct Activity {
    static func activities(_ run: Run, _ device: ScenarioTruth) -> [Rec] {
        run.records(of: device.user).filter { $0.kind == "activity" }
    }

    /// The last report (ignoring unknown) at or before `t`.
    static func reported(_ records: [Rec], at t: Double) -> Rec? {
        records.last { $0.t <= t && $0.activity != "unknown" }
    }

    @Test func drivesStartWithMediumThenHighConfidence() {
        var checked = 0
        for run in [Fixture.mix, Fixture.potholes, Fixture.hardBrakes] {
            for device in run.truth where device.activityAvailable {
                let records = Self.activities(run, device)
                for drive in device.drives where drive.end - drive.start > 120 {
                    let automotive = records.filter { $0.activity == "automotive" && $0.t >= drive.start }
                    guard let firstHigh = automotive.first(where: { $0.confidence == "high" }),
                        let first = automotive.first
                    else {
                        Issue.record("\(device.user): no automotive high during the drive")
                        continue
                    }
                    #expect(first.confidence == "medium")
                    #expect(first.t - drive.start >= 3 && first.t - drive.start <= 10)
                    #expect(
                        firstHigh.t - drive.start >= 15 && firstHigh.t - drive.start <= 45,
                        "\(device.user): high after \(firstHigh.t - drive.start) s")
                    checked += 1
                }
            }
        }
        #expect(checked >= 5)
    }

    @Test func redLightsReportAutomotiveAndStationaryTogether() {
        for run in [Fixture.mix, Fixture.potholes] {
            for device in run.truth where device.activityAvailable && !device.drives.isEmpty {
                let records = Self.activities(run, device)
                let pairs = zip(records, records.dropFirst()).filter { a, b in
                    a.t == b.t && a.activity == "automotive" && a.confidence == "medium" && b.activity == "stationary"
                }
                // At least one red light and the final stop at the car park.
                #expect(pairs.count >= 2, "\(device.user) \(device.scenario)")
                #expect(
                    pairs.allSatisfy { pair in
                        device.drives.contains { pair.0.t >= $0.start && pair.0.t <= $0.end + 120 }
                    })
            }
        }
    }

    @Test func walkingRunningCyclingAndBusAreRecognised() throws {
        let run = Fixture.mix
        let expectations: [(scenario: String, mode: String, activity: String)] = [
            ("walk", "walking", "walking"), ("run", "running", "running"), ("cycle", "cycling", "cycling"),
            ("bus", "bus", "automotive"),
        ]
        for (scenario, mode, activity) in expectations {
            let device = try #require(run.devices(scenario).first)
            let leg = try #require(device.otherLegs.first { $0.mode == mode })
            let records = Self.activities(run, device)
            // Sample the leg's second half: the classifier has caught up by then.
            let middle = (leg.start + leg.end) / 2
            let samples = stride(from: middle, to: leg.end - 5, by: 30).compactMap { Self.reported(records, at: $0) }
            #expect(!samples.isEmpty)
            let matching = samples.filter { $0.activity == activity && $0.confidence == "high" }
            // Stops at crossings, red lights and bus stops are reported as stationary now and then.
            let share = ["walking": 0.8, "running": 0.8, "cycling": 0.7, "bus": 0.5][mode]!
            #expect(
                Double(matching.count) >= Double(samples.count) * share,
                "\(scenario): \(samples.map { "\($0.activity!) \($0.confidence!)" })")
        }
    }

    @Test func parkedPhonesAreStationary() throws {
        let device = try #require(Fixture.mix.devices("parked").first)
        let records = Self.activities(Fixture.mix, device)
        #expect(records.count >= 10)
        #expect(
            records.allSatisfy {
                ($0.activity == "stationary" && $0.confidence == "high")
                    || ($0.activity == "unknown" && $0.confidence == "low")
            })
        // Refreshed every 60–120 s while unchanged.
        let gaps = zip(records, records.dropFirst()).map { $1.t - $0.t }
        #expect(gaps.allSatisfy { $0 <= 121 })
    }

    @Test func devicesWithoutClassifierSendNoActivity() throws {
        let device = try #require(Fixture.mix.devices("noActivity").first)
        #expect(!device.activityAvailable)
        #expect(Self.activities(Fixture.mix, device).isEmpty)
        #expect(!device.drives.isEmpty)
    }
}
