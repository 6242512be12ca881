import Foundation
import RoadSaveModel

@testable import DetectionEngine

/// One input of a fleet's shell, as a detection service would log it.
enum FleetInput {
    case record(SensorRecord, now: Double?)
    case tick(now: Double)
    case control(ControlRequest, now: Double, fetch: SettingsFetch?)
}

/// Drives a `DeviceFleet` as a shell does, without sockets or sleeps: inputs in order, and a scripted platform
/// whose answers come back a given number of inputs after the question (so calls are in flight between inputs).
/// It can checkpoint the fleet (JSONEncoder, every device and the shared state) and continue on the decoded copy.
struct FleetDriver {
    var fleet: DeviceFleet
    /// What the scripted platform answers.
    var settings: (String) -> SettingsFetch = { _ in .fetched(DetectionSettings()) }
    var verdict: (CrashCandidate) -> CrashEvaluationOutcome = { _ in .verdict(.high) }
    /// Inputs after which a platform answer arrives (0: before the next input).
    var answerDelay = 0
    /// Every action in order, each with the index of the input it came from.
    private(set) var log: [(input: Int, action: FleetAction)] = []
    private(set) var replies: [ControlOutcome] = []
    /// Platform calls in flight: the action, and the input index after which it is answered.
    private var inFlight: [(action: FleetAction, due: Int)] = []
    private var step = 0
    /// Sizes and times of the checkpoints taken.
    private(set) var checkpoints: [(devices: Int, bytes: Int, seconds: Double)] = []

    init(options: DeviceFleet.Options = .init()) {
        fleet = DeviceFleet(options: options)
    }

    var actions: [FleetAction] { log.map(\.action) }
    var events: [RoadSaveEvent] { actions.events }

    mutating func run(_ inputs: [FleetInput], checkpointAfter cuts: Set<Int> = []) {
        for input in inputs {
            apply(input)
            if cuts.contains(step - 1) { checkpointAndRestore() }
        }
    }

    mutating func apply(_ input: FleetInput) {
        switch input {
        case .record(let record, let now):
            take(fleet.receive(record, now: now))
        case .tick(let now):
            take(fleet.tick(now: now))
        case .control(let request, let now, let fetch):
            let (outcome, actions) = fleet.control(request, now: now, fetch: fetch)
            replies.append(outcome)
            take(actions)
        }
        deliverDue()
        step += 1
    }

    /// End of input: every platform call is answered, then the fleet finishes.
    mutating func finish() {
        while !inFlight.isEmpty {
            step += 1_000_000
            deliverDue()
        }
        take(fleet.finish())
        while !inFlight.isEmpty {
            step += 1_000_000
            deliverDue()
        }
    }

    private mutating func take(_ actions: [FleetAction]) {
        for action in actions {
            log.append((step, action))
            switch action {
            case .fetchSettings, .evaluateCrash:
                inFlight.append((action, step + answerDelay))
            default:
                break
            }
        }
    }

    private mutating func deliverDue() {
        while let next = inFlight.firstIndex(where: { $0.due <= step }) {
            let call = inFlight.remove(at: next).action
            switch call {
            case .fetchSettings(let app):
                take(fleet.settingsFetched(app: app, settings(app), now: nil))
            case .evaluateCrash(let device, let candidate):
                take(fleet.crashEvaluated(device: device, crashID: candidate.crashID, outcome: verdict(candidate)))
            default:
                break
            }
        }
    }

    /// The platform calls this driver is waiting for, in the fleet's order (`pendingPlatformCalls`' order).
    var callsInFlight: [FleetAction] { inFlight.map(\.action) }

    /// Writes the whole fleet with JSONEncoder, reads it back into a new fleet and carries on with that one.
    mutating func checkpointAndRestore() {
        let started = Date()
        let (shared, devices) = Self.encode(fleet)
        let bytes = shared.count + devices.reduce(0) { $0 + $1.1.count }
        checkpoints.append((fleet.deviceCount, bytes, Date().timeIntervalSince(started)))
        fleet = Self.decode(options: fleet.options, shared: shared, devices: devices)
    }

    static func encode(_ fleet: DeviceFleet) -> (shared: Data, devices: [(DeviceID, Data)]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let shared = try! encoder.encode(fleet.sharedState)
        let devices = fleet.deviceIDs.map { ($0, try! encoder.encode(fleet.deviceState($0)!)) }
        return (shared, devices)
    }

