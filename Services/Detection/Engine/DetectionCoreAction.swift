import Logging
import RoadSaveModel

/// What `DetectionCore` asks its shell to do.
public enum DetectionCoreAction: Sendable {
    /// Ask journal `journal` (by its index in the core's `journals`) for records.
    case fetch(journal: Int, JournalFetch)
    /// Ask the platform; the answer comes back through `platformAnswered`.
    case callPlatform(PlatformCall)
    /// Store these inputs, events and records not applied in one transaction, then send the replies and let the
    /// events out; tell the core with `committed(lastInput:)` (or stop when the store fails).
    case commit(DetectionCommit)
    /// Send this reply to a control client now (a refusal: nothing to store first).
    case reply(ControlTarget, [UInt8])
    /// Encode and write this checkpoint (waiting for it when `wait`); tell the core with `checkpointWritten`.
    case writeCheckpoint(CheckpointOrder)
    /// The inputs up to `input` are held by a written checkpoint: delete them (and trim what is kept of records
    /// not applied).
    case forgetInputs(through: Int64)
    /// Records of a journal were deleted before they were read: log it (an error, `JournalGap.message`), store it
    /// (it holds readiness across restarts until acknowledged), count it. Also for a known gap that grew.
    case journalGap(JournalGap)
    /// An operator acknowledged these gaps: store that before the reply that follows goes out.
    case journalGapsAcknowledged([JournalGap])
    /// A log line.
    case log(Log.Level, String, [(String, String)])
    /// The stop is done (or the service cannot go on): close the sockets and end.
    case stop

    public var isLog: Bool { if case .log = self { true } else { false } }
}

/// Where a control command's reply goes (the shell's routing frames) and who sent it (the operator key's name).
public struct ControlTarget: Sendable, Equatable {
    public var frames: [[UInt8]]
    public var key: String?

    public init(frames: [[UInt8]], key: String?) {
        self.frames = frames
        self.key = key
    }
}

/// A platform call to make off the shell's loop.
public enum PlatformCall: Sendable, Equatable {
    /// An application's settings (auto-monitor).
    case settings(app: String)
    /// A suspected crash's evaluation.
    case evaluation(device: DeviceID, candidate: CrashCandidate)
    /// The settings a control command waits for (`waiting` names it).
    case commandSettings(waiting: Int, app: String)
}

/// What the platform answered to a `PlatformCall`.
public enum PlatformAnswer: Sendable, Equatable {
    case settings(app: String, fetch: SettingsFetch)
    case verdict(device: DeviceID, crashID: String, outcome: CrashEvaluationOutcome)
    case commandSettings(waiting: Int, fetch: SettingsFetch)

    /// The platform could not be reached (after the platform client's retries).
    public var isFailure: Bool {
        switch self {
        case .settings(_, let fetch), .commandSettings(_, let fetch): fetch == .unreachable
        case .verdict(_, _, let outcome): outcome == .unreachable
        }
    }
}

/// One transaction's worth: the inputs that gave the events, the events, the records not applied, and the control
/// replies that may leave once it is stored.
public struct DetectionCommit: Sendable {
    public var inputs: [DetectionInput]
    public var events: [RoadSaveEvent]
    public var unapplied: [UnappliedRecord]
    public var replies: [(ControlTarget, [UInt8])]
    /// The wall clock of the commit (stored with the inputs).
    public var at: Double
}

/// A record the fleet could not apply, and why.
public struct UnappliedRecord: Sendable, Equatable {
    public var record: SensorRecord
    public var reason: RecordOrdering.Rejection

    public init(record: SensorRecord, reason: RecordOrdering.Rejection) {
        self.record = record
        self.reason = reason
    }

    public var code: String {
        switch reason {
        case .duplicate: "duplicate"
        case .late: "late"
        case .farInFuture: "farInFuture"
        }
    }

    public var appliedUpTo: Double? {
        if case .late(let appliedUpTo) = reason { appliedUpTo } else { nil }
    }
}

/// A checkpoint to write: as of input `input`, the fleet's shared state, the states of the devices changed since
/// the last one, the devices leaving memory with it, and the journal positions.
public struct CheckpointOrder: Sendable {
    public var generation: Int
    public var input: Int64
    public var shared: FleetSharedState
    public var changed: [FleetDeviceState]
    /// Devices that left memory with this checkpoint (their states are written in its transaction).
    public var leaving: [FleetDeviceState]
    /// Of those, the ones unchanged since a checkpoint wrote them (their rows need only be marked).
    public var leavingUnchanged: Set<DeviceID>
    public var positions: [String: UInt64]
    /// The wall clock it is taken at.
    public var at: Double
    /// A stop's last checkpoint: written before the shell goes on.
    public var wait: Bool
}

/// How a `writeCheckpoint` went.
public enum CheckpointOutcome: Sendable {
    /// Written; it took `cost` seconds to encode and write.
    case written(cost: Double)
    case failed(String)
    /// A later checkpoint superseded it before its turn.
    case superseded
}

/// The two clocks an input comes with: the wall clock (stored with the inputs it gives and given to the fleet) and a
/// monotonic one (for the core's waits and spacings).
public struct DetectionTime: Sendable, Equatable {
    public var wall: Double
    public var monotonic: Double

    public init(wall: Double, monotonic: Double) {
        self.wall = wall
        self.monotonic = monotonic
    }
}

/// Where the core gets back the devices that left memory (the shell's store; a test's dictionary), before an input
/// names them.
public protocol EvictedDeviceStore {
    /// No device ever left memory: nothing to look up.
    var isEmpty: Bool { get }
    /// The state of `device` if it left memory, nil otherwise.
    mutating func takeBack(_ device: DeviceID) throws -> FleetDeviceState?
    /// Every device of `app` that left memory, in user order.
    mutating func takeBack(app: String) throws -> [FleetDeviceState]
}

/// A store of no evicted device (tests, and a fleet that keeps every device in memory).
public struct NoEvictedDevices: EvictedDeviceStore {
    public init() {}
    public var isEmpty: Bool { true }
    public mutating func takeBack(_ device: DeviceID) throws -> FleetDeviceState? { nil }
    public mutating func takeBack(app: String) throws -> [FleetDeviceState] { [] }
}
