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
        /// Seconds a journal may leave detection without an answer before the clock runs on without it.
        public var silentJournalGrace: Double
        /// A journal answers at least every second while detection is there to ask: one that has not answered for
        /// this long is not being heard (ingest down, or the link), and that time is not the devices' silence.
        public var journalHeardWithin = 1.5
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

        public init(
            fleet: DeviceFleet.Options = .init(), checkpointInterval: Double = 2, deviceMemoryIdle: Double = 3600,
            silentJournalGrace: Double = 10, dataDirectory: String = "", shard: String = "all"
        ) {
            self.fleet = fleet
            self.checkpointInterval = checkpointInterval
            self.deviceMemoryIdle = deviceMemoryIdle
            self.silentJournalGrace = silentJournalGrace
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
    public private(set) var fleet: DeviceFleet
    public private(set) var journals: [JournalLink]
    public private(set) var phase: Phase
    public private(set) var counts = Counts()
    /// The last input stored, and the one the last checkpoint reflects.
    public private(set) var lastInput: Int64
    public private(set) var checkpointInput: Int64
    /// Journal positions of the last checkpoint, by journal ID (kept for journals not connected now).
    public private(set) var checkpointPositions: [String: UInt64]
    public private(set) var platformCallsInFlight = 0
    /// Records deleted by a journal's retention before they were read (`JournalGap`), acknowledged or not: the
    /// store's, and those found since. Known ones are not reported again.
    public private(set) var journalGaps: [JournalGap]

    // The work in hand, stored together by `commit`.
    private var pendingInputs: [DetectionInput] = []
    private var pendingEvents: [RoadSaveEvent] = []
    private var pendingUnapplied: [UnappliedRecord] = []
    private var pendingReplies: [(ControlTarget, [UInt8])] = []
    /// Inputs that gave nothing to send are stored by then at the latest (monotonic).
    private var deferredCommitAt: Double?
    /// Journal positions read when the stop closed the readers.
    private var positionsAtStop: [String: UInt64] = [:]
    private var commandsWhileStarting: [ControlCommand] = []
    /// Control commands waiting for the settings fetch they need, by number.
    private var waitingCommands: [Int: ControlCommand] = [:]
    private var nextCommandNumber = 0
    // Checkpoints: one at a time; a later one supersedes one still being written.
    private var checkpointInFlight = false
    private var checkpointGeneration = 0
    /// What the checkpoint in flight holds: the devices it took from the changed set, its input and positions,
    /// whether devices left memory with it, when it started (monotonic).
    private var devicesInFlight: [DeviceID] = []
    private var inFlightInput: Int64 = 0
    private var inFlightPositions: [String: UInt64] = [:]
    private var inFlightEvictions = false
    private var inFlightStartedAt = 0.0
    private var unsavedDevices: [DeviceID] = []
    /// Devices that left memory with a checkpoint that was not written: the next one writes them (the shell keeps
    /// their states meanwhile).
    private var evictionsUnsaved = false
    private var nextCheckpointAllowed = 0.0
    private var lastCheckpointAt = 0.0
    private var residentAtLastCheckpoint = 0
    private var reportedCaughtUp = false
    private var unappliedLog: UnappliedRecordsLog
    /// The time of the input being taken.
    private var clock: DetectionTime

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
        journals = journalEndpoints.map { JournalLink(endpoint: $0, at: time.monotonic) }
        phase = .recovering(queue: recovery, waiting: false)
        unappliedLog = UnappliedRecordsLog(dataDirectory: options.dataDirectory)
        counts.startedAt = time.monotonic
        lastCheckpointAt = time.monotonic
        clock = time
    }

    // MARK: Inputs

    /// The shell is up: every journal is asked who it is, and the re-run begins (it goes live at once when there
    /// is nothing to re-run, or as soon as the journals have named themselves).
    public mutating func start(at time: DetectionTime, evicted: inout some EvictedDeviceStore) -> [DetectionCoreAction]
    {
        clock = time
        var actions: [DetectionCoreAction] = journals.indices.map { .fetch(journal: $0, journals[$0].greeting()) }
        continueRecovery(at: time, evicted: &evicted, into: &actions)
        return actions
    }

    /// Journal `index` answered a fetch, with these chunks (decoded by the shell, in the reply's order).
    public mutating func journalReplied(
        _ index: Int, _ answer: JournalAnswer, chunks: [JournalChunkRecords],
        at time: DetectionTime,
        evicted: inout some EvictedDeviceStore
    ) -> [DetectionCoreAction] {
        clock = time
        var actions: [DetectionCoreAction] = []
        if case .stopped = phase { return actions }
        if case .stopping = phase { return actions }
        journals[index].replied(answer, at: time.monotonic)
        if let error = answer.error {
            actions.append(
                .log(.warning, "journal refused a request", [("endpoint", journals[index].endpoint), ("error", error)]))
            journals[index].retryAt = time.monotonic + 1
            return actions
        }
        guard journals[index].feed == answer.feed else {
            // First contact (or the endpoint now serves another journal): continue from what the checkpoint says.
            if let previous = journals[index].feed {
                actions.append(
                    .log(
                        .warning, "the journal at an endpoint changed",
                        [("endpoint", journals[index].endpoint), ("was", previous), ("now", answer.feed)]))
            }
            journals[index].adopt(
                feed: answer.feed, position: positionAfterRecovery(of: answer.feed),
                checkpointed: checkpointPositions[answer.feed] ?? 0)
            if case .recovering = phase {
                continueRecovery(at: time, evicted: &evicted, into: &actions)
            } else if case .live = phase {
                actions.append(.fetch(journal: index, journals[index].next()))
            }
            return actions
        }
        noteGap(index, answer, into: &actions)
        if case .recovering(var queue, true) = phase, case .records(let feed, _, let to, let now) = queue.first,
            feed == answer.feed
        {
            queue.removeFirst()
            phase = .recovering(queue: queue, waiting: false)
            counts.recoveredInputs += 1
            apply(chunks, feed: answer.feed, now: now, evicted: &evicted, into: &actions)
            journals[index].position = to
            continueRecovery(at: time, evicted: &evicted, into: &actions)
            return actions
        }
        guard case .live = phase else { return actions }
        journals[index].noteEnd(answer, items: chunks.count)
        if journals[index].unansweredBeforeReply > options.journalHeardWithin {
            let seconds = (journals[index].unansweredBeforeReply * 10).rounded() / 10
            resumeClock(
                "the journal at \(journals[index].endpoint) answered after \(seconds) s", at: time, into: &actions)
        }
        if journalsCaughtUp { counts.caughtUpAt = time.monotonic }
        if !reportedCaughtUp, journalsCaughtUp {
            reportedCaughtUp = true
            actions.append(
                .log(
                    .info, "caught up with the journals",
                    [("seconds", seconds(time.monotonic - counts.startedAt)), ("records", String(counts.recordsRead))]))
        }
        let after = journals[index].position
        journals[index].position = answer.to
        // The next request goes out before this reply is worked through, so the journal's answer overlaps the work.
        actions.append(.fetch(journal: index, journals[index].next()))
        guard !chunks.isEmpty else { return actions }
        counts.positionsRead += answer.to - after
        pendingInputs.append(.records(feed: answer.feed, after: after, to: answer.to, now: time.wall))
        apply(chunks, feed: answer.feed, now: time.wall, evicted: &evicted, into: &actions)
        commit(at: time, into: &actions)
        return actions
    }

    /// The platform answered a `callPlatform`.
    public mutating func platformAnswered(
        _ answer: PlatformAnswer, at time: DetectionTime,
        evicted: inout some EvictedDeviceStore
    ) -> [DetectionCoreAction] {
        clock = time
        var actions: [DetectionCoreAction] = []
        platformCallsInFlight -= 1
        switch phase {
        case .stopped: return actions
        default: break
        }
        switch answer {
        case .settings(let app, let fetch):
            pendingInputs.append(.settings(app: app, fetch: fetch, now: time.wall))
            perform(fleet.settingsFetched(app: app, fetch, now: time.wall), into: &actions)
        case .verdict(let device, let crashID, let outcome):
            if outcome == .unreachable {
                actions.append(
                    .log(
                        .warning, "platform unreachable: crash reported with confidence unknown",
                        [("device", device.description), ("crashID", crashID)]))
            }
            pendingInputs.append(.verdict(device: device, crashID: crashID, outcome: outcome))
            perform(fleet.crashEvaluated(device: device, crashID: crashID, outcome: outcome), into: &actions)
        case .commandSettings(let number, let fetch):
            guard let command = waitingCommands.removeValue(forKey: number) else { break }
            execute(command, fetch: fetch, at: time, evicted: &evicted, into: &actions)
        }
        commit(at: time, into: &actions)
        return actions
    }

    /// A control command came (parsed, and allowed by the shell's access check).
    public mutating func commandArrived(
        _ command: ControlCommand, at time: DetectionTime,
        evicted: inout some EvictedDeviceStore
    ) -> [DetectionCoreAction] {
        clock = time
        var actions: [DetectionCoreAction] = []
        switch phase {
        case .live:
            handle(command, at: time, evicted: &evicted, into: &actions)
        case .stopping, .stopped:
            actions.append(
                .reply(command.target, ControlReply.failure("stopping", "the detection service is shutting down")))
        case .recovering:
            // Applied once the stored inputs have been re-run, so that they come after them, as they did.
            guard commandsWhileStarting.count < options.maximumCommandsWhileStarting else {
                actions.append(
                    .reply(
                        command.target,
                        ControlReply.failure(
                            "recovering",
                            "the detection service is re-running its inputs after a restart; try again in a moment")))
                break
            }
            commandsWhileStarting.append(command)
        }
        return actions
    }

    /// An operator command came (parsed, and allowed by the shell's access check). It is not an input: what it
    /// changes is stored by the shell before the reply leaves.
    public mutating func operatorCommandArrived(
        _ command: OperatorCommand, from target: ControlTarget,
        at time: DetectionTime
    ) -> [DetectionCoreAction] {
        clock = time
        switch phase {
        case .stopping, .stopped:
            return [.reply(target, ControlReply.failure("stopping", "the detection service is shutting down"))]
        case .recovering, .live:
            break
        }
        switch command {
        case .acknowledgeJournalGaps:
            let open = journalGaps.indices.filter { !journalGaps[$0].acknowledged }
            for index in open { journalGaps[index].acknowledged = true }
            let gaps = open.map { journalGaps[$0] }
            var actions: [DetectionCoreAction] = []
            if !gaps.isEmpty { actions.append(.journalGapsAcknowledged(gaps)) }
            actions.append(
                .log(
                    .info, "control command",
                    [
                        ("key", target.key ?? "-"), ("command", command.rawValue), ("app", "*"), ("user", "*"),
                        ("result", "ok (\(gaps.count) gaps)"),
                    ]))
            actions.append(.reply(target, OperatorCommand.acknowledgedReply(gaps)))
            return actions
        }
    }

    /// Journal gaps an operator has not acknowledged yet: detection is not ready while there is one.
    public var unacknowledgedGaps: [JournalGap] { journalGaps.filter { !$0.acknowledged } }

    /// Time passed (the shell calls this about ten times a second): refused requests are asked again, inputs that
    /// waited are stored, silent devices' timers may fire, a checkpoint may be due, a stop may be done.
    public mutating func tick(at time: DetectionTime, evicted: inout some EvictedDeviceStore) -> [DetectionCoreAction] {
        clock = time
        var actions: [DetectionCoreAction] = []
        for line in unappliedLog.roll(now: time.monotonic) {
            actions.append(.log(line.level, line.message, line.fields))
        }
        switch phase {
        case .stopped:
            return actions
        case .stopping(let deadline, let checkpointLast):
            finishStopping(deadline: deadline, checkpointLast: checkpointLast, at: time, into: &actions)
            return actions
        case .recovering:
            retryRefused(at: time, into: &actions)
            return actions
        case .live:
            break
        }
        retryRefused(at: time, into: &actions)
        if let deferredCommitAt, time.monotonic >= deferredCommitAt { commit(force: true, at: time, into: &actions) }
        clockTick(at: time, into: &actions)
        if time.monotonic - lastCheckpointAt >= options.checkpointInterval {
            lastCheckpointAt = time.monotonic
            checkpoint(at: time, into: &actions)
        }
        return actions
    }

    /// Journals that refused a request are asked again a second later: who they are, the range a re-run waits
    /// for, or what follows.
    private mutating func retryRefused(at time: DetectionTime, into actions: inout [DetectionCoreAction]) {
        for index in journals.indices {
            guard let retryAt = journals[index].retryAt, time.monotonic >= retryAt else { continue }
            journals[index].retryAt = nil
            if journals[index].feed == nil {
                actions.append(.fetch(journal: index, journals[index].greeting()))
            } else if case .recovering(let queue, true) = phase,
                case .records(let feed, let after, let to, _) = queue.first,
                feed == journals[index].feed
            {
                actions.append(.fetch(journal: index, journals[index].range(after: after, through: to)))
            } else if case .live = phase {
                actions.append(.fetch(journal: index, journals[index].next()))
            }
        }
    }

    /// The shell stored a `commit` (`lastInput`: the sequence number the store gave its last input, when it had
    /// inputs; the core counted on it already).
    public mutating func committed(lastInput: Int64?) {
        if let lastInput { self.lastInput = max(self.lastInput, lastInput) }
    }

    /// A `writeCheckpoint` ended: what it holds is safe, so the inputs before it can go and ingest may drop the
    /// records before its positions. One that failed is written again with the next (its inputs are kept).
    public mutating func checkpointWritten(
        generation: Int, outcome: CheckpointOutcome,
        at time: DetectionTime
    ) -> [DetectionCoreAction] {
        guard generation == checkpointGeneration else { return [] }
        clock = time
        checkpointInFlight = false
        let changed = devicesInFlight
        devicesInFlight = []
        let reason: String
        switch outcome {
        case .written(let cost):
            nextCheckpointAllowed =
                inFlightStartedAt
                + Self.checkpointSpacing(
                    cost: cost, devicesLeft: inFlightEvictions,
                    share: options.checkpointCostShare)
            evictionsUnsaved = false
            checkpointInput = inFlightInput
            checkpointPositions = inFlightPositions
            for index in journals.indices {
                if let feed = journals[index].feed { journals[index].checkpointed = inFlightPositions[feed] ?? 0 }
            }
            counts.checkpoints += 1
            return [.forgetInputs(through: inFlightInput)]
        case .failed(let error): reason = error
        case .superseded: reason = "superseded by a later checkpoint before its turn"
        }
        unsavedDevices += changed
        if inFlightEvictions { evictionsUnsaved = true }
        return [.log(.error, "checkpoint not written (the inputs since the last one are kept)", [("error", reason)])]
    }

    /// A graceful stop: no more records are read, platform calls in flight get up to `stopGrace` seconds and their
    /// answers are stored, a last checkpoint is taken (of a live fleet only: one stopped while re-running its inputs
    /// holds part of them, and those not re-run yet must stay in the store), then `stop`.
    public mutating func stopRequested(at time: DetectionTime) -> [DetectionCoreAction] {
        var actions: [DetectionCoreAction] = []
        switch phase {
        case .stopping, .stopped: return actions
        default: break
        }
        let wasLive = if case .live = phase { true } else { false }
        phase = .stopping(deadline: time.monotonic + options.stopGrace, checkpointLast: wasLive)
        for command in commandsWhileStarting {
            actions.append(
                .reply(command.target, ControlReply.failure("stopping", "the detection service is shutting down")))
        }
        commandsWhileStarting.removeAll()
        for journal in journals { if let feed = journal.feed { positionsAtStop[feed] = journal.position } }
        finishStopping(deadline: time.monotonic + options.stopGrace, checkpointLast: wasLive, at: time, into: &actions)
        return actions
    }

    /// The store failed: nothing more may be stored or let out. A restart re-runs from the last consistent state.
    public mutating func storeFailed(_ error: String) -> [DetectionCoreAction] {
        phase = .stopped
        return [.log(.error, "detection store failed: stopping", [("error", error)]), .stop]
    }

    // MARK: Reading

    /// Every journal's last reply reached its head.
    public var journalsCaughtUp: Bool { !journals.isEmpty && journals.allSatisfy(\.caughtUp) }

    /// Seconds since every journal was last read to its head: 0 while caught up, nil before the first time.
    public func lagSeconds(now monotonic: Double) -> Double? {
        journalsCaughtUp ? 0 : counts.caughtUpAt.map { monotonic - $0 }
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

    // MARK: Recovery

    /// Re-runs stored inputs one by one; records are fetched again from their journal by exact range. When the
    /// queue is empty the core goes live: reading journals from where the re-run ended, asking the platform again
    /// for whatever the fleet still waits for, and taking the commands that came meanwhile.
    private mutating func continueRecovery(
        at time: DetectionTime, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        guard case .recovering(var queue, let waiting) = phase, !waiting else { return }
        while let input = queue.first {
            if case .records(let feed, let after, let to, _) = input {
                // Records are asked of the journal that holds them: wait until every journal has named itself.
                guard journals.allSatisfy({ $0.feed != nil }) else {
                    phase = .recovering(queue: queue, waiting: false)
                    return
                }
                guard let index = journals.firstIndex(where: { $0.feed == feed }) else {
                    actions.append(
                        .log(
                            .error, "records of a journal no longer configured cannot be re-read: skipped",
                            [("journal", feed), ("after", String(after)), ("to", String(to))]))
                    queue.removeFirst()
                    continue
                }
                phase = .recovering(queue: queue, waiting: true)
                actions.append(.fetch(journal: index, journals[index].range(after: after, through: to)))
                return
            }
            queue.removeFirst()
            counts.recoveredInputs += 1
            rerun(input, evicted: &evicted, into: &actions)
        }
        commit(eventsOnly: true, at: time, into: &actions)
        phase = .live
        counts.liveAt = time.monotonic
        resumeClock("started", at: time, into: &actions)
        actions.append(
            .log(
                .info, "live",
                [
                    ("recoveredInputs", String(counts.recoveredInputs)),
                    ("devices", String(fleet.deviceCount)),
                    ("seconds", seconds(time.monotonic - counts.startedAt)),
                ]))
        perform(fleet.pendingPlatformCalls, into: &actions)
        // A journal still to name itself is read once it has (its first reply).
        for index in journals.indices where journals[index].feed != nil {
            actions.append(.fetch(journal: index, journals[index].next()))
        }
        let held = commandsWhileStarting
        commandsWhileStarting.removeAll()
        for command in held { handle(command, at: time, evicted: &evicted, into: &actions) }
    }

    /// Applies a stored input again (recovery); records are re-run where their fetch is answered.
    private mutating func rerun(
        _ input: DetectionInput, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        switch input {
        case .records:
            break
        case .settings(let app, let fetch, let now):
            perform(fleet.settingsFetched(app: app, fetch, now: now), into: &actions)
        case .verdict(let device, let crashID, let outcome):
            perform(fleet.crashEvaluated(device: device, crashID: crashID, outcome: outcome), into: &actions)
        case .control(let text, let fetch, let now):
            guard let request = try? ControlRequest(json: Array(text.utf8)) else { return }
            bringBack(for: request, evicted: &evicted, into: &actions)
            perform(fleet.control(request, now: now, fetch: fetch).actions, into: &actions)
        case .tick(let now):
            perform(fleet.tick(now: now), into: &actions)
        case .deviceTick(let now, let devices):
            for device in devices { bringBack(device, evicted: &evicted, into: &actions) }
            perform(fleet.tick(now: now, only: devices), into: &actions)
        case .resumed(let now):
            fleet.resumeClock(now: now)
        }
    }

    /// Where reading of `feed` goes on after the re-run: its last records input, else its checkpoint position.
    private func positionAfterRecovery(of feed: String) -> UInt64 {
        var position = checkpointPositions[feed] ?? 0
        if case .recovering(let queue, _) = phase {
            for case .records(let inputFeed, _, let to, _) in queue where inputFeed == feed {
                position = max(position, to)
            }
        }
        return position
    }

    // MARK: Journals and the clock

    /// A reply that says records after the position asked from were deleted before they were read: a gap, said
    /// once (the shell logs it, stores it, and holds readiness until an operator acknowledges it). Reading goes on
    /// with what remains: the devices of today matter more than what is lost. A known hole is not said again,
    /// unless more of it was deleted since (detection still reads from the same position).
    private mutating func noteGap(_ index: Int, _ answer: JournalAnswer, into actions: inout [DetectionCoreAction]) {
        guard let deleted = answer.deletedThrough, deleted > answer.after else { return }
        if let known = journalGaps.firstIndex(where: { $0.isSameHole(journal: answer.feed, position: answer.after) }) {
            guard journalGaps[known].deletedThrough < deleted else { return }
            journalGaps[known].deletedThrough = deleted
            journalGaps[known].acknowledged = false
            actions.append(.journalGap(journalGaps[known]))
            return
        }
        let gap = JournalGap(
            journal: answer.feed, endpoint: journals[index].endpoint, shard: options.shard,
            position: answer.after, deletedThrough: deleted)
        journalGaps.append(gap)
        counts.journalGapsFound += 1
        actions.append(.journalGap(gap))
    }

    /// A reply's chunks, each chunk's records and then its gateway's watermark.
    private mutating func apply(
        _ chunks: [JournalChunkRecords], feed: String, now: Double,
        evicted: inout some EvictedDeviceStore, into actions: inout [DetectionCoreAction]
    ) {
        for chunk in chunks {
            let stream = chunk.gateway.map { Self.streamName(feed: feed, shard: chunk.shard, gateway: $0) }
            for record in chunk.records {
                counts.recordsRead += 1
                if !evicted.isEmpty { bringBack(record.device, evicted: &evicted, into: &actions) }
                perform(fleet.receive(record, from: stream, now: now), into: &actions)
            }
            if let stream, let watermark = chunk.watermark {
                fleet.watermarkRead(stream: stream, watermark: watermark, now: now)
            }
        }
    }

    /// Detection hears its journals again (it started, or a journal answers after an outage): the time it could
    /// not is not the devices' silence (`DeviceFleet.resumeClock`). Stored like any input, so that a re-run measures
    /// silence as this run did.
    private mutating func resumeClock(
        _ reason: String, at time: DetectionTime, into actions: inout [DetectionCoreAction]
    ) {
        guard fleet.deviceCount > 0 else { return }
        actions.append(.log(.info, "devices' quiet time counts from now", [("reason", reason)]))
        fleet.resumeClock(now: time.wall)
        pendingInputs.append(.resumed(now: time.wall))
        commit(at: time, into: &actions)
    }

    /// Clock-driven decisions, only while every journal has been read to its end and still answers: while records
    /// wait unread, or cannot reach detection, a device is not silent. A journal that stopped answering is waited
    /// for `silentJournalGrace` seconds, then the clock runs on without it (a dead ingest must not hold a crash
    /// decision for ever); when it answers again, quiet time counts from then (`resumeClock`).
    ///
    /// While a journal is behind, devices due (a crash to decide, a trip to end) are not kept waiting for the whole
    /// backlog: each request asks the journals where those devices' records end (`JournalFetch.watch`), and the
    /// devices every journal has already given all of are ticked alone (`deviceTick`). Devices of gateways' streams
    /// go by their watermarks, which hold however far behind detection is, so they are served either way.
    private mutating func clockTick(at time: DetectionTime, into actions: inout [DetectionCoreAction]) {
        let monotonic = time.monotonic
        let heardWithin = options.journalHeardWithin
        let grace = options.silentJournalGrace
        func heard(_ journal: JournalLink) -> Bool { monotonic - journal.lastReply < heardWithin }
        func given(_ journal: JournalLink) -> Bool { monotonic - journal.lastReply > grace }
        let readAll = journals.allSatisfy { ($0.caughtUp && heard($0)) || given($0) }
        guard readAll else {
            let due = fleet.dueDevices(now: time.wall, limit: Self.maximumWatched)
            let read = due.filter { device in
                journals.allSatisfy { journal in
                    (journal.caughtUp && heard(journal)) || given(journal)
                        || (heard(journal) && journal.hasGivenAll(of: device))
                }
            }
            for index in journals.indices { journals[index].watch = due }
            let tickActions = fleet.tick(now: time.wall, only: read)
            guard fleet.lastTickChangedState || !tickActions.isEmpty else { return }
            counts.devicesTickedAhead += read.count
            pendingInputs.append(.deviceTick(now: time.wall, devices: read))
            perform(tickActions, into: &actions)
            commit(at: time, into: &actions)
            return
        }
        for index in journals.indices { journals[index].watch = [] }
        let tickActions = fleet.tick(now: time.wall)
        // A tick that changed nothing need not be stored: the re-run would do nothing with it either.
        guard fleet.lastTickChangedState || !tickActions.isEmpty else { return }
        pendingInputs.append(.tick(now: time.wall))
        perform(tickActions, into: &actions)
        commit(at: time, into: &actions)
    }

    /// The most devices asked about in one request (the feed protocol's limit).
    public static let maximumWatched = 1024

    // MARK: Control

    /// A command taken now: the startup guard's settings fetched first when it needs them.
    private mutating func handle(
        _ command: ControlCommand, at time: DetectionTime, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        guard command.request.needsSettings else {
            execute(command, fetch: nil, at: time, evicted: &evicted, into: &actions)
            return
        }
        nextCommandNumber += 1
        waitingCommands[nextCommandNumber] = command
        call(.commandSettings(waiting: nextCommandNumber, app: command.request.app), into: &actions)
    }

    private mutating func execute(
        _ command: ControlCommand, fetch: SettingsFetch?, at time: DetectionTime,
        evicted: inout some EvictedDeviceStore, into actions: inout [DetectionCoreAction]
    ) {
        guard case .live = phase else {
            actions.append(
                .reply(command.target, ControlReply.failure("stopping", "the detection service is shutting down")))
            return
        }
        let request = command.request
        pendingInputs.append(.control(request: command.text, fetch: fetch, now: time.wall))
        bringBack(for: request, evicted: &evicted, into: &actions)
        let (outcome, fleetActions) = fleet.control(request, now: time.wall, fetch: fetch)
        perform(fleetActions, into: &actions)
        actions.append(
            .log(.info, "control command", Self.audit(request, key: command.target.key, result: outcome.summary)))
        // The reply leaves once the command is stored.
        pendingReplies.append((command.target, outcome.reply))
        commit(at: time, into: &actions)
    }

    /// The audit line's fields of a command: the operator key's name, the command, the application masked, the
    /// user, the result. Never the key itself.
    public static func audit(_ request: ControlRequest?, key: String?, result: String) -> [(String, String)] {
        [
            ("key", key ?? "-"), ("command", request?.command.rawValue ?? "?"),
            ("app", request.map { Secret.mask($0.app) } ?? "?"), ("user", request.map { $0.user ?? "*" } ?? "?"),
            ("result", result),
        ]
    }

    // MARK: Devices out of memory

    /// Puts a device that left memory back into the fleet before an input names it. A store that cannot be read
    /// stops the service (as a failed commit does): going on would start the device afresh.
    private mutating func bringBack(
        _ device: DeviceID, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        guard !evicted.isEmpty, !fleet.isResident(device) else { return }
        do {
            if let state = try evicted.takeBack(device) { fleet.restore(state) }
        } catch {
            actions += storeFailed("\(error)")
        }
    }

    /// A command for one device brings it back; one for every device of an application brings them all back.
    private mutating func bringBack(
        for request: ControlRequest, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        guard !evicted.isEmpty else { return }
        if let user = request.user {
            bringBack(DeviceID(app: request.app, user: user), evicted: &evicted, into: &actions)
            return
        }
        do {
            for state in try evicted.takeBack(app: request.app) where !fleet.isResident(state.device) {
                fleet.restore(state)
            }
        } catch {
            actions += storeFailed("\(error)")
        }
    }

    // MARK: The fleet's actions

    private mutating func perform(_ fleetActions: [FleetAction], into actions: inout [DetectionCoreAction]) {
        for action in fleetActions {
            switch action {
            case .emit(let event):
                counts.eventsByKind[event.name, default: 0] += 1
                pendingEvents.append(event)
                actions.append(
                    .log(
                        .info, "event",
                        [
                            ("event", event.name), ("device", event.device.description),
                            ("eventID", event.eventID),
                        ]))
            case .fetchSettings(let app):
                guard case .live = phase else { continue }
                call(.settings(app: app), into: &actions)
            case .evaluateCrash(let device, let candidate):
                guard case .live = phase else { continue }
                call(.evaluation(device: device, candidate: candidate), into: &actions)
            case .crashDismissed(let device, let candidate, let reason):
                counts.dismissalsByReason[reason.rawValue, default: 0] += 1
                actions.append(
                    .log(
                        .info, "suspected crash dismissed",
                        [
                            ("device", device.description), ("crashID", candidate.crashID),
                            ("at", ISO8601.string(fromSeconds: candidate.time)), ("reason", reason.rawValue),
                            ("peakG", JSONObjectWriter.number(candidate.peakG, decimals: 1)),
                        ]))
            case .recordRejected(let record, let reason):
                if case .duplicate = reason {
                    // A duplicate is a record already taken: nothing of it is lost (but a run of them far behind is
                    // said).
                    let appliedUpTo = fleet.deviceState(record.device)?.ordering.released
                    for line in unappliedLog.duplicate(record, appliedUpTo: appliedUpTo) {
                        actions.append(.log(line.level, line.message, line.fields))
                    }
                    continue
                }
                pendingUnapplied.append(UnappliedRecord(record: record, reason: reason))
                for line in unappliedLog.noted(record, reason, now: clock.monotonic) {
                    actions.append(.log(line.level, line.message, line.fields))
                }
            case .deviceNotMonitored(let device, let error):
                actions.append(
                    .log(
                        .error, "device not monitored",
                        [("device", device.description), ("error", error.code), ("reason", error.description)]))
            case .watermarkHoldExpired(let stream, let stillSince):
                actions.append(
                    .log(
                        .warning,
                        "a gateway's watermark has stood still too long: its devices go by the clock until it moves (records it delivers later may be too late)",
                        [
                            ("stream", stream), ("stillSince", ISO8601.string(fromSeconds: stillSince)),
                            ("hold", JSONObjectWriter.number(options.fleet.watermarkHold, decimals: 1)),
                        ]))
            }
        }
    }

    private mutating func call(_ call: PlatformCall, into actions: inout [DetectionCoreAction]) {
        platformCallsInFlight += 1
        actions.append(.callPlatform(call))
    }

    // MARK: Storing

    /// Stores the inputs and events in hand in one transaction (one fsync), then lets the events and replies go.
    /// Inputs that gave nothing to send wait for the next commit (one with events, replies or records not applied,
    /// a checkpoint's, or `force`): until something leaves the process nothing depends on them, and a restart that
    /// lost them re-reads their records from the journal, so records that only moved devices along cost no fsync
    /// (and a crash's verdict is stored in the same transaction as the records that raised it). At most
    /// `deferredInputs` wait, and no longer than `deferredCommitDelay`. During recovery (`eventsOnly`) only events
    /// and records not applied are stored: the inputs that gave them are in the store already.
    private mutating func commit(
        force: Bool = false, eventsOnly: Bool = false, at time: DetectionTime,
        into actions: inout [DetectionCoreAction]
    ) {
        if case .stopped = phase { return }
        if eventsOnly {
            guard !pendingEvents.isEmpty || !pendingUnapplied.isEmpty else { return }
            actions.append(
                .commit(
                    DetectionCommit(
                        inputs: [], events: pendingEvents, unapplied: pendingUnapplied,
                        replies: [], at: time.wall)))
            counts.unappliedKept += pendingUnapplied.count
            pendingEvents.removeAll()
            pendingUnapplied.removeAll()
            return
        }
        guard
            force || !pendingEvents.isEmpty || !pendingReplies.isEmpty || !pendingUnapplied.isEmpty
                || pendingInputs.count >= options.deferredInputs
        else {
            // Stored soon anyway, so the store shows how far detection has read within `deferredCommitDelay`.
            if deferredCommitAt == nil, !pendingInputs.isEmpty {
                deferredCommitAt = time.monotonic + options.deferredCommitDelay
            }
            return
        }
        deferredCommitAt = nil
        guard !pendingInputs.isEmpty || !pendingEvents.isEmpty || !pendingReplies.isEmpty || !pendingUnapplied.isEmpty
        else { return }
        actions.append(
            .commit(
                DetectionCommit(
                    inputs: pendingInputs, events: pendingEvents, unapplied: pendingUnapplied,
                    replies: pendingReplies, at: time.wall)))
        // The store numbers inputs one after the other: a checkpoint taken next (its order follows this commit's)
        // holds these, whatever the shell has told yet (`committed` says the same number).
        lastInput += Int64(pendingInputs.count)
        counts.unappliedKept += pendingUnapplied.count
        pendingInputs.removeAll(keepingCapacity: true)
        pendingEvents.removeAll(keepingCapacity: true)
        pendingUnapplied.removeAll()
        pendingReplies.removeAll()
    }

    // MARK: Checkpoints

    /// Takes a checkpoint: the fleet's changed devices and shared state with the journal positions, written by the
    /// shell (off its loop) while the core goes on; `checkpointWritten` then lets the inputs before it go. Under
    /// load, every device changes between checkpoints and encoding them all is real work on a machine whose cores
    /// the pipeline needs: checkpoints are spaced so that they take at most 1/`checkpointCostShare` of the time (a
    /// restart then re-reads a little more of the journals). `wait`: a stop's last one.
    private mutating func checkpoint(
        wait: Bool = false, at time: DetectionTime, into actions: inout [DetectionCoreAction]
    ) {
        guard !checkpointInFlight || wait else { return }
        if !wait, time.monotonic < nextCheckpointAllowed,
            !Self.checkpointDue(resident: fleet.residentCount, residentAtLast: residentAtLastCheckpoint)
        {
            return
        }
        switch phase {
        case .live, .stopping: break
        default: return
        }
        commit(force: true, at: time, into: &actions)
        if checkpointInFlight {
            // Still being written: superseded by this one, which takes its devices.
            unsavedDevices += devicesInFlight
            devicesInFlight = []
            checkpointInFlight = false
        }
        // Devices whose last checkpoint write failed: written with this one.
        let unsaved = Set(unsavedDevices)
        // Idle devices leave memory with this checkpoint (their states are written in its transaction).
        var leaving: [FleetDeviceState] = []
        var leavingUnchanged: Set<DeviceID> = []
        if options.deviceMemoryIdle > 0 {
            leaving = fleet.evictIdle(idle: options.deviceMemoryIdle, now: time.wall)
            // Unchanged since a checkpoint wrote them, unless that write failed.
            leavingUnchanged = fleet.lastEvictedUnchanged.filter { !unsaved.contains($0) }
        }
        residentAtLastCheckpoint = fleet.residentCount
        // Before the state is taken: a restart re-runs the inputs after it on the same streams.
        fleet.forgetFinishedStreams(now: time.wall)
        guard
            lastInput > checkpointInput || fleet.hasChangedDevices || !unsavedDevices.isEmpty || !leaving.isEmpty
                || evictionsUnsaved
        else { return }
        let changed = unsavedDevices + fleet.takeChangedDevices().filter { !unsaved.contains($0) }
        unsavedDevices.removeAll()
        var positions = checkpointPositions.merging(positionsAtStop) { _, atStop in atStop }
        for journal in journals { if let feed = journal.feed { positions[feed] = journal.position } }
        checkpointInFlight = true
        checkpointGeneration += 1
        devicesInFlight = changed
        inFlightInput = lastInput
        inFlightPositions = positions
        inFlightEvictions = !leaving.isEmpty || evictionsUnsaved
        inFlightStartedAt = time.monotonic
        actions.append(
            .writeCheckpoint(
                CheckpointOrder(
                    generation: checkpointGeneration, input: lastInput, shared: fleet.sharedState,
                    changed: changed.compactMap { fleet.deviceState($0) }, leaving: leaving,
                    leavingUnchanged: leavingUnchanged,
                    positions: positions, at: time.wall, wait: wait)))
    }

    /// The stop ends once no platform call is in flight and no checkpoint is being written, or at `deadline`.
    private mutating func finishStopping(
        deadline: Double, checkpointLast: Bool, at time: DetectionTime,
        into actions: inout [DetectionCoreAction]
    ) {
        guard (platformCallsInFlight == 0 && !checkpointInFlight) || time.monotonic >= deadline else { return }
        if platformCallsInFlight > 0 {
            actions.append(
                .log(
                    .warning, "stopping with platform calls unanswered (asked again at the next start)",
                    [("calls", String(platformCallsInFlight))]))
        }
        if checkpointLast { checkpoint(wait: true, at: time, into: &actions) }
        phase = .stopped
        actions.append(.stop)
    }

    private func seconds(_ value: Double) -> String { JSONObjectWriter.number(value, decimals: 3) }
}

extension ControlOutcome {
    /// For the log line of a command: `ok (N devices)` or the error code.
    public var summary: String {
        switch self {
        case .ok(let devices, _): "ok (\(devices.count) devices)"
        case .failure(let code, _, _): code
        }
    }
}
