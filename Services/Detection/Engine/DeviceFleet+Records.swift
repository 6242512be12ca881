import RoadSaveModel

/// A record's way in: its stream noted, auto-monitor (waiting for settings), reordering, then the device's session.
extension DeviceFleet {
    // MARK: Inputs

    /// A record arrived. `now` is the shell's clock (nil in replay: time comes only from the records). `stream`:
    /// the gateway's stream it came through, when its batch had a header (`watermarkRead` follows with the header's
    /// word); nil for a gateway that sends none, whose records the window and the clock order.
    public mutating func receive(_ record: SensorRecord, from stream: String? = nil, now: Double?) -> [FleetAction] {
        var actions: [FleetAction] = []
        receive(record, from: stream, now: now, into: &actions)
        return actions
    }

    /// A record arrived; what the shell must do is appended to `actions` (a shell that reuses that buffer
    /// allocates nothing for the records that ask for nothing, nearly all of them).
    public mutating func receive(
        _ record: consuming SensorRecord, from stream: String? = nil, now: Double?,
        into actions: inout [FleetAction]
    ) {
        statistics.records += 1
        newestRecordTime = max(newestRecordTime ?? record.t, record.t)
        let slot = slot(for: record.device)
        if let now { devices[slot].lastArrival = now }
        if devices[slot].stream != stream {
            devices[slot].stream = stream
            if let stream { noteStream(stream, now: now) }
        }
        route(record, slot: slot, now: now, into: &actions)
    }

    /// A gateway's stream said how far it has come (`GatewayBatchHeader`), after the records of its batch:
    /// nothing of it below `watermark` is still to come (infinity: the stream is over). Its devices' records below
    /// it are released, and their timers before it fire, at the next `tick`; the watermark never moves back.
    /// Returns whether the watermark moved (a batch sent again may carry an older one).
    @discardableResult
    public mutating func watermarkRead(stream: String, watermark: Double, now: Double?) -> Bool {
        noteStream(stream, now: now)
        return streams[stream]!.advance(to: watermark, ended: watermark == .infinity, now: now)
    }

    /// The answer to a `fetchSettings(app:)`. Fetched: the settings are kept for the application and every record
    /// waiting for them goes on (device by device in the order they were met, each in arrival order). Unreachable
    /// (and no settings known): the waiting records are dropped as `notMonitored`, each such device is reported
    /// once, and the application is not asked again for `settingsRetry` seconds.
    public mutating func settingsFetched(app: String, _ fetch: SettingsFetch, now: Double?) -> [FleetAction] {
        var state = applications[app] ?? FleetApplicationState(app: app)
        state.fetchInFlight = false
        var actions: [FleetAction] = []
        switch fetch {
        case .fetched(let settings):
            state.settings = settings
            state.retryAt = nil
            applications[app] = state
            for slot in devices.indices
            where devices[slot].device.app == app && !devices[slot].waitingForSettings.isEmpty {
                let waiting = devices[slot].waitingForSettings
                devices[slot].waitingForSettings.removeAll()
                changed.insert(slot)
                // Ordered by a watermark, the records that waited go in all before any is released: the watermark
                // may be past all of them, and released one by one they would make each other late.
                for record in waiting { route(record, slot: slot, now: now, into: &actions, releasing: false) }
                if let watermark = governingWatermark(slot, now: now) {
                    while let next = devices[slot].ordering.nextReady(before: watermark) {
                        apply(next, slot: slot, into: &actions)
                    }
                }
            }
        case .unreachable:
            guard state.settings == nil else {
                // Settings already known (from another answer or a control command): they stay in use.
                applications[app] = state
                return []
            }
            if let base = now ?? newestRecordTime { state.retryAt = base + options.settingsRetry }
            applications[app] = state
            for slot in devices.indices
            where devices[slot].device.app == app && !devices[slot].waitingForSettings.isEmpty {
                statistics.notMonitored += devices[slot].waitingForSettings.count
                devices[slot].waitingForSettings.removeAll()
                changed.insert(slot)
                reportNotMonitored(slot: slot, error: Self.settingsUnavailable, into: &actions)
            }
        }
        return actions
    }

    /// The platform's evaluation of a candidate from `evaluateCrash` ended (or could not be had).
    public mutating func crashEvaluated(device: DeviceID, crashID: String, outcome: CrashEvaluationOutcome)
        -> [FleetAction]
    {
        guard let slot = slot(of: device) else { return [] }
        changed.insert(slot)
        devices[slot].awaitingEvaluation.removeAll { $0.crashID == crashID }
        var actions: [FleetAction] = []
        perform(devices[slot].session.crashEvaluated(crashID: crashID, outcome: outcome), slot: slot, into: &actions)
        return actions
    }

    /// Makes the stream known (and numbered), with its hold counted from `now`.
    private mutating func noteStream(_ name: String, now: Double?) {
        guard streams[name] == nil else { return }
        streams[name] = FleetStreamState(name: name, movedAt: now)
        if streamNumbers[name] == nil {
            streamNumbers[name] = Int32(streamNames.count)
            streamNames.append(name)
        }
    }

