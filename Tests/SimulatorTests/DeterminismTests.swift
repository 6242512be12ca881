import Foundation
import Simulator
import Testing

@Suite struct Determinism {
    @Test func sameOptionsGiveIdenticalBytes() {
        let options = SimulationOptions(devices: 4, seed: 42, durationMinutes: 8)
        let first = simulate(options)
        let second = simulate(options)
        #expect(!first.lines.isEmpty)
        #expect(first.lines == second.lines)
        #expect(first.truth == second.truth)
    }

    @Test func differentSeedsGiveDifferentStreams() {
        let a = simulate(SimulationOptions(devices: 2, seed: 1, durationMinutes: 5)).lines
        let b = simulate(SimulationOptions(devices: 2, seed: 2, durationMinutes: 5)).lines
        #expect(a != b)
    }

    @Test func aDeviceDoesNotDependOnHowManyDevicesRun() {
        let two = simulate(SimulationOptions(devices: 2, seed: 3, durationMinutes: 6)).lines
        let three = simulate(SimulationOptions(devices: 3, seed: 3, durationMinutes: 6)).lines
        let first = { (lines: [String]) in lines.filter { $0.contains("\"user\":\"user-001\"") } }
        #expect(!first(two).isEmpty)
        #expect(first(two) == first(three))
    }

    @Test func startTimeAndOriginAreOptions() throws {
        let options = SimulationOptions(
            devices: 1, seed: 4, start: 1_800_000_000, durationMinutes: 3, scenario: "parked",
            origin: Coordinate(latitude: 51.5, longitude: -0.12))
        let run = Run(options)
        let first = try #require(run.records.first)
        #expect(first.t >= 1_800_000_000 && first.t < 1_800_000_000 + 180)
        for fix in run.records where fix.kind == "location" && fix.hacc! >= 0 {
            #expect(abs(fix.lat! - 51.5) < 0.05 && abs(fix.lon! + 0.12) < 0.08)
        }
    }

    @Test func mixCyclesThroughEveryNonCrashScenario() {
        let scenarios = Fixture.mix.truth.map(\.scenario)
        #expect(Set(scenarios) == Set(SimulationOptions.mixScenarioNames))
        #expect(!scenarios.contains("crash"))
        // Deterministic from the seed.
        #expect(
            simulate(SimulationOptions(devices: 11, seed: 7, durationMinutes: 1)).truth.map(\.scenario) == scenarios)
    }
}
