import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel
import Simulator
import Testing

/// detection writes its checkpoint rows with `StreamingJSONEncoder`: over simulated fleets with crashes, disorder
/// and idle devices, every device's state and the shared state it writes read back (JSONDecoder) as the same value
/// as JSONEncoder's, and it never needs JSONEncoder's fallback for them.
@Suite struct StreamingJSONEncoderPipelineTests {
    static let evaluator = CrashEvaluator()

    /// Every value read back from the streamed JSON is the original (compared as JSONEncoder's sorted output),
    /// with a fresh encoder and with `reusing`, one for many values reusing the applications' settings (as
    /// detection encodes a checkpoint).
    static func expectSameValue<Value: Codable>(_ value: Value, reusing: StreamingJSONEncoder) throws {
        let sorted = JSONEncoder()
        sorted.outputFormatting = .sortedKeys
        let expected = try sorted.encode(value)
        for encoder in [StreamingJSONEncoder(), reusing] {
            let streamed = try encoder.encode(value)
            #expect(try sorted.encode(JSONDecoder().decode(Value.self, from: Data(streamed))) == expected)
        }
    }

    // The fleets of FleetEvictionPipelineTests.
    @Test(arguments: [
        (SimulationOptions(devices: 12, seed: 4, durationMinutes: 25, crashes: 3, disorder: true), 0),
        (SimulationOptions(devices: 6, seed: 9, durationMinutes: 20, crashes: 1), 200),
    ])
    func everyStateOfASimulatedFleetReadsBackTheSame(options: SimulationOptions, idle: Int) throws {
        let lines = idle > 0 ? simulate(options, idle: IdleDeviceOptions(count: idle)).lines : simulate(options).lines
        let records = try lines.map { try RecordDecoding.record(fromJSON: Array($0.utf8)) }
        var fleet = DeviceFleet()
        var pending: [FleetAction] = []
        var checked = 0
        let reusing = StreamingJSONEncoder(reusing: DetectionSettings.self)
        for (number, record) in records.enumerated() {
            let now = record.t + 0.5
            pending += fleet.receive(record, now: now)
            if number % 50 == 0 { pending += fleet.tick(now: now) }
            // Platform answers come a little later, so that states hold fetches and candidates in flight.
            if number % 7 == 0 {
                for action in pending {
                    switch action {
                    case .fetchSettings(let app):
                        _ = fleet.settingsFetched(app: app, .fetched(DetectionSettings()), now: now)
                    case .evaluateCrash(let device, let candidate):
                        _ = fleet.crashEvaluated(
                            device: device, crashID: candidate.crashID,
                            outcome: .verdict(Self.evaluator.verdict(for: candidate)))
                    default:
                        break
                    }
                }
                pending.removeAll()
            }
            // Checkpoints: the changed devices, as detection takes them.
            if number % 997 == 0 {
                for device in fleet.takeChangedDevices() {
                    try Self.expectSameValue(fleet.deviceState(device)!, reusing: reusing)
                    checked += 1
                }
                try Self.expectSameValue(fleet.sharedState, reusing: reusing)
            }
        }
        _ = fleet.finish()
        for device in fleet.deviceIDs { try Self.expectSameValue(fleet.deviceState(device)!, reusing: reusing) }
        try Self.expectSameValue(fleet.sharedState, reusing: reusing)
        #expect(checked > 20)
    }
}