    /// Auto-monitor, then the reorder stage.
    /// `releasing` false: a record ordered by a watermark is only buffered (the caller releases after a burst).
    private mutating func route(
        _ record: consuming SensorRecord, slot: Int, now: Double?, into actions: inout [FleetAction],
        releasing: Bool = true
    ) {
        if !devices[slot].waitingForSettings.isEmpty {
            // Behind the records already waiting, so that arrival order is kept.
            wait(record, slot: slot)
            return
        }
        if options.autoMonitor, devices[slot].session.lifecycle == .unconfigured, !devices[slot].autoMonitorRefused {
            let app = record.device.app
            var state = applications[app] ?? FleetApplicationState(app: app)
            if let settings = state.settings {
                startAutomatically(slot: slot, settings: settings, at: record.t, into: &actions)
            } else if state.fetchInFlight {
                wait(record, slot: slot)
                return
            } else if let retryAt = state.retryAt, (now ?? record.t) < retryAt {
                // The last fetch failed: not asked again before the retry time.
                statistics.notMonitored += 1
                reportNotMonitored(slot: slot, error: Self.settingsUnavailable, into: &actions)
                return
            } else {
                state.fetchInFlight = true
                applications[app] = state
                wait(record, slot: slot)
                actions.append(.fetchSettings(app: app))
                return
            }
        }
        order(record, slot: slot, now: now, into: &actions, releasing: releasing)
    }

    private mutating func wait(_ record: consuming SensorRecord, slot: Int) {
        guard devices[slot].waitingForSettings.count < options.maximumWaitingRecords else {
            statistics.notMonitored += 1
            statistics.waitingOverflow += 1
            return
        }
        devices[slot].waitingForSettings.append(record)
    }

    private mutating func startAutomatically(
        slot: Int, settings: DetectionSettings, at t: Double,
        into actions: inout [FleetAction]
    ) {
        let device = devices[slot].device
        var session = devices[slot].session
        do {
            var result = try session.configure(
                RoadSaveConfiguration(applicationID: device.app, clientUserID: device.user), at: t)
            result += try session.startMonitoring(at: t, fetch: .fetched(settings))
            devices[slot].session = session
            devices[slot].notMonitoredReported = false
            shareSettings(slot: slot)
            perform(result, slot: slot, into: &actions)
        } catch {
            // Not a configuration this device can have (its IDs): its records go on, counted as not monitored.
            devices[slot].session = session
            devices[slot].autoMonitorRefused = true
            reportNotMonitored(slot: slot, error: error, into: &actions)
        }
    }

    private mutating func reportNotMonitored(slot: Int, error: RoadSaveError, into actions: inout [FleetAction]) {
        guard !devices[slot].notMonitoredReported else { return }
        devices[slot].notMonitoredReported = true
        actions.append(.deviceNotMonitored(devices[slot].device, error))
    }

    private mutating func order(
        _ record: consuming SensorRecord, slot: Int, now: Double?,
        into actions: inout [FleetAction], releasing: Bool = true
    ) {
        // The scratch buffer is taken out while in use; ready records are moved out one by one, never copied.
        var rejected: [(SensorRecord, RecordOrdering.Rejection)] = []
        swap(&rejected, &rejectedScratch)
        devices[slot].ordering.insert(record, rejected: &rejected)
        for (rejectedRecord, reason) in rejected {
            switch reason {
            case .duplicate: statistics.duplicates += 1
            case .late: statistics.late += 1
            case .farInFuture: statistics.farInFuture += 1
            }
            actions.append(.recordRejected(rejectedRecord, reason))
            // An impact too late for ordering is still screened, on what the session has: a crash alert is never
            // lost to the order its records came in.
            if case .late = reason, case .impact = rejectedRecord.payload,
                devices[slot].session.lifecycle == .monitoring
            {
                statistics.lateImpactsScreened += 1
                perform(devices[slot].session.lateImpact(rejectedRecord), slot: slot, into: &actions)
            }
        }
        rejected.removeAll(keepingCapacity: true)
        swap(&rejected, &rejectedScratch)
        if let watermark = governingWatermark(slot, now: now) {
            guard releasing else { return }
            while let next = devices[slot].ordering.nextReady(before: watermark) {
                apply(next, slot: slot, into: &actions)
            }
            return
        }
        var released = false
        while let next = devices[slot].ordering.nextReady() {
            released = true
            apply(next, slot: slot, into: &actions)
        }
        if released, devices[slot].stream != nil { noteForcedRelease(slot, now: now, into: &actions) }
    }

    /// A record that left the reorder stage.
    mutating func apply(_ record: SensorRecord, slot: Int, into actions: inout [FleetAction]) {
        if devices[slot].session.lifecycle == .monitoring {
            statistics.applied += 1
        } else {
            statistics.notMonitored += 1
        }
        devices[slot].lastEventTime = max(devices[slot].lastEventTime ?? record.t, record.t)
        perform(devices[slot].session.handle(record), slot: slot, into: &actions)
    }

    mutating func perform(_ results: [DetectionAction], slot: Int, into actions: inout [FleetAction]) {
        let device = devices[slot].device
        for result in results {
            switch result {
            case .emit(let event):
                statistics.events += 1
                actions.append(.emit(event))
            case .evaluateCrash(let candidate):
                devices[slot].awaitingEvaluation.append(candidate)
                actions.append(.evaluateCrash(device: device, candidate: candidate))
            case .crashDismissed(let candidate, let reason):
                statistics.crashesDismissed += 1
                actions.append(.crashDismissed(device: device, candidate: candidate, reason: reason))
            }
        }
    }
}
