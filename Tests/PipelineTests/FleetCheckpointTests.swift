import DetectionEngine
import Foundation
import Logging
import RecordCodecs
import Replay
import RoadSaveModel
import Simulator
import Testing

/// The fleet core over a simulated fleet, checkpointed (every device and the shared state written with JSONEncoder
/// and read back) in the middle of the stream: the continued run must give exactly what the uninterrupted one gives.
/// This is what detection's recovery rests on.
@Suite struct FleetCheckpointTests {
    static let evaluator = CrashEvaluator()

    /// A shell in a few lines: records with the shell's clock half a second behind event time, a tick every second
    /// of clock, platform answers (embedded settings and evaluator) `answerDelay` inputs after the question.
    struct Shell {
        var fleet = DeviceFleet()
        var actions: [FleetAction] = []
        var inFlight: [(call: FleetAction, due: Int)] = []
        var step = 0
        var answerDelay = 5
        var encodeSeconds = 0.0
        var encodedDevices = 0
        var largestDevice = (bytes: 0, session: 0, ordering: 0)
        /// The largest session's parts (JSON keys) and their sizes, largest first.
        var largestSessionParts: [(String, Int)] = []
        var totalBytes = 0

        mutating func take(_ new: [FleetAction]) {
            for action in new {
                actions.append(action)
                if case .fetchSettings = action { inFlight.append((action, step + answerDelay)) }
                if case .evaluateCrash = action { inFlight.append((action, step + answerDelay)) }
            }
        }

        mutating func answerDue(all: Bool = false) {
            while let next = inFlight.firstIndex(where: { all || $0.due <= step }) {
                switch inFlight.remove(at: next).call {
                case .fetchSettings(let app):
                    take(fleet.settingsFetched(app: app, .fetched(DetectionSettings()), now: nil))
                case .evaluateCrash(let device, let candidate):
                    take(
                        fleet.crashEvaluated(
                            device: device, crashID: candidate.crashID,
                            outcome: .verdict(FleetCheckpointTests.evaluator.verdict(for: candidate))))
                default:
                    break
                }
            }
        }

        mutating func run(_ records: ArraySlice<SensorRecord>, tickFrom nextTick: inout Double) {
            for record in records {
                let now = record.t + 0.5
                while nextTick <= now {
                    take(fleet.tick(now: nextTick))
                    nextTick += 1
                }
                take(fleet.receive(record, now: now))
                answerDue()
                step += 1
            }
        }

        mutating func finish() {
            answerDue(all: true)
            take(fleet.finish())
            answerDue(all: true)
        }

        mutating func checkpointAndRestore() throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let started = Date()
            let shared = try encoder.encode(fleet.sharedState)
            let devices = try fleet.deviceIDs.map { ($0, try encoder.encode(fleet.deviceState($0)!)) }
            encodeSeconds += Date().timeIntervalSince(started)
            encodedDevices += devices.count
            totalBytes += shared.count + devices.reduce(0) { $0 + $1.1.count }
            for (device, bytes) in devices where bytes.count > largestDevice.bytes {
                let state = fleet.deviceState(device)!
                let session = try encoder.encode(state.session)
                largestDevice = (bytes.count, session.count, try encoder.encode(state.ordering).count)
                let parts = try JSONSerialization.jsonObject(with: session) as! [String: Any]
                largestSessionParts = try parts.map { key, value in
                    (key, try JSONSerialization.data(withJSONObject: value, options: .fragmentsAllowed).count)
                }.sorted { $0.1 > $1.1 }
            }
            let decoder = JSONDecoder()
            fleet = DeviceFleet(
                options: fleet.options, shared: try decoder.decode(FleetSharedState.self, from: shared),
                devices: try devices.map { ($0.0, try decoder.decode(FleetDeviceState.self, from: $0.1)) })
        }
    }

    static func records(_ options: SimulationOptions) throws -> [SensorRecord] {
        try simulate(options).lines.map { try RecordDecoding.record(fromJSON: Array($0.utf8)) }
    }

    func run(_ records: [SensorRecord], cuts: [Int]) throws -> Shell {
        var shell = Shell()
        var nextTick = records[0].t + 0.5
        var start = 0
        for cut in cuts {
            shell.run(records[start..<cut], tickFrom: &nextTick)
            try shell.checkpointAndRestore()
            start = cut
        }
        shell.run(records[start...], tickFrom: &nextTick)
        shell.finish()
        return shell
    }

    @Test func aSimulatedFleetCheckpointedMidStreamContinuesExactly() async throws {
        let options = SimulationOptions(devices: 12, seed: 4, durationMinutes: 25, crashes: 3, disorder: true)
        let records = try Self.records(options)
        let whole = try run(records, cuts: [])
        let crashes = whole.actions.events.filter { $0.name == "crashDetected" }
        #expect(crashes.count == 3)
        #expect(whole.actions.events.count > 12)

        // Cut points anywhere, some of them while evaluations are in flight.
        let cuts = [records.count / 7, records.count / 3, records.count / 2, 2 * records.count / 3]
        let interrupted = try run(records, cuts: cuts)
        #expect(interrupted.actions.count == whole.actions.count)
        #expect(interrupted.actions == whole.actions)
        #expect(interrupted.fleet.statistics == whole.fleet.statistics)

        let perDevice = interrupted.encodeSeconds / Double(interrupted.encodedDevices)
        print(
            "fleet checkpoint: \(interrupted.encodedDevices / cuts.count) devices, "
                + "\(interrupted.totalBytes / interrupted.encodedDevices) bytes a device on average, "
                + "largest \(interrupted.largestDevice.bytes) (session \(interrupted.largestDevice.session), "
                + "ordering \(interrupted.largestDevice.ordering); session parts "
                + interrupted.largestSessionParts.prefix(4).map { "\($0.0) \($0.1)" }.joined(separator: ", ")
                + "); JSONEncoder \(Int(perDevice * 1e6)) µs a device")
    }

    @Test func theFleetDrivenDirectlyGivesReplaysEvents() async throws {
        let options = SimulationOptions(devices: 8, seed: 2, durationMinutes: 20, crashes: 2)
        let (lines, _) = simulate(options)
        final class Box: @unchecked Sendable { var events: [RoadSaveEvent] = [] }
        let box = Box()
        let replayer = Replayer(platform: EmbeddedPlatform(), log: Log(category: "test", minimumLevel: .error)) {
            box.events.append($0)
        }
        for (index, line) in lines.enumerated() { await replayer.feed(line: Array(line.utf8), number: index + 1) }
        await replayer.finish()

        var shell = Shell()
        shell.answerDelay = 0
        for line in lines {
            shell.take(shell.fleet.receive(try RecordDecoding.record(fromJSON: Array(line.utf8)), now: nil))
            shell.answerDue()
            shell.step += 1
        }
        shell.finish()
        #expect(box.events.count > 10)
        // Answered at once, the fleet gives replay's events in replay's order.
        #expect(shell.actions.events == box.events)
    }
}
