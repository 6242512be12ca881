import DetectionEngine
import Logging
import RecordCodecs
import RoadSaveModel

/// Runs the detection engines over recorded records in one process: a thin shell around `DeviceFleet` (the same
/// per-device core as the detection service) with the records coming from a file and time coming only from the
/// records. Every device met is configured with its app and user (mode `all`, automatic trips on) and monitored
/// from its first record. Platform calls are awaited where the fleet asks for them, so the output never depends on
/// the platform's timing.
public final class Replayer {
    /// Lines read and lines that were not records; the rest (`applied`, `duplicates`, `late`, `notMonitored`,
    /// `devices`, `events`, …) is the fleet's own count, read through.
    @dynamicMemberLookup
    public struct Summary: Sendable, Equatable {
        public var lines = 0
        public var invalid = 0
        public var fleet = FleetStatistics()

        public init() {}

        public subscript(dynamicMember keyPath: KeyPath<FleetStatistics, Int>) -> Int { fleet[keyPath: keyPath] }
    }

    private let platform: any Platform
    private let emit: (RoadSaveEvent) -> Void
    private let log: Log
    private var fleet: DeviceFleet
    private var lines = 0
    private var invalid = 0
    /// The record being fed and its line, to tell a rejected record from an earlier one it disproved.
    private var current: (record: SensorRecord, line: Int?)?
    /// What a record's number counts in messages: "line" (NDJSON) or "record" (MessagePack).
    public var numberName = "line"
    /// Told of each suspected crash the engines dismissed, with the reason (it is not an event, so `emit` never sees
    /// it): `roadsave report` marks them on its map.
    public var dismissed: ((DeviceID, CrashCandidate, FalsePositiveReason) -> Void)?
    /// Actions of the last `feedNow` that wait for `settle()`.
    private var waiting: [FleetAction] = []
    /// The fleet's actions for one record, reused: nearly every record asks for nothing, and then nothing is allocated.
    private var scratch: [FleetAction] = []

    public var summary: Summary {
        var summary = Summary()
        summary.lines = lines
        summary.invalid = invalid
        summary.fleet = fleet.statistics
        return summary
    }

    /// `options.autoMonitor` is always on in replay: nothing else would start a device.
    public init(
        platform: any Platform, options: DeviceFleet.Options = .init(), log: Log,
        emit: @escaping (RoadSaveEvent) -> Void
    ) {
        var options = options
        options.autoMonitor = true
        self.platform = platform
        self.log = log
        self.emit = emit
        fleet = DeviceFleet(options: options)
    }

    public convenience init(
        platform: any Platform, ordering: RecordOrdering.Options, log: Log,
        emit: @escaping (RoadSaveEvent) -> Void
    ) {
        self.init(platform: platform, options: DeviceFleet.Options(ordering: ordering), log: log, emit: emit)
    }

    /// Feeds one NDJSON line. A bad line is reported (line, field, reason) and skipped; the others go on.
    public func feed(line: [UInt8], number: Int) async {
        let record: SensorRecord
        do {
            record = try RecordDecoding.record(fromJSON: line)
        } catch {
            reject(error, number: number)
            return
        }
        if !feedNow(record, number: number) { await settle() }
    }

    public func feed(_ record: SensorRecord, line: Int? = nil) async {
        if !deliver(record, line: line) { await settle() }
    }

    /// Feeds one record read from the input (`number`: its line or position) without suspending, which is the
    /// common case: true when it has been dealt with entirely. False when the fleet asked for the platform
    /// (settings of a new application, a crash evaluation): the actions from there on wait, and `settle()` must be
    /// awaited before the next record, so events keep their order.
    public func feedNow(_ record: SensorRecord, number: Int) -> Bool {
        lines += 1
        return deliver(record, line: number)
    }

    private func deliver(_ record: SensorRecord, line: Int?) -> Bool {
        precondition(waiting.isEmpty, "settle() was not awaited after feedNow returned false")
        fleet.receive(record, now: nil, into: &scratch)
        // Most records give no action at all.
        guard !scratch.isEmpty else { return true }
        current = (record, line)
        // Taken out while carried out (an action's output may feed the fleet again), and put back emptied.
        var actions: [FleetAction] = []
        swap(&actions, &scratch)
        defer {
            actions.removeAll(keepingCapacity: true)
            swap(&actions, &scratch)
        }
        guard let stop = performNow(actions) else {
            current = nil
            return true
        }
        waiting = Array(actions[stop...])
        return false
    }

    /// Carries out the actions that `feedNow` left waiting (from the platform call on).
    public func settle() async {
        let actions = waiting
        waiting = []
        await perform(actions)
        current = nil
    }

    /// A record that could not be read: reported (its number, field, reason) and skipped.
    public func reject(_ error: RecordError, number: Int) {
        lines += 1
        invalid += 1
        log.warning("invalid record", [numberName: String(number), "field": error.field, "reason": error.reason])
    }

    /// End of input: buffered records are applied, then time runs on so that pending timers fire.
    public func finish() async {
        await perform(fleet.finish())
    }

    /// Carries out the actions in order up to the first that needs the platform; its index, or nil when all were.
    private func performNow(_ actions: [FleetAction]) -> Int? {
        for (index, action) in actions.enumerated() {
            switch action {
            case .fetchSettings, .evaluateCrash: return index
            default: performLocal(action)
            }
        }
        return nil
    }

    /// Carries the actions out in order; a platform answer is fed back at once and its actions carried out before
    /// the next, so events come out where replay has always put them.
    private func perform(_ actions: [FleetAction]) async {
        for action in actions {
            switch action {
            case .fetchSettings(let app):
                let fetch = await platform.fetchSettings(applicationID: app)
                await perform(fleet.settingsFetched(app: app, fetch, now: nil))
            case .evaluateCrash(let device, let candidate):
                let outcome = await platform.evaluation(of: candidate)
                if outcome == .unreachable {
                    log.warning(
                        "platform unreachable: crash reported with confidence unknown",
                        ["device": device.description, "crashID": candidate.crashID])
                }
                await perform(fleet.crashEvaluated(device: device, crashID: candidate.crashID, outcome: outcome))
            default:
                performLocal(action)
            }
        }
    }

    /// An action that needs no platform call.
    private func performLocal(_ action: FleetAction) {
        switch action {
        case .emit(let event):
            emit(event)
        case .crashDismissed(let device, let candidate, let reason):
            dismissed?(device, candidate, reason)
            log.info(
                "suspected crash dismissed",
                [
                    "device": device.description, "crashID": candidate.crashID,
                    "at": ISO8601.string(fromSeconds: candidate.time), "reason": reason.rawValue,
                    "peakG": JSONObjectWriter.number(candidate.peakG, decimals: 1),
                ])
        case .recordRejected(let record, let reason):
            if case .duplicate = reason { return }
            // A held record (far in the future) is rejected when a later line disproves it.
            let lineNumber = current.flatMap { $0.record == record ? $0.line.map(String.init) : "earlier" } ?? "-"
            log.warning(
                "record not applied",
                [
                    numberName: lineNumber, "device": record.device.description,
                    "field": "t", "t": ISO8601.string(fromSeconds: record.t),
                    "reason": reason.description,
                ])
        case .deviceNotMonitored(let device, let error):
            log.error(
                "device not monitored: its records are skipped",
                ["device": device.description, "error": error.code, "reason": error.description])
        case .watermarkHoldExpired:
            preconditionFailure("replay reads no gateway's stream")
        case .fetchSettings, .evaluateCrash:
            preconditionFailure("platform calls are awaited in perform")
        }
    }
}
