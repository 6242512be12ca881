import RecordCodecs
import RoadSaveModel

/// detection's decisions, as a value beside `DeviceFleet`: the re-run of the inputs stored after a checkpoint, which
/// journal each endpoint serves and how far it is read, when a journal is heard or silent and when the clock may
/// decide for silent devices, which inputs must be stored before what they gave may leave, when a checkpoint is
/// due, which control commands wait and for what, and how a stop ends. Each input is a `mutating func` named after
/// what happened (`journalReplied`, `platformAnswered`, `commandArrived`, `tick`, `committed`,
/// `checkpointWritten`, `stopRequested`) and returns what the shell must do (`DetectionCoreAction`: fetch, call the
/// platform, commit, write a checkpoint, log, stop). It never reads a clock (every input carries the wall clock
/// and a monotonic one) and does no I/O: the shell (`DetectionService`) keeps the sockets, the store and the tasks,
/// and lends the store where an input names devices that left memory (`EvictedDeviceStore`).
public struct DetectionCore: Sendable {
    public struct Options: Sendable {
        public var fleet: DeviceFleet.Options
        /// Seconds between checkpoints.
        public var checkpointInterval: Double
        /// Seconds without a record after which an idle device leaves memory with a checkpoint; 0: never.
        public var deviceMemoryIdle: Double
        /// Seconds a journal may leave detection without an answer before the clock runs on without it for the
        /// devices of gateways without watermarks (their records are all read but for that journal's).
        public var silentJournalGrace: Double
        /// Seconds a journal may leave detection without an answer before it is taken as gone: until then no
        /// gateway's watermark that stands still is released by the clock (a partition is not a gateway standing
        /// still: the hold counts again from when the journal answers); after it, the clock decides for every
        /// device, so an ingest gone for good holds no crash decision for ever (docs/operating.md, "Links").
        public var journalSilenceLimit: Double
        /// A journal answers at least every second while detection is there to ask: one that has not answered for
        /// this long is not being heard (ingest down, or the link), and that time is not the devices' silence.
        public var journalHeardWithin = 1.5
        /// Seconds without an answer after which a journal's link is said to be silent (one log line, readiness,
        /// lag): the request's wait plus the time heartbeats take to find a dead connection.
        public var journalSilentAfter: Double
        /// Most inputs kept unstored while they give nothing to send, and longest they wait (see `commit`).
        public var deferredInputs = 256
        public var deferredCommitDelay = 0.05
        /// A checkpoint that cost `c` seconds is followed by the next no sooner than `c × checkpointCostShare`.
        public var checkpointCostShare = 20.0
        /// Longest a graceful stop waits for platform calls in flight and a checkpoint being written.
        public var stopGrace = 10.0
        /// Control commands kept while the inputs are re-run; more are refused ("recovering").
        public var maximumCommandsWhileStarting = 1000
        /// Where the store is (for the log lines about records not applied).
        public var dataDirectory: String
        /// The shard this detection reads (`0/2`, or `all`), for the journal gaps it finds.
        public var shard: String

        public static let defaultJournalSilenceLimit = 300.0

        public init(
            fleet: DeviceFleet.Options = .init(), checkpointInterval: Double = 2, deviceMemoryIdle: Double = 3600,
            silentJournalGrace: Double = 10, journalSilenceLimit: Double = Options.defaultJournalSilenceLimit,
            journalSilentAfter: Double = 4, dataDirectory: String = "", shard: String = "all"
        ) {
            self.fleet = fleet
            self.checkpointInterval = checkpointInterval
            self.deviceMemoryIdle = deviceMemoryIdle
            self.silentJournalGrace = silentJournalGrace
            self.journalSilenceLimit = max(journalSilenceLimit, silentJournalGrace)
            self.journalSilentAfter = journalSilentAfter
            self.dataDirectory = dataDirectory
            self.shard = shard
        }
    }

    public enum Phase: Sendable {
        /// Re-running the inputs stored after the checkpoint; `waiting` while the records of the first are fetched.
        case recovering(queue: [DetectionInput], waiting: Bool)
        case live
        /// Stopping: platform calls in flight get until `deadline` (monotonic); a live fleet is checkpointed last.
        case stopping(deadline: Double, checkpointLast: Bool)
        /// The shell stopped, or the store failed: nothing more is taken.
        case stopped
    }

    /// A control command, parsed and let through by the shell's access check.
    public struct ControlCommand: Sendable {
        public var target: ControlTarget
        public var request: ControlRequest
        /// The JSON as received (stored as the input).
        public var text: String

