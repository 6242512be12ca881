import Logging
import RoadSaveModel

/// When a checkpoint is taken, and when a stop ends.
extension DetectionCore {
    // MARK: Checkpoints

    /// Takes a checkpoint: the fleet's changed devices and shared state with the journal positions, written by the
    /// shell (off its loop) while the core goes on; `checkpointWritten` then lets the inputs before it go. Under
    /// load, every device changes between checkpoints and encoding them all is real work on a machine whose cores
    /// the pipeline needs: checkpoints are spaced so that they take at most 1/`checkpointCostShare` of the time (a
    /// restart then re-reads a little more of the journals). `wait`: a stop's last one.
    mutating func checkpoint(
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
    mutating func finishStopping(
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
}
