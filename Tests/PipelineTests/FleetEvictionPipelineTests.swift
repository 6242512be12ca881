import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel
import Simulator
import Testing

/// The fleet over simulated fleets with idle devices taken out of memory at every opportunity (or after a quiet
/// minute, through JSON as detection's store keeps them) and put back before their next record: exactly the
/// actions and the final states of the run that kept every device.
@Suite struct FleetEvictionPipelineTests {
    static let evaluator = CrashEvaluator()

    /// `FleetCheckpointTests.Shell`'s shell (clock half a second behind event time, a tick every second, platform
    /// answers a few inputs later), or replay's (no clock), with eviction after every input when `idle` is set.
    struct Shell {
        var fleet = DeviceFleet()
        var clock: Bool
        var idle: Double?
        var throughJSON = false
        var actions: [FleetAction] = []
        var inFlight: [(call: FleetAction, due: Int)] = []
        var step = 0
        var answerDelay = 5
        var evicted: [DeviceID: FleetDeviceState] = [:]
        var evictions = 0
        var largestEvicted = 0

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
                    bringBack(device)
                    take(
                        fleet.crashEvaluated(
                            device: device, crashID: candidate.crashID,
                            outcome: .verdict(FleetEvictionPipelineTests.evaluator.verdict(for: candidate))))
                default:
                    break
                }
            }
        }

        mutating func bringBack(_ device: DeviceID) {
            if let state = evicted.removeValue(forKey: device) { fleet.restore(state) }
        }

        mutating func evict(now: Double?) throws {
            guard let idle else { return }
            for state in fleet.evictIdle(idle: idle, now: now) {
                evictions += 1
                if throughJSON {
                    let bytes = try JSONEncoder().encode(state)
                    largestEvicted = max(largestEvicted, bytes.count)
                    evicted[state.device] = try JSONDecoder().decode(FleetDeviceState.self, from: bytes)
                } else {
                    evicted[state.device] = state
                }
            }
        }

        mutating func run(_ records: [SensorRecord]) throws {
            var nextTick = records[0].t + 0.5
            for record in records {
                let now = clock ? record.t + 0.5 : nil
                if let now {
                    while nextTick <= now {
                        take(fleet.tick(now: nextTick))
                        try evict(now: nextTick)
                        nextTick += 1
                    }
                }
                bringBack(record.device)
                take(fleet.receive(record, now: now))
                answerDue()
                try evict(now: now)
                step += 1
            }
            answerDue(all: true)
            take(fleet.finish())
            answerDue(all: true)
        }

        /// Every device's state, in memory or out, as JSON.
        func states() throws -> [DeviceID: Data] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            var result = try evicted.mapValues { try encoder.encode($0) }
            for device in fleet.deviceIDs { result[device] = try encoder.encode(fleet.deviceState(device)!) }
            return result
        }
    }

    static func records(_ options: SimulationOptions, idle: Int = 0) throws -> [SensorRecord] {
        let lines = idle > 0 ? simulate(options, idle: IdleDeviceOptions(count: idle)).lines : simulate(options).lines
        return try lines.map { try RecordDecoding.record(fromJSON: Array($0.utf8)) }
    }

    func compare(
        _ records: [SensorRecord], clock: Bool, idle: Double, throughJSON: Bool,
        minimumEvictions: Int
    ) throws -> Shell {
        var whole = Shell(clock: clock, idle: nil)
        try whole.run(records)
        var evicting = Shell(clock: clock, idle: idle, throughJSON: throughJSON)
        try evicting.run(records)
        #expect(evicting.evictions >= minimumEvictions)
        #expect(evicting.actions.count == whole.actions.count)
        // Each device's actions exactly; across devices, only actions of one tick may come in another order (a device
        // back from eviction rejoined the device order at the end).
        func perDevice(_ actions: [FleetAction]) -> [String: [FleetAction]] {
            Dictionary(grouping: actions) { action -> String in
                switch action {
                case .emit(let event): event.device.description
                case .evaluateCrash(let device, _), .crashDismissed(let device, _, _): device.description
                case .recordRejected(let record, _): record.device.description
                case .deviceNotMonitored(let device, _): device.description
                case .fetchSettings(let app): "settings " + app
                case .watermarkHoldExpired(let stream, _): "stream " + stream
                }
            }
        }
        #expect(perDevice(evicting.actions) == perDevice(whole.actions))
        let moved = zip(evicting.actions, whole.actions).filter { $0 != $1 }.count
        print("eviction: \(evicting.evictions) evictions; \(moved) of \(whole.actions.count) actions in another place")
        #expect(evicting.fleet.statistics == whole.fleet.statistics)
        #expect(try evicting.states() == whole.states())
        return evicting
    }

    @Test func aSimulatedFleetWithCrashesAndDisorderGivesTheSameActionsWithEvictionAtEveryOpportunity() throws {
        let options = SimulationOptions(devices: 12, seed: 4, durationMinutes: 25, crashes: 3, disorder: true)
        let records = try Self.records(options)
        let evicting = try compare(records, clock: true, idle: 0, throughJSON: false, minimumEvictions: 1000)
        #expect(evicting.actions.events.filter { $0.name == "crashDetected" }.count == 3)
    }

    @Test func withoutAClockAQuietDeviceKeepsItsLastRecordsInItsWindowSoItStays() throws {
        // Replay has no clock to release a quiet device's reorder buffer: nothing leaves before `finish`, and the
        // run is the same.
        let options = SimulationOptions(devices: 6, seed: 7, durationMinutes: 15, crashes: 1)
        let evicting = try compare(
            try Self.records(options, idle: 50), clock: false, idle: 0, throughJSON: false,
            minimumEvictions: 0)
        #expect(evicting.evictions == 0)
    }

    @Test func idleDevicesLeaveAfterAQuietMinuteAndTheRestGoOn() throws {
        // 200 idle devices announced over 20 minutes beside 6 active ones; states through JSON as in the store.
        let options = SimulationOptions(devices: 6, seed: 9, durationMinutes: 20, crashes: 1)
        let records = try Self.records(options, idle: 200)
        let evicting = try compare(records, clock: true, idle: 60, throughJSON: true, minimumEvictions: 190)
        // At the end the idle devices are out of memory (the active ones' records were flushed by finish).
        #expect(evicting.evicted.keys.filter { $0.user.hasPrefix("idle-") }.count >= 190)
        print(
            "eviction: \(evicting.evictions) evictions, largest evicted state \(evicting.largestEvicted) bytes of JSON")
    }
}