        public init(target: ControlTarget, request: ControlRequest, text: String) {
            self.target = target
            self.request = request
            self.text = text
        }
    }

    /// What the core counts (the shell's /metrics shows them).
    public struct Counts: Sendable, Equatable {
        public var recordsRead = 0
        public var recoveredInputs = 0
        /// Devices ticked while a journal was behind, their records all read.
        public var devicesTickedAhead = 0
        public var checkpoints = 0
        public var eventsByKind = Dictionary(uniqueKeysWithValues: RoadSaveEvent.names.map { ($0, 0) })
        public var dismissalsByReason = Dictionary(
            uniqueKeysWithValues: FalsePositiveReason.allCases.map { ($0.rawValue, 0) })
        /// Records not applied handed to the store (a re-run's repeats included).
        public var unappliedKept = 0
        /// Journal positions advanced and the records they held (for the lag in records).
        public var positionsRead: UInt64 = 0
        /// When every journal had last been read to its head (monotonic; nil: not since the start).
        public var caughtUpAt: Double?
        /// When the core went live (monotonic), and when it started.
        public var liveAt: Double?
        public var startedAt = 0.0
        /// Journal gaps found by this run (those of the store found before are in `journalGaps`).
        public var journalGapsFound = 0

        public init() {}
    }

    public let options: Options
    public internal(set) var fleet: DeviceFleet
    public internal(set) var journals: [JournalLink]
    public internal(set) var phase: Phase
    public internal(set) var counts = Counts()
    /// The last input stored, and the one the last checkpoint reflects.
    public internal(set) var lastInput: Int64
    public internal(set) var checkpointInput: Int64
    /// Journal positions of the last checkpoint, by journal ID (kept for journals not connected now).
    public internal(set) var checkpointPositions: [String: UInt64]
    public internal(set) var platformCallsInFlight = 0
    /// Records deleted by a journal's retention before they were read (`JournalGap`), acknowledged or not: the
    /// store's, and those found since. Known ones are not reported again.
    public internal(set) var journalGaps: [JournalGap]

    // Internal, not private, as are the setters above: the DetectionCore+*.swift extensions work on them.
    // The work in hand, stored together by `commit`.
    var pendingInputs: [DetectionInput] = []
    var pendingEvents: [RoadSaveEvent] = []
    var pendingUnapplied: [UnappliedRecord] = []
    var pendingReplies: [(ControlTarget, [UInt8])] = []
    /// Inputs that gave nothing to send are stored by then at the latest (monotonic).
    var deferredCommitAt: Double?
    /// Journal positions read when the stop closed the readers.
    var positionsAtStop: [String: UInt64] = [:]
    var commandsWhileStarting: [ControlCommand] = []
    /// Control commands waiting for the settings fetch they need, by number.
    var waitingCommands: [Int: ControlCommand] = [:]
    var nextCommandNumber = 0
    // Checkpoints: one at a time; a later one supersedes one still being written.
    var checkpointInFlight = false
    var checkpointGeneration = 0
    /// What the checkpoint in flight holds: the devices it took from the changed set, its input and positions,
    /// whether devices left memory with it, when it started (monotonic).
    var devicesInFlight: [DeviceID] = []
    var inFlightInput: Int64 = 0
    var inFlightPositions: [String: UInt64] = [:]
    var inFlightEvictions = false
    var inFlightStartedAt = 0.0
    var unsavedDevices: [DeviceID] = []
    /// Devices that left memory with a checkpoint that was not written: the next one writes them (the shell keeps
    /// their states meanwhile).
    var evictionsUnsaved = false
    var nextCheckpointAllowed = 0.0
    var lastCheckpointAt = 0.0
    var residentAtLastCheckpoint = 0
    var reportedCaughtUp = false
    var unappliedLog: UnappliedRecordsLog
    /// The time of the input being taken.
    var clock: DetectionTime
    /// Gateways whose stalled watermark was logged, until one of their streams moves: a gateway's batches are cut
    /// into a stream per shard, and each stream's hold runs out on its own, but the operator is told once a gateway.
    var stalledGatewaysWarned: Set<String> = []
    /// The name of the stream each shard's chunks came from last (`streamName(feed:shard:gateway:)`).
    var streamNames: [Int: (feed: String, gateway: String, name: String)] = [:]

