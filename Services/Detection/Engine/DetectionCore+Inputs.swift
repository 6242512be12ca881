import Logging
import RoadSaveModel

/// Inputs other than a journal's reply and the clock: the start, platform answers, commands, stores, the stop.
extension DetectionCore {
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
}
