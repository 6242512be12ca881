import RoadSaveModel

@testable import DetectionEngine

/// Drives a `DeviceSession` the way a shell does, without sockets or sleeps: records in order (optionally through
/// `RecordOrdering`), crash candidates answered by a scripted platform, and time run on at the end.
struct Harness {
    /// What the scripted platform answers for a candidate.
    var verdict: (CrashCandidate) -> CrashEvaluationOutcome = { _ in .verdict(.high) }
    var settings = DetectionSettings()
    var configuration = RoadSaveConfiguration(applicationID: Script.device.app, clientUserID: Script.device.user)

    var session: DeviceSession
    /// Every action, with the event time of the input that produced it.
    private(set) var log: [(time: Double, action: DetectionAction)] = []

    init(
        configure: Bool = true, at t: Double = Script.start, settings: DetectionSettings = DetectionSettings(),
        mode: CrashDetectionMode = .all
    ) {
        self.settings = settings
        configuration.detectionMode = mode
        session = DeviceSession(device: Script.device)
        if configure {
            record(try! session.configure(configuration, at: t - 1), at: t - 1)
            record(try! session.startMonitoring(at: t - 1, fetch: .fetched(settings)), at: t - 1)
        }
    }

    var events: [RoadSaveEvent] { log.compactMap { if case .emit(let e) = $0.action { e } else { nil } } }
    var tripStarts: [TripStartInfo] { events.compactMap { if case .tripDidStart(let i) = $0.body { i } else { nil } } }
    var tripEnds: [TripInfo] { events.compactMap { if case .tripDidEnd(let i) = $0.body { i } else { nil } } }
    var crashes: [CrashInfo] { events.compactMap { if case .crashDetected(let i) = $0.body { i } else { nil } } }
    var followUps: [CrashFollowUpInfo] {
        events.compactMap { if case .crashFollowUp(let i) = $0.body { i } else { nil } }
    }
    var candidates: [CrashCandidate] { log.compactMap { if case .evaluateCrash(let c) = $0.action { c } else { nil } } }
    var dismissals: [FalsePositiveReason] {
        log.compactMap { if case .crashDismissed(_, let reason) = $0.action { reason } else { nil } }
    }
    /// When each tripDidEnd was decided (the time of the input that produced it).
    var tripEndDecisionTimes: [Double] {
        log.compactMap { entry in
            if case .emit(let event) = entry.action, case .tripDidEnd = event.body { entry.time } else { nil }
        }
    }
    /// When each tripDidStart was decided.
    var tripStartDecisionTimes: [Double] {
        log.compactMap { entry in
            if case .emit(let event) = entry.action, case .tripDidStart = event.body { entry.time } else { nil }
        }
    }

    mutating func record(_ actions: [DetectionAction], at time: Double) {
        for action in actions {
            log.append((time, action))
            if case .evaluateCrash(let candidate) = action {
                record(session.crashEvaluated(crashID: candidate.crashID, outcome: verdict(candidate)), at: time)
            }
        }
    }

    mutating func feed(_ records: [SensorRecord]) {
        for record in records { self.record(session.handle(record), at: record.t) }
    }

    /// Through the reorder stage first, as replay and the detection service do.
    mutating func feedOrdered(_ records: [SensorRecord], options: RecordOrdering.Options = .init()) {
        var ordering = RecordOrdering(options: options)
        for record in records { feed(ordering.insert(record).ready) }
        feed(ordering.flush())
    }

    /// Lets time run on until nothing is pending (end of input).
    mutating func finish() {
        var previous: Double?
        while let deadline = session.nextDeadline, deadline != previous {
            previous = deadline
            record(session.advance(to: deadline), at: deadline)
        }
    }

    mutating func run(_ records: [SensorRecord]) {
        feed(records)
        finish()
    }
}

extension Script {
    /// The trips a session with the default settings ends when it is given this script's records.
    var tripEnds: [TripInfo] {
        var harness = Harness()
        harness.run(records)
        return harness.tripEnds
    }
}
