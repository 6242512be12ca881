import DetectionEngine
import RoadSaveModel

/// Runs the detection engines over recorded records in one process: what the detection service does, with the
/// records coming from a file and time coming only from the records. Every device met is configured with its
/// app and user (mode `all`, automatic trips on) and monitored from its first record.
public final class Replayer {
    public struct Summary: Sendable, Equatable {
        public var lines = 0
        public var applied = 0
        public var invalid = 0
        public var duplicates = 0
        public var late = 0
        public var farInFuture = 0
        /// Records of devices whose monitoring could not start (platform unreachable, no cached settings).
        public var notMonitored = 0
        public var devices = 0
        public var events = 0
        public var crashesDismissed = 0

        public init() {}
    }

    private let platform: any Platform
    private let ordering: RecordOrdering.Options
    private let emit: (RoadSaveEvent) -> Void
    private let log: Log
    private var devices: [DeviceID: DeviceState] = [:]
    private var settingsByApp: [String: SettingsFetch] = [:]
    public private(set) var summary = Summary()

    private struct DeviceState {
        var session: DeviceSession
        var ordering: RecordOrdering
        var monitoring: Bool
    }

    public init(platform: any Platform, ordering: RecordOrdering.Options = .init(), log: Log,
                emit: @escaping (RoadSaveEvent) -> Void) {
        self.platform = platform
        self.ordering = ordering
        self.log = log
        self.emit = emit
    }

    /// Feeds one NDJSON line. A bad line is reported (line, field, reason) and skipped; the others go on.
    public func feed(line: [UInt8], number: Int) async {
        summary.lines += 1
        let record: SensorRecord
        do {
            record = try RecordDecoding.record(fromJSON: line)
        } catch {
            summary.invalid += 1
            log.warning("invalid record", ["line": String(number), "field": error.field, "reason": error.reason])
            return
        }
        await feed(record, line: number)
    }

    public func feed(_ record: SensorRecord, line: Int? = nil) async {
        if devices[record.device] == nil { await begin(record.device, at: record.t) }
        let (ready, rejected) = devices[record.device]!.ordering.insert(record)
        for (rejectedRecord, reason) in rejected {
            count(reason)
            if case .duplicate = reason { continue }
            // A held record (far in the future) is rejected when a later line disproves it.
            let lineNumber = rejectedRecord == record ? line.map(String.init) ?? "-" : "earlier"
            log.warning("record not applied", ["line": lineNumber, "device": rejectedRecord.device.description,
                                                "field": "t", "t": ISO8601.string(fromSeconds: rejectedRecord.t),
                                                "reason": reason.description])
        }
        for next in ready { await apply(next) }
    }

    /// End of input: buffered records are applied, then time runs on so that pending timers fire.
    public func finish() async {
        for device in devices.keys.sorted() {
            for record in devices[device]!.ordering.flush() { await apply(record) }
            var previous: Double?
            while let deadline = devices[device]!.session.nextDeadline, deadline != previous {
                previous = deadline
                await perform(devices[device]!.session.advance(to: deadline), device: device)
            }
        }
    }

    private func count(_ rejection: RecordOrdering.Rejection) {
        switch rejection {
        case .duplicate: summary.duplicates += 1
        case .late: summary.late += 1
        case .farInFuture: summary.farInFuture += 1
        }
    }

    private func begin(_ device: DeviceID, at t: Double) async {
        summary.devices += 1
        var session = DeviceSession(device: device)
        var monitoring = false
        do {
            _ = try session.configure(RoadSaveConfiguration(applicationID: device.app, clientUserID: device.user), at: t)
            let fetch: SettingsFetch
            if let cached = settingsByApp[device.app] {
                fetch = cached
            } else {
                fetch = await platform.fetchSettings(applicationID: device.app)
                settingsByApp[device.app] = fetch
            }
            _ = try session.startMonitoring(at: t, fetch: fetch)
            monitoring = true
        } catch {
            log.error("device not monitored: its records are skipped",
                      ["device": device.description, "error": error.code, "reason": error.description])
        }
        devices[device] = DeviceState(session: session, ordering: RecordOrdering(options: ordering), monitoring: monitoring)
    }

    private func apply(_ record: SensorRecord) async {
        guard devices[record.device]!.monitoring else {
            summary.notMonitored += 1
            return
        }
        summary.applied += 1
        await perform(devices[record.device]!.session.handle(record), device: record.device)
    }

    private func perform(_ actions: [DetectionAction], device: DeviceID) async {
        for action in actions {
            switch action {
            case let .emit(event):
                summary.events += 1
                emit(event)
            case let .evaluateCrash(candidate):
                // Replay waits for each evaluation, so the output does not depend on the platform's timing.
                let outcome = await platform.evaluation(of: candidate)
                if outcome == .unreachable {
                    log.warning("platform unreachable: crash reported with confidence unknown",
                                ["device": device.description, "crashID": candidate.crashID])
                }
                await perform(devices[device]!.session.crashEvaluated(crashID: candidate.crashID, outcome: outcome),
                              device: device)
            case let .crashDismissed(candidate, reason):
                summary.crashesDismissed += 1
                log.info("suspected crash dismissed", [
                    "device": device.description, "crashID": candidate.crashID,
                    "at": ISO8601.string(fromSeconds: candidate.time), "reason": reason.rawValue,
                    "peakG": JSONObjectWriter.number(candidate.peakG, decimals: 1),
                ])
            }
        }
    }
}