    static func decode(options: DeviceFleet.Options, shared: Data, devices: [(DeviceID, Data)]) -> DeviceFleet {
        let decoder = JSONDecoder()
        let sharedState = try! decoder.decode(FleetSharedState.self, from: shared)
        let states = devices.map { ($0.0, try! decoder.decode(FleetDeviceState.self, from: $0.1)) }
        return DeviceFleet(options: options, shared: sharedState, devices: states)
    }

    /// The whole state as bytes (for comparing two fleets).
    static func snapshot(_ fleet: DeviceFleet) -> Data {
        let (shared, devices) = encode(fleet)
        return devices.reduce(shared) { $0 + $1.1 }
    }
}

/// Several devices' scripted days, interleaved by event time as a gateway would deliver them, with the shell's
/// clock (arrival) a little behind the event time and ticks in between.
enum FleetStreams {
    static let app = "app-1"

    static func device(_ user: String, app: String = FleetStreams.app) -> DeviceID { DeviceID(app: app, user: user) }

    /// A driver who crashes, a commuter who walks away, a driver who falls silent (his trip ends on the clock), a
    /// device of a second application, and two control commands on the way.
    static func mixed(disorder: Bool = true) -> [FleetInput] {
        var crash = Script()
        crash.device = device("crash")
        crash.activity(.automotive, .high)
        crash.drive(seconds: 150, speed: 15)
        crash.t += 0.4
        crash.impact(peakG: 45)
        crash.t += 0.6
        crash.accelerate(from: 5, to: 0, seconds: 2)
        crash.activity(.stationary, .high)
        crash.stand(seconds: 300)

        var commuter = Script()
        commuter.device = device("commuter")
        commuter.t += 7
        commuter.activity(.walking, .high)
        commuter.walk(seconds: 30)
        commuter.activity(.automotive, .high)
        commuter.accelerate(from: 2.5, to: 13, seconds: 8)
        commuter.drive(seconds: 200, speed: 13)
        commuter.accelerate(from: 13, to: 2, seconds: 6)
        commuter.stand(seconds: 10)
        commuter.activity(.walking, .high)
        commuter.walk(seconds: 60)

        var silent = Script()
        silent.device = device("silent")
        silent.t += 3
        silent.activity(.automotive, .high)
        silent.drive(seconds: 180, speed: 12)

        var other = Script()
        other.device = device("other", app: "app-2")
        other.t += 11
        other.activity(.automotive, .high)
        other.drive(seconds: 200, speed: 14)
        other.stand(seconds: 60)

        var records = (crash.records + commuter.records + silent.records + other.records)
            .sorted { ($0.t, $0.device) < ($1.t, $1.device) }
        if disorder {
            // Neighbours swapped now and then (gateways batch sensors separately), and a repeated record.
            var index = 3
            while index + 1 < records.count {
                records.swapAt(index, index + 1)
                index += 17
            }
            records.insert(records[40], at: 45)
        }
        // The clock is the arrival time: half a second behind event time; a tick every second of clock.
        let clockOffset = 0.5
        var inputs: [FleetInput] = []
        var nextTick = records[0].t + clockOffset
        for record in records {
            let now = record.t + clockOffset
            while nextTick <= now {
                inputs.append(.tick(now: nextTick))
                nextTick += 1
            }
            inputs.append(.record(record, now: now))
            if record.device == device("crash"), record.t == crash.records[60].t {
                inputs.append(
                    .control(
                        ControlRequest(
                            command: .setDetectionMode, app: app, user: "crash",
                            detectionMode: .all), now: now, fetch: nil))
            }
        }
        // Then the clock runs on with nothing arriving: the silent driver's trip ends (after the offline grace),
        // the rest settle.
        for _ in 0..<(Int(DetectionSettings().tripOfflineGrace) + 400) {
            inputs.append(.tick(now: nextTick))
            nextTick += 1
        }
        inputs.insert(
            .control(
                ControlRequest(command: .raiseTestCrash, app: app, user: "commuter"),
                now: records[500].t + clockOffset, fetch: nil),
            at: inputs.firstIndex { if case .record(let r, _) = $0 { r == records[500] } else { false } }! + 1)
        return inputs
    }
}