    /// A core that starts from a checkpoint (`fleet` as it held it, `checkpointInput`, `checkpointPositions`) and
    /// the inputs stored after it (`recovery`, the last stored being `lastInput`), reading `journalEndpoints`.
    public init(
        options: Options, fleet: DeviceFleet, checkpointInput: Int64 = 0, checkpointPositions: [String: UInt64] = [:],
        recovery: [DetectionInput] = [], lastInput: Int64 = 0, journalGaps: [JournalGap] = [],
        journalEndpoints: [String], at time: DetectionTime
    ) {
        self.options = options
        self.journalGaps = journalGaps
        self.fleet = fleet
        self.checkpointInput = checkpointInput
        self.checkpointPositions = checkpointPositions
        self.lastInput = lastInput
        journals = journalEndpoints.map {
            JournalLink(endpoint: $0, silentAfter: options.journalSilentAfter, at: time.monotonic)
        }
        phase = .recovering(queue: recovery, waiting: false)
        unappliedLog = UnappliedRecordsLog(dataDirectory: options.dataDirectory)
        counts.startedAt = time.monotonic
        lastCheckpointAt = time.monotonic
        clock = time
    }

    // MARK: Reading

    /// Every journal's last reply reached its head, and no journal has fallen silent since.
    public var journalsCaughtUp: Bool {
        !journals.isEmpty && journals.allSatisfy { $0.caughtUp && !$0.hearing.isSilent }
    }

    /// Seconds since every journal was last read to its head: 0 while caught up, nil before the first time. A
    /// journal that has fallen silent is not caught up, whatever its last reply said: what it holds now is unknown.
    public func lagSeconds(now monotonic: Double) -> Double? {
        journalsCaughtUp ? 0 : counts.caughtUpAt.map { monotonic - $0 }
    }

    /// The journals that have fallen silent (`Options.journalSilentAfter` without an answer), with the seconds since
    /// each last answered at `monotonic`: detection is not ready while there is one.
    public func silentJournals(now monotonic: Double) -> [(endpoint: String, unanswered: Double)] {
        journals.filter(\.hearing.isSilent).map { ($0.endpoint, $0.hearing.unanswered(at: monotonic)) }
    }

    public var isLive: Bool { if case .live = phase { true } else { false } }

    /// Inputs still to re-run after the checkpoint.
    public var recoveryQueueCount: Int { if case .recovering(let queue, _) = phase { queue.count } else { 0 } }

    /// Devices in memory with a trip in progress (a pass over all of them: for metrics now and then).
    public var tripsInProgress: Int { fleet.tripsInProgress }

    /// Seconds from the start of a checkpoint that cost `cost` to the next one allowed: at most 1/`share` of the
    /// time goes to checkpoints; none follows one that took devices out of memory (more may be leaving).
    public static func checkpointSpacing(cost: Double, devicesLeft: Bool, share: Double = 20) -> Double {
        devicesLeft ? 0 : cost * share
    }

    /// Whether a checkpoint may come before its spacing is over: idle devices leave memory only with a checkpoint,
    /// so one is not postponed while the devices in memory have more than doubled since the last (a flood of new
    /// devices made one expensive checkpoint postpone the next by a minute, while every device met meanwhile stayed
    /// in memory: 6 GiB with a million).
    public static func checkpointDue(resident: Int, residentAtLast: Int) -> Bool {
        resident > max(1000, 2 * residentAtLast)
    }

    /// The fleet's name for a gateway's stream: the journal's ID, the shard and the gateway's name in it (two
    /// ingests may each carry a stream of the same gateway, each with its own watermark; and a batch's promise
    /// holds for a shard's devices from that shard's chunk on: `JournalChunk`).
    public static func streamName(feed: String, shard: Int, gateway: String) -> String { "\(feed)/\(shard)/\(gateway)" }

    /// A gateway as the operator knows it: one journal's gateway, whatever shards its batches were cut into (each
    /// shard's part is a stream of its own, `streamName`). The inverse for a stream's name: nil if not one.
    static func gatewayName(feed: String, gateway: String) -> String { "\(feed)/\(gateway)" }
    /// The journal of a stream, by its name (`streamName`); nil if not one.
    static func feed(ofStream stream: String) -> String? {
        let parts = stream.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, Int(parts[1]) != nil else { return nil }
        return String(parts[0])
    }
    static func gatewayName(ofStream stream: String) -> String? {
        let parts = stream.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, Int(parts[1]) != nil else { return nil }
        return gatewayName(feed: String(parts[0]), gateway: String(parts[2]))
    }

    func seconds(_ value: Double) -> String { JSONObjectWriter.number(value, decimals: 3) }
}
