// `roadsave simulate` as a command: help, bad options (exit 2), files written.

import Foundation
import Simulator
import Testing

@Suite struct Command {
    @Test func helpExitsZero() {
        #expect(SimulateCommand.run(["--help"]) == 0)
        #expect(SimulateCommand.run(["-h"]) == 0)
        for flag in [
            "--devices", "--seed", "--start", "--duration", "--scenario", "--crashes", "--app", "--origin",
            "--disorder", "--output", "--truth", "--driving-style",
        ] {
            #expect(SimulateCommand.usage.contains(flag))
        }
    }

    @Test(arguments: [
        ["--devices", "0"], ["--devices", "many"], ["--devices"], ["--bogus"], ["extra"], ["--scenario", "flying"],
        ["--devices", "2", "--crashes", "3"], ["--crashes", "-1"], ["--origin", "200,0"], ["--origin", "12"],
        ["--start", "yesterday"], ["--duration", "0"], ["--duration", "soon"], ["--seed", "-4"], ["--app", ""],
        ["--driving-style", "reckless"], ["--driving-style"],
    ])
    func badOptionsExitTwo(arguments: [String]) {
        #expect(SimulateCommand.run(arguments) == 2)
    }

    @Test func writesRecordsAndTruthFiles() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent(
                "simulate-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("records.ndjson").path
        let truthPath = directory.appendingPathComponent("truth.json").path

        let status = SimulateCommand.run([
            "--devices", "2", "--seed", "5", "--duration", "6", "--start",
            "2026-03-02T06:30:00Z", "--scenario", "commute", "--app", "fleet-7",
            "--origin", "-26.2041,28.0473", "--output", output, "--truth", truthPath,
        ])
        #expect(status == 0)
        let written = try String(contentsOfFile: output, encoding: .utf8)
        let expected = simulate(
            SimulationOptions(
                devices: 2, seed: 5, start: 1_772_433_000, durationMinutes: 6,
                scenario: "commute", app: "fleet-7",
                origin: Coordinate(latitude: -26.2041, longitude: 28.0473)))
        #expect(written == expected.lines.joined(separator: "\n") + "\n")
        let truth = try JSONDecoder().decode(
            [ScenarioTruth].self, from: Data(contentsOf: URL(fileURLWithPath: truthPath)))
        #expect(truth == expected.truth)
        #expect(truth.map(\.user) == ["user-001", "user-002"])
        #expect(expected.lines.first?.contains("\"app\":\"fleet-7\"") == true)
    }

    @Test func aDrivingStyleChangesOnlyTheDriving() throws {
        let options = SimulationOptions(devices: 4, seed: 3, durationMinutes: 20, scenario: "commute")
        var named = options
        named.drivingStyleName = "normal"
        #expect(simulate(named) == simulate(options), "normal is the default, byte for byte")
        var calm = options
        calm.drivingStyleName = "calm"
        var mixed = options
        mixed.drivingStyleName = "mixed"
        let (calmLines, calmTruth) = simulate(calm)
        #expect(calmLines != simulate(options).lines)
        #expect(calmTruth.map(\.drivingStyle) == ["calm", "calm", "calm", "calm"])
        #expect(simulate(mixed).truth.map(\.drivingStyle) == ["calm", "normal", "aggressive", "calm"])
        // The same device walks to its car from the same place and drives off the same way: only the driving differs.
        let normalTruth = simulate(options).truth
        for (a, b) in zip(calmTruth, normalTruth) {
            #expect(a.drives.first?.startLatitude == b.drives.first?.startLatitude)
            #expect(a.drives.first?.startLongitude == b.drives.first?.startLongitude)
        }
        // Every true manoeuvre is beyond its threshold for at least a second.
        var aggressive = options
        aggressive.drivingStyleName = "aggressive"
        let manoeuvres = simulate(aggressive).truth.flatMap(\.manoeuvres)
        #expect(!manoeuvres.isEmpty)
        for manoeuvre in manoeuvres {
            #expect(manoeuvre.end - manoeuvre.start >= 0.999)
            #expect(manoeuvre.kind == "hardBraking" ? manoeuvre.peak <= -3 : manoeuvre.peak >= 2.5)
        }
    }

    @Test func truthJSONHasTheDocumentedShape() throws {
        let truth = Fixture.crashes.truth
        let object = try #require(try JSONSerialization.jsonObject(with: truthJSON(truth)) as? [[String: Any]])
        let first = try #require(object.first)
        for key in [
            "app", "user", "device", "scenario", "drivingStyle", "manoeuvres", "activityAvailable",
            "pedometerAvailable", "firstRecordT",
            "lastRecordT", "drives", "otherLegs", "crashes", "drops", "bumps", "hardBrakes", "impacts",
            "gpsOutliers", "invalidFixes", "totalSteps",
        ] {
            #expect(first[key] != nil, "missing \(key)")
        }
        let drive = try #require((first["drives"] as? [[String: Any]])?.first)
        for key in ["mode", "start", "end", "distanceMetres", "maxSpeed", "endReason", "startLatitude", "endLatitude"] {
            #expect(drive[key] != nil, "missing \(key)")
        }
    }
}
