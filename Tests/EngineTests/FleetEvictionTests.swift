import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Drives a fleet as `FleetDriver` does, and after every input takes out every device that may leave (as detection
/// does at a checkpoint), keeping their states as the store would (JSON, or the value), and putting a device back
/// before an input that names it.
struct EvictingDriver {
    var driver: FleetDriver
    /// Seconds quiet before a device may leave (0: at every opportunity).
    var idle: Double
    /// Evicted states go through JSONEncoder/JSONDecoder, as they do through detection's store.
    var throughJSON: Bool
    /// What the store would hold: JSON, or the value itself.
    enum Stored {
        case json(Data)
        case value(FleetDeviceState)
    }
    private(set) var evicted: [DeviceID: Stored] = [:]
    private(set) var evictions = 0
    private(set) var restores = 0

    init(answerDelay: Int, idle: Double, throughJSON: Bool, options: DeviceFleet.Options = .init()) {
        driver = FleetDriver(options: options)
        driver.answerDelay = answerDelay
        self.idle = idle
        self.throughJSON = throughJSON
    }

    mutating func run(_ inputs: [FleetInput]) {
        for input in inputs {
            switch input {
            case .record(let record, _):
                bringBack(record.device)
            case .control(let request, _, _):
                if let user = request.user {
                    bringBack(DeviceID(app: request.app, user: user))
                } else {
                    for device in evicted.keys.filter({ $0.app == request.app }).sorted() { bringBack(device) }
                }
            case .tick:
                break
            }
            driver.apply(input)
            let now: Double? =
                switch input {
                case .record(_, let now): now
                case .tick(let now): now
                case .control(_, let now, _): now
                }
            evict(now: now)
        }
    }

    mutating func finish() {
        driver.finish()
    }

    mutating func evict(now: Double?) {
        for state in driver.fleet.evictIdle(idle: idle, now: now) {
            #expect(evicted[state.device] == nil)
            evicted[state.device] = throughJSON ? .json(try! Self.encoder.encode(state)) : .value(state)
            evictions += 1
        }
    }

    mutating func bringBack(_ device: DeviceID) {
        guard let stored = evicted.removeValue(forKey: device) else { return }
        let state = Self.state(stored)
        let restored = driver.fleet.restore(state)
        #expect(restored)
        restores += 1
    }

    /// Every device's state (in memory or evicted) as JSON, by device: for comparing with a fleet that kept all.
    func states() -> [DeviceID: Data] {
        var result = evicted.mapValues { try! Self.encoder.encode(Self.state($0)) }
        for device in driver.fleet.deviceIDs {
            result[device] = try! Self.encoder.encode(driver.fleet.deviceState(device)!)
        }
        return result
    }

    static func state(_ stored: Stored) -> FleetDeviceState {
        switch stored {
        case .json(let data): try! JSONDecoder().decode(FleetDeviceState.self, from: data)
        case .value(let state): state
        }
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

}

func allStates(_ fleet: DeviceFleet) -> [DeviceID: Data] {
    Dictionary(
        uniqueKeysWithValues: fleet.deviceIDs.map { ($0, try! EvictingDriver.encoder.encode(fleet.deviceState($0)!)) })
}

/// A device put back keeps the actions it would have had; `tick` may list two devices' actions in another order when
/// one of them came back (it rejoined the device order at the end): compare those per device.
func expectSameActions(
    _ evicting: [(input: Int, action: FleetAction)], _ whole: [(input: Int, action: FleetAction)],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(evicting.count == whole.count, sourceLocation: sourceLocation)
    func byInput(_ log: [(input: Int, action: FleetAction)]) -> [Int: [FleetAction]] {
        Dictionary(grouping: log, by: \.input).mapValues { $0.map(\.action) }
    }
    let (left, right) = (byInput(evicting), byInput(whole))
    #expect(Set(left.keys) == Set(right.keys), sourceLocation: sourceLocation)
    var reordered = 0
    for (input, actions) in right {
        guard let other = left[input], other != actions else { continue }
        reordered += 1
        let perDevice = { (list: [FleetAction]) in Dictionary(grouping: list, by: { $0.device?.description ?? "-" }) }
        #expect(perDevice(other) == perDevice(actions), "input \(input)", sourceLocation: sourceLocation)
    }
    #expect(reordered <= 2, "inputs whose actions came in another order: \(reordered)", sourceLocation: sourceLocation)
    if reordered > 0 { print("eviction: \(reordered) inputs with two devices' actions in another order") }
}

extension FleetAction {
    /// The device an action is about (nil for an application's settings fetch).
    var device: DeviceID? {
        switch self {
        case .emit(let event): event.device
        case .fetchSettings: nil
        case .evaluateCrash(let device, _), .crashDismissed(let device, _, _): device
        case .recordRejected(let record, _): record.device
        case .deviceNotMonitored(let device, _): device
        case .watermarkHoldExpired: nil
        }
    }
}

@Suite struct FleetEvictionTests {
    @Test(arguments: [(0, true), (3, false), (25, true), (40, false)])
    func evictingAtEveryOpportunityChangesNoAction(answerDelay: Int, throughJSON: Bool) throws {
        let inputs = FleetStreams.mixed()
        var whole = FleetDriver()
        whole.answerDelay = answerDelay
        whole.run(inputs)
        whole.finish()

        var evicting = EvictingDriver(answerDelay: answerDelay, idle: 0, throughJSON: throughJSON)
        evicting.run(inputs)
        evicting.finish()
        // Devices really left and came back, many times.
        #expect(evicting.evictions > 100)
        #expect(evicting.restores > 100)
        // Exactly the same actions, after the same inputs.
        #expect(evicting.driver.log.map(\.input) == whole.log.map(\.input))
        #expect(evicting.driver.actions == whole.actions)
        #expect(evicting.driver.replies == whole.replies)
        #expect(evicting.driver.fleet.statistics == whole.fleet.statistics)
        #expect(evicting.states() == allStates(whole.fleet))
    }

    @Test func evictingAfterAMinuteQuietChangesNothingEither() throws {
        let inputs = FleetStreams.mixed()
        var whole = FleetDriver()
        whole.answerDelay = 5
        whole.run(inputs)
        whole.finish()
        var evicting = EvictingDriver(answerDelay: 5, idle: 60, throughJSON: true)
        evicting.run(inputs)
        // The silent driver's trip ended on the clock (its offline grace) and the others settled: the ticks at the
        // end let every device leave.
        #expect(evicting.driver.fleet.residentCount == 0)
        #expect(evicting.evicted.count == 4)
        evicting.finish()
        #expect(evicting.driver.log.map(\.action) == whole.actions)
        #expect(evicting.states() == allStates(whole.fleet))
    }

    // MARK: Who may leave

    static let app = FleetStreams.app
    static let alice = DeviceID(app: app, user: "alice")

    static func fleet() -> DeviceFleet {
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: app, .fetched(DetectionSettings()), now: nil)
        return fleet
    }

    @Test func aParkedDeviceLeavesOnlyAfterTheIdleTimeOnTheClock() throws {
        var script = Script()
        script.device = Self.alice
        script.activity(.stationary, .high)
        script.stand(seconds: 30)
        var fleet = Self.fleet()
        let last = try #require(script.records.last)
        for record in script.records { _ = fleet.receive(record, now: record.t) }
        // The ordering window still holds the newest records until the clock releases them.
        _ = fleet.tick(now: last.t + 2)
        #expect(fleet.evictIdle(idle: 3600, now: last.t + 3599).isEmpty)
        #expect(fleet.isResident(Self.alice))
        let evicted = fleet.evictIdle(idle: 3600, now: last.t + 3600)
        #expect(evicted.map(\.device) == [Self.alice])
        #expect(!fleet.isResident(Self.alice))
        #expect(fleet.deviceCount == 0)
        #expect(fleet.statistics.devices == 1, "still known")
        // Back, it is written at the next checkpoint (as in memory again).
        _ = fleet.takeChangedDevices()
        let first = fleet.restore(evicted[0])
        let second = fleet.restore(evicted[0])
        #expect(first)
        #expect(!second, "already in memory")
        #expect(fleet.takeChangedDevices() == [Self.alice])
    }

    @Test func withoutAClockIdleIsBehindTheNewestRecord() throws {
        var fleet = Self.fleet()
        var parked = Script()
        parked.device = Self.alice
        parked.activity(.stationary, .high)
        parked.stand(seconds: 20)
        for record in parked.records { _ = fleet.receive(record, now: nil) }
        var other = Script()
        other.device = DeviceID(app: Self.app, user: "bob")
        other.t = parked.t + 100
        other.activity(.stationary, .high)
        other.stand(seconds: 40)
        for record in other.records { _ = fleet.receive(record, now: nil) }
        // Alice's records were released by her own later ones except the last few in the window (10 s): still held.
        #expect(fleet.evictIdle(idle: 60, now: nil).isEmpty)
        _ = fleet.finish()
        #expect(fleet.evictIdle(idle: 60, now: nil).map(\.device) == [Self.alice])
    }

    @Test func aDeviceMidTripOrWaitingForAVerdictOrItsSettingsStays() throws {
        // Mid-trip.
        var driving = Script()
        driving.device = Self.alice
        driving.activity(.automotive, .high)
        driving.drive(seconds: 120, speed: 15)
        var fleet = Self.fleet()
        for record in driving.records { _ = fleet.receive(record, now: nil) }
        _ = fleet.tick(now: driving.t + 5)
        #expect(fleet.session(Self.alice)?.isTripInProgress == true)
        #expect(fleet.evictIdle(idle: 0, now: driving.t + 100).isEmpty)

        // A crash waiting for the platform's verdict.
        var crash = Script()
        crash.device = Self.alice
        crash.activity(.automotive, .high)
        crash.drive(seconds: 150, speed: 15)
        crash.impact(peakG: 45)
        crash.accelerate(from: 5, to: 0, seconds: 2)
        crash.activity(.stationary, .high)
        crash.stand(seconds: 200)
        fleet = Self.fleet()
        var asked: [FleetAction] = []
        for record in crash.records { asked += fleet.receive(record, now: record.t) }
        _ = fleet.tick(now: crash.t + 5000)
        let candidate = try #require(
            asked.compactMap { if case .evaluateCrash(_, let c) = $0 { c } else { nil } }.first)
        #expect(fleet.evictIdle(idle: 60, now: crash.t + 10_000).isEmpty)
        _ = fleet.crashEvaluated(device: Self.alice, crashID: candidate.crashID, outcome: .verdict(.high))
        _ = fleet.tick(now: crash.t + 10_000)
        #expect(fleet.evictIdle(idle: 60, now: crash.t + 10_000).map(\.device) == [Self.alice])

        // Records waiting for the application's settings.
        fleet = DeviceFleet()
        var parked = Script()
        parked.device = Self.alice
        parked.stand(seconds: 3)
        for record in parked.records { _ = fleet.receive(record, now: record.t) }
        #expect(fleet.deviceState(Self.alice)?.waitingForSettings.isEmpty == false)
        #expect(fleet.evictIdle(idle: 0, now: parked.t + 10_000).isEmpty)
    }

    @Test func devicesThatStayKeepTheirOrderAndChangedMarks() throws {
        var fleet = Self.fleet()
        let users = ["a", "b", "c", "d", "e"].map { DeviceID(app: Self.app, user: $0) }
        for (offset, device) in users.enumerated() {
            var script = Script()
            script.device = device
            script.t += Double(offset)
            script.stand(seconds: 12)
            for record in script.records { _ = fleet.receive(record, now: record.t) }
        }
        _ = fleet.tick(now: Script.start + 100)
        _ = fleet.takeChangedDevices()
        // a, c and e touched since; b and d quiet long enough.
        for device in [users[2], users[4], users[0]] {
            var late = Script()
            late.device = device
            late.t = Script.start + 200
            late.stand(seconds: 1)
            for record in late.records { _ = fleet.receive(record, now: record.t) }
        }
        _ = fleet.tick(now: Script.start + 300)
        let evicted = fleet.evictIdle(idle: 150, now: Script.start + 300, limit: 1)
        #expect(evicted.map(\.device) == [users[1]], "at most the limit, in the order met")
        #expect(fleet.deviceIDs == [users[0], users[2], users[3], users[4]])
        #expect(fleet.lastEvictedUnchanged == [users[1]], "b was quiet since the changed devices were taken")
        #expect(fleet.takeChangedDevices() == [users[0], users[2], users[4]])
        for device in fleet.deviceIDs { #expect(fleet.deviceState(device)?.device == device) }

        // d changes again; then everyone leaves: all but d have their stored state current.
        var again = Script()
        again.device = users[3]
        again.t = Script.start + 300
        again.stand(seconds: 1)
        for record in again.records { _ = fleet.receive(record, now: record.t) }
        _ = fleet.tick(now: Script.start + 400)
        let rest = fleet.evictIdle(idle: 0, now: Script.start + 400)
        #expect(Set(rest.map(\.device)) == [users[0], users[2], users[3], users[4]])
        #expect(fleet.lastEvictedUnchanged == [users[0], users[2], users[4]])
    }
}
