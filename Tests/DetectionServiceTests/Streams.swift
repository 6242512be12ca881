import DetectionEngine
import Foundation
import RoadSaveModel

@testable import DetectionService

/// Hand-built record streams of several devices and the events a replay of them gives (the reference a recovered
/// service must match).
enum Streams {
    /// Event time of the streams (2026-03-02, in the past: detection reads history as it reads live records).
    static let start = 1_772_433_000.0

    /// Short delays, so that every trip and crash decision of the streams, and every crash's follow-up, ends within
    /// their records (a crash's standstill is longer than the decision and follow-up delays together).
    static var settings: DetectionSettings {
        var settings = DetectionSettings()
        settings.stopDelay = 20
        settings.crashSettleTime = 1
        settings.crashDecisionDelay = 3
        settings.crashClusterWindow = 5
        settings.crashFollowUpDelay = 10
        return settings
    }

    /// One device: in a vehicle, `drive` seconds at `speed` m/s (a fix a second), optionally an impact of `impactG`,
    /// then `standstill` seconds at rest.
    static func drive(
        user: String, app: String = "app-1", start: Double = Streams.start, drive: Int = 60,
        speed: Double = 15, impactG: Double? = nil, standstill: Int = 20,
        longitude: Double = 18.4
    ) -> [SensorRecord] {
        let device = DeviceID(app: app, user: user)
        var records = [
            SensorRecord(device: device, seq: 0, t: start, payload: .activity(ActivityObservation(.automotive, .high)))
        ]
        var t = start
        var lon = longitude
        func add(_ time: Double, _ payload: SensorRecord.Payload) {
            records.append(SensorRecord(device: device, seq: UInt64(records.count), t: time, payload: payload))
        }
        for _ in 0..<drive {
            t += 1
            lon += speed / (6_371_008.8 * cos(-33.9 * .pi / 180)) * 180 / .pi
            add(t, .location(LocationFix(latitude: -33.9, longitude: lon, speed: speed, horizontalAccuracy: 5)))
        }
        if let impactG { add(t + 0.5, .impact(ImpactObservation(peakG: impactG, durationMs: 90))) }
        for _ in 0..<standstill {
            t += 1
            add(t, .location(LocationFix(latitude: -33.9, longitude: lon, speed: 0, horizontalAccuracy: 5)))
        }
        return records
    }

    /// Five devices of two applications, interleaved by event time as gateways would deliver them: two crashes, a
    /// commute whose trip ends in the records, a short drive that never makes a trip, and a late starter.
    static func fleet() -> [SensorRecord] {
        let devices = [
            drive(user: "crash-1", drive: 90, impactG: 45, standstill: 40, longitude: 18.40),
            drive(user: "commute-1", drive: 150, standstill: 40, longitude: 18.45),
            drive(
                user: "crash-2", app: "app-2", start: start + 30, drive: 80, impactG: 40, standstill: 40,
                longitude: 18.50),
            drive(user: "short-1", drive: 10, speed: 3, standstill: 10, longitude: 18.55),
            drive(user: "late-1", app: "app-2", start: start + 100, drive: 70, standstill: 40, longitude: 18.60),
        ]
        return interleave(devices)
    }

    /// Records of several devices in event-time order (each device's own order kept).
    static func interleave(_ devices: [[SensorRecord]]) -> [SensorRecord] {
        devices.enumerated().flatMap { device, records in records.enumerated().map { (device, $0, $1) } }
            .sorted { ($0.2.t, $0.0, $0.1) < ($1.2.t, $1.0, $1.1) }
            .map(\.2)
    }

    /// `records` (in event-time order) cut into batches at these seconds after `start`.
    static func batches(_ records: [SensorRecord], cuttingAt offsets: [Double]) -> [[SensorRecord]] {
        var batches: [[SensorRecord]] = [[]]
        var cuts = offsets.map { start + $0 }[...]
        for record in records {
            while let cut = cuts.first, record.t >= cut {
                cuts.removeFirst()
                batches.append([])
            }
            batches[batches.count - 1].append(record)
        }
        return batches.filter { !$0.isEmpty }
    }

    /// What `roadsave replay` gives for `records`: the fleet with time only from the records, every platform call
    /// answered at once (settings as given, `verdict`), then (`finishing`) the end of input.
    static func replay(
        _ records: [SensorRecord], settings: DetectionSettings = Streams.settings,
        verdict: (CrashCandidate) -> CrashVerdict = { _ in .high }, finishing: Bool = true
    ) -> [RoadSaveEvent] {
        var fleet = DeviceFleet(options: DetectionConfiguration().fleetOptions)
        var events: [RoadSaveEvent] = []
        func perform(_ actions: [FleetAction]) {
            for action in actions {
                switch action {
                case .emit(let event):
                    events.append(event)
                case .fetchSettings(let app):
                    perform(fleet.settingsFetched(app: app, .fetched(settings), now: nil))
                case .evaluateCrash(let device, let candidate):
                    perform(
                        fleet.crashEvaluated(
                            device: device, crashID: candidate.crashID,
                            outcome: .verdict(verdict(candidate))))
                default:
                    break
                }
            }
        }
        for record in records { perform(fleet.receive(record, now: nil)) }
        if finishing { perform(fleet.finish()) }
        return events
    }
}
