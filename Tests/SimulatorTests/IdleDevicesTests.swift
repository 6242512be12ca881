// `roadsave simulate --idle-devices N`: N devices that announce themselves once and stay silent, merged by time with
// the active devices, whose records stay exactly as without them.

import Foundation
import RecordCodecs
import RoadSaveModel
import Simulator
import Testing

@Suite struct IdleDevicesTests {
    static let options = SimulationOptions(devices: 3, seed: 11, durationMinutes: 10)

    static func decoded(_ lines: [String]) throws -> [SensorRecord] {
        try lines.map { try RecordDecoding.record(fromJSON: Array($0.utf8)) }
    }

    @Test func eachIdleDeviceSendsCapabilitiesAndOneFixThenNothing() throws {
        let (lines, _) = simulate(Self.options, idle: IdleDeviceOptions(count: 1000))
        let records = try Self.decoded(lines)
        let idle = records.filter { $0.device.user.hasPrefix("idle-") }
        #expect(idle.count == 2000)
        let byUser = Dictionary(grouping: idle, by: \.device.user)
        #expect(byUser.count == 1000)
        #expect(byUser["idle-0000001"] != nil && byUser["idle-0001000"] != nil)
        for (user, sent) in byUser {
            #expect(sent.map(\.seq) == [0, 1], "\(user)")
            guard case .capabilities = sent[0].payload, case .location(let fix) = sent[1].payload else {
                Issue.record("\(user): \(sent.map(\.payload))")
                continue
            }
            #expect(fix.speed == 0)
            #expect(abs(sent[1].t - sent[0].t - 0.2) < 0.001)
        }
        // Announced evenly over the run, and the whole output in time order.
        let first = idle.map(\.t).min()!
        let last = idle.map(\.t).max()!
        #expect(first == Self.options.start)
        #expect(last > Self.options.start + 9 * 60 && last < Self.options.start + 10 * 60)
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.t <= $1.t })
    }

    @Test func theActiveDevicesRecordsAreUnchanged() throws {
        let (withIdle, truth) = simulate(Self.options, idle: IdleDeviceOptions(count: 50))
        let (alone, aloneTruth) = simulate(Self.options)
        let active = withIdle.filter { !$0.contains("\"user\":\"idle-") }
        #expect(active == alone)
        #expect(truth == aloneTruth)
    }

    @Test func theCommandWritesTheSameAndRefusesBadCombinations() throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent(
                "idle-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max)).ndjson"
            ).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(
            SimulateCommand.run([
                "--devices", "3", "--seed", "11", "--duration", "10", "--idle-devices", "40",
                "--output", path,
            ]) == 0)
        let written = try String(contentsOfFile: path, encoding: .utf8)
        #expect(
            written == simulate(Self.options, idle: IdleDeviceOptions(count: 40)).lines.joined(separator: "\n") + "\n")
        #expect(SimulateCommand.usage.contains("--idle-devices"))
        #expect(SimulateCommand.run(["--idle-devices", "many"]) == 2)
        #expect(SimulateCommand.run(["--idle-devices", "-1"]) == 2)
        #expect(SimulateCommand.run(["--idle-devices", "5", "--disorder"]) == 2)
        #expect(SimulateCommand.run(["--idle-devices", "5", "--user-prefix", "idle-"]) == 2)
    }
}
