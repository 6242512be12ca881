import Logging

/// The inputs stored after the checkpoint, re-run one by one before the core goes live.
extension DetectionCore {
    // MARK: Recovery

    /// Re-runs stored inputs one by one; records are fetched again from their journal by exact range. When the
    /// queue is empty the core goes live: reading journals from where the re-run ended, asking the platform again
    /// for whatever the fleet still waits for, and taking the commands that came meanwhile.
    mutating func continueRecovery(
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
}
