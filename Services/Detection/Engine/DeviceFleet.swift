import RoadSaveModel

/// The per-device logic around the engines, once, for replay and the detection service: record ordering, a
/// session per device, settings per application, auto-monitor (records wait while their application's settings are
/// fetched), gateways' watermarks (`FleetStreamState`), idle flush and clock-driven timers for silent devices of
/// gateways that send none, control commands and rejection counts.
///
/// A pure value, like `DeviceSession`: each input is a `mutating func` named after what happened and returns what
/// the shell must do. It never reads a clock and never lets hash order reach its output, so the same inputs in the
/// same order give the same state and the same actions, byte for byte. That is what makes recovery simple: a
/// shell that logs the inputs that are not in its journal (platform answers, control commands, ticks) can load a
/// checkpoint (`sharedState` + `deviceState(_:)` of every device, all Codable) and re-run to the same events.
public struct DeviceFleet: Sendable {
    public struct Options: Sendable, Equatable, Codable {
        /// Record ordering per device; one default window (`RecordOrdering.Options`) for replay and the service.
        public var ordering: RecordOrdering.Options
        /// A device met in the records is configured (mode all, automatic trips) and monitored with its
        /// application's settings from its first record.
        public var autoMonitor: Bool
        /// Seconds on the shell's clock without a record after which a device's reorder buffer is released
        /// (`tick` only: without a clock, records release each other).
        public var idleFlush: Double
        /// Records kept per device while its application's settings are fetched; more are counted `notMonitored`.
        public var maximumWaitingRecords: Int
        /// Seconds (on the shell's clock, or record time without one) before a failed settings fetch for an
        /// application is tried again; meanwhile records of its new devices are not monitored.
        public var settingsRetry: Double
        /// Seconds on the shell's clock a gateway's watermark may stand still while its devices wait for it; then
        /// the clock's rules (window, idle flush, quiet time) release them until it moves again: a gateway, link
        /// or ingest that is down holds its devices' records and decisions at most this long.
        public var watermarkHold: Double

        public static let defaultWatermarkHold = 60.0

        public init(
            ordering: RecordOrdering.Options = .init(), autoMonitor: Bool = true, idleFlush: Double = 1,
            maximumWaitingRecords: Int = 10_000, settingsRetry: Double = 30,
            watermarkHold: Double = Options.defaultWatermarkHold
        ) {
            self.ordering = ordering
            self.autoMonitor = autoMonitor
            self.idleFlush = idleFlush
            self.maximumWaitingRecords = maximumWaitingRecords
            self.settingsRetry = settingsRetry
            self.watermarkHold = watermarkHold
        }
    }

    public let options: Options
    /// Devices in the order they were met (a device back from eviction: from its return); `index` finds them.
    /// Internal, not private: eviction (DeviceFleet+Eviction.swift) takes devices out and puts them back.
    var devices: [FleetDeviceState] = []
    var index = DeviceIndex()
    private var applications: [String: FleetApplicationState] = [:]
    /// The gateways' streams the records came through, and a number for each (the wake times name streams by it).
    var streams: [String: FleetStreamState] = [:]
    var streamNumbers: [String: Int32] = [:]
    var streamNames: [String] = []
    /// One copy of each application's settings for all its devices' sessions (see `SessionSettings`).
    private var sharedSettings: [String: SessionSettings] = [:]
    var changed = ChangedSlots()
    /// Per slot, a time on the shell's clock before which `tick` has nothing to do for the device (`wakeTime`).
    var wakeTimes = WakeTimes()
    /// The slot of the last record's device: a run of one device's records (a gateway batch) finds it without hashing.
    private var lastSlot = 0
    /// Reused for every record, so that the common case allocates nothing.
    private var rejectedScratch: [(SensorRecord, RecordOrdering.Rejection)] = []
    public private(set) var statistics = FleetStatistics()
    /// Whether the last `tick` changed any device (a shell that logs its inputs need not keep a tick that did not).
    public private(set) var lastTickChangedState = false
    /// The devices the last `evictIdle` took out that had not changed since the last `takeChangedDevices()`.
    public internal(set) var lastEvictedUnchanged: Set<DeviceID> = []
    var newestRecordTime: Double?

    public init(options: Options = .init()) {
        self.options = options
    }

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
    public mutating func watermarkRead(stream: String, watermark: Double, now: Double?) {
        noteStream(stream, now: now)
        _ = streams[stream]!.advance(to: watermark, ended: watermark == .infinity, now: now)
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

    /// A control command (PROTOCOL §7) at the shell's clock `now`. `fetch` is the settings fetch the shell did first
    /// when `request.needsSettings` (nil otherwise). Targets: the user given, else every known device of the
    /// application in device order (`noDevices` when there is none); the first refusal stops the command.
    public mutating func control(
        _ request: ControlRequest, now: Double,
        fetch: SettingsFetch?
    ) -> (outcome: ControlOutcome, actions: [FleetAction]) {
        var actions: [FleetAction] = []
        if case .fetched = fetch {
            // The answer serves auto-monitor too: records waiting for this application go on now.
            actions += settingsFetched(app: request.app, fetch!, now: now)
        }
        let targets: [DeviceID]
        if let user = request.user {
            targets = [DeviceID(app: request.app, user: user)]
        } else {
            targets = devices.lazy.map(\.device).filter { $0.app == request.app }.sorted()
            guard !targets.isEmpty else {
                return (
                    .failure(code: "noDevices", message: "no device of that application is known yet", device: nil),
                    actions
                )
            }
        }
        var states: [ControlDeviceState] = []
        for device in targets {
            let slot = slot(for: device)
            let t = devices[slot].eventTime(now: now)
            var session = devices[slot].session
            do {
                let result: [DetectionAction]
                switch request.command {
                case .configure:
                    let configuration = RoadSaveConfiguration(
                        applicationID: device.app, clientUserID: device.user,
                        detectionMode: request.detectionMode ?? .all,
                        shouldAutoDetectTrips: request.shouldAutoDetectTrips ?? true)
                    result = try session.configure(configuration, at: t)
                case .startMonitoring:
                    result = try session.startMonitoring(at: t, fetch: fetch ?? .unreachable)
                case .stopMonitoring:
                    result = try session.stopMonitoring(at: t)
                case .setAutoTripDetection:
                    result = try session.setAutoTripDetection(request.enabled ?? true, at: t, fetch: fetch)
                case .setDetectionMode:
                    result = try session.setDetectionMode(request.detectionMode ?? .all, at: t)
                case .raiseTestCrash:
                    result = try session.raiseTestCrash(at: t, followUp: request.followUp ?? false)
                }
                devices[slot].session = session
                shareSettings(slot: slot)
                if devices[slot].lastEventTime == nil {
                    devices[slot].lastEventTime = t
                    devices[slot].lastArrival = now
                }
                if session.lifecycle == .monitoring { devices[slot].notMonitoredReported = false }
                perform(result, slot: slot, into: &actions)
                states.append(ControlDeviceState(devices[slot].session))
            } catch {
                // A refused call may still have let time pass in the session (`advance(to:)` runs first in some).
                devices[slot].session = session
                return (.failure(code: error.code, message: error.message, device: device), actions)
            }
        }
        return (.ok(devices: targets, states: states), actions)
    }

    /// The shell's clock moved on to `now`. Devices of a gateway's stream have their records below its watermark
    /// released and their timers before it fired. Devices of gateways that send no watermark (or whose watermark
    /// has stood still for `watermarkHold`) go by the clock: reorder buffers quiet for `idleFlush` are released,
    /// and timers (stop delay, crash decisions) fire when the device's event time, run on by the clock since its
    /// last record, reaches them. Devices are visited in the order they were met.
    public mutating func tick(now: Double) -> [FleetAction] {
        tick(now: now, clockSlots: nil)
    }

    /// `tick(now:)` with the clock's rules for `only` these devices: the shell, behind on its journals, has learnt
    /// that every record of them so far is read (`dueDevices`), so their silence is real and their deadlines (a
    /// crash decision, a trip's end) need not wait for the rest of the backlog. Devices not in memory or not due
    /// are passed over. Watermarks are the gateways' word on what is still to come, true however far behind the
    /// shell is, so every device of a stream is served as by `tick(now:)`.
    public mutating func tick(now: Double, only: [DeviceID]) -> [FleetAction] {
        tick(now: now, clockSlots: Set(only.compactMap { slot(of: $0) }))
    }

    /// The tick, with the clock's rules for `clockSlots` only (nil: every device).
    private mutating func tick(now: Double, clockSlots: Set<Int>?) -> [FleetAction] {
        var actions: [FleetAction] = []
        lastTickChangedState = false
        refreshWakeTimes()
        let marks = streamMarks(now: now)
        // Only the devices whose wake time has come, or whose stream's watermark has passed what they wait for:
        // visiting every device's state ten times a second took most of detection's time with a hundred thousand
        // devices in memory.
        for slot in devices.indices {
            let stream = Int(wakeTimes.streams[slot])
            let byWatermark = stream >= 0 && wakeTimes.events[slot] < marks[stream]
            let byClock = wakeTimes.times[slot] <= now && clockSlots.map { $0.contains(slot) } ?? true
            guard byWatermark || byClock else { continue }
            tick(slot: slot, now: now, clock: byClock, into: &actions)
        }
        return actions
    }

    /// The devices `tick(now:)` would act on: a reorder buffer to release or a timer due (in the order met, at most
    /// `limit`). Changes nothing but the wake times kept to find them.
    public mutating func dueDevices(now: Double, limit: Int) -> [DeviceID] {
        refreshWakeTimes()
        var due: [DeviceID] = []
        // A device of a stream waits for its watermark, not for the journal's word on its records.
        for slot in devices.indices where wakeTimes.times[slot] <= now && devices[slot].stream == nil {
            guard due.count < limit else { break }
            if releaseDue(slot, now: now) || timerDue(slot, now: now) { due.append(devices[slot].device) }
        }
        return due
    }

    /// The watermark that orders the device now: its stream's, unless it has none (a gateway that sends no
    /// header) or that watermark has stood still for `watermarkHold` (then nil, and the clock's rules apply).
    func governingWatermark(_ slot: Int, now: Double?) -> Double? {
        guard let name = devices[slot].stream, let stream = streams[name],
            !stream.isStalled(now: now, hold: options.watermarkHold)
        else { return nil }
        return stream.effectiveWatermark
    }

    /// The event time from which the device waits for its watermark: its oldest record held for ordering or its
    /// next timer, whichever comes first; nil when it waits for nothing.
    mutating func watermarkNeed(_ slot: Int) -> Double? {
        let buffered = devices[slot].ordering.oldestBufferedTime
        guard let deadline = devices[slot].session.nextDeadlineInPlace() else { return buffered }
        return min(buffered ?? deadline, deadline)
    }

    /// Each stream's watermark as it orders its devices at `now`, by stream number: minus infinity for one that
    /// has stood still too long (its devices then go by the clock).
    private func streamMarks(now: Double) -> [Double] {
        streamNames.map { name in
            guard let stream = streams[name], !stream.isStalled(now: now, hold: options.watermarkHold) else {
                return -.infinity
            }
            return stream.effectiveWatermark
        }
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

    /// Forgets the streams no device in memory came through that are over, or have not moved for a day: a
    /// gateway's stream ends with its run. Called by the shell before it takes a checkpoint (so a restart re-runs
    /// its inputs on the same streams); a device out of memory that comes back through a forgotten stream meets it
    /// anew with the batch that carries its record.
    public mutating func forgetFinishedStreams(now: Double?) {
        let inUse = Set(devices.compactMap(\.stream))
        let finished = streams.values.filter { stream in
            guard !inUse.contains(stream.name) else { return false }
            return stream.ended || stream.isStalled(now: now, hold: Self.streamForgetAge)
        }
        guard !finished.isEmpty else { return }
        for stream in finished { streams[stream.name] = nil }
        renumberStreams()
    }

    /// A stream that no device in memory came through is forgotten after this long without moving.
    static let streamForgetAge = 86_400.0

    /// Numbers the streams afresh (after some were forgotten, or from a checkpoint); every wake time is then
    /// computed again.
    mutating func renumberStreams() {
        streamNames = streams.keys.sorted()
        streamNumbers = [:]
        for (number, name) in streamNames.enumerated() { streamNumbers[name] = Int32(number) }
        wakeTimes.needsFullRefresh = true
    }

    /// Whether the device's reorder buffer is released at `now`: it holds records and has been quiet `idleFlush`.
    private func releaseDue(_ slot: Int, now: Double) -> Bool {
        guard devices[slot].ordering.bufferedCount > 0, let arrival = devices[slot].lastArrival else { return false }
        return now - arrival >= options.idleFlush
    }

    /// Whether a timer of the device is due at `now`, its event time run on by the clock.
    private mutating func timerDue(_ slot: Int, now: Double) -> Bool {
        guard devices[slot].lastEventTime != nil, let first = devices[slot].session.nextDeadlineInPlace() else {
            return false
        }
        return first <= devices[slot].timerTime(now: now)
    }

    /// One device's part of a tick. By its stream's watermark: its records below it released, then its timers
    /// before it fired. By the clock (`clock`; a gateway without watermarks, or one whose watermark stood still
    /// too long): its reorder buffer released after `idleFlush` of quiet, then its timers up to its event time run
    /// on by the clock.
    private mutating func tick(slot: Int, now: Double, clock: Bool, into actions: inout [FleetAction]) {
        if let watermark = governingWatermark(slot, now: now) {
            guard let need = watermarkNeed(slot), need < watermark else { return }
            changed.insert(slot)
            lastTickChangedState = true
            release(slot, before: watermark, into: &actions)
            return
        }
        guard clock else { return }
        var acted = false
        if releaseDue(slot, now: now) {
            changed.insert(slot)
            lastTickChangedState = true
            acted = true
            for record in devices[slot].ordering.flush() { apply(record, slot: slot, into: &actions) }
        }
        if timerDue(slot, now: now) {
            changed.insert(slot)
            lastTickChangedState = true
            acted = true
            let eventNow = devices[slot].timerTime(now: now)
            var previous: Double?
            while let deadline = devices[slot].session.nextDeadline, deadline <= eventNow, deadline != previous {
                previous = deadline
                perform(devices[slot].session.advance(to: deadline), slot: slot, into: &actions)
            }
        }
        if acted, devices[slot].stream != nil { noteForcedRelease(slot, now: now, into: &actions) }
    }

    /// Releases the device's records below `watermark` and fires its timers before it; at the end of its stream
    /// (infinity) everything, as `finish` does at the end of a replay's input.
    private mutating func release(_ slot: Int, before watermark: Double, into actions: inout [FleetAction]) {
        if watermark == .infinity {
            for record in devices[slot].ordering.flush() { apply(record, slot: slot, into: &actions) }
        } else {
            while let next = devices[slot].ordering.nextReady(before: watermark) {
                apply(next, slot: slot, into: &actions)
            }
        }
        var previous: Double?
        while let deadline = devices[slot].session.nextDeadline, deadline < watermark, deadline != previous {
            previous = deadline
            perform(devices[slot].session.advance(to: deadline), slot: slot, into: &actions)
        }
    }

    /// The clock released a device of a stream whose watermark stood still for `watermarkHold`: counted, and said
    /// once for the stream until its watermark moves again.
    private mutating func noteForcedRelease(_ slot: Int, now: Double?, into actions: inout [FleetAction]) {
        statistics.forcedReleases += 1
        guard let name = devices[slot].stream, var stream = streams[name], !stream.holdExpiredReported else { return }
        stream.holdExpiredReported = true
        streams[name] = stream
        actions.append(.watermarkHoldExpired(stream: name, stillSince: stream.movedAt ?? now ?? 0))
    }

    /// The shell hears its devices again after a time it could not (it was not running, or its journal did not
    /// answer): that time was not the devices' silence, since their gateways keep what they could not deliver. The
    /// quiet time of each device with work in flight (a timer, a trip, records held for ordering or for settings)
    /// counts again from `now`, so no trip ends and no buffer is released only because the pipeline was down; a
    /// device really silent has its timers fire at most their own delay later. Other devices are left alone:
    /// their quiet time decides nothing but when they leave memory, and a resume is no reason to write them all.
    public mutating func resumeClock(now: Double) {
        for slot in devices.indices {
            guard let arrival = devices[slot].lastArrival, arrival < now, devices[slot].hasWorkInFlight else {
                continue
            }
            devices[slot].lastArrival = now
            changed.insert(slot)
        }
        // Nor was it the gateways' standing still: their watermarks' hold counts again from now.
        for name in streams.keys where !streams[name]!.ended {
            streams[name]!.movedAt = max(streams[name]!.movedAt ?? now, now)
        }
        wakeTimes.needsFullRefresh = true
    }

    /// End of input (replay): every reorder buffer is released, then time runs on so that pending timers fire.
    /// Devices in `DeviceID` order.
    public mutating func finish() -> [FleetAction] {
        var actions: [FleetAction] = []
        for slot in devices.indices.sorted(by: { devices[$0].device < devices[$1].device }) {
            changed.insert(slot)
            for record in devices[slot].ordering.flush() { apply(record, slot: slot, into: &actions) }
            var previous: Double?
            while let deadline = devices[slot].session.nextDeadline, deadline != previous {
                previous = deadline
                perform(devices[slot].session.advance(to: deadline), slot: slot, into: &actions)
            }
        }
        return actions
    }

    // MARK: Reading

    /// Platform calls the fleet is waiting for: settings fetches asked for and not answered (by application), then
    /// crash candidates sent and not answered (devices in the order met, each in the order sent). A shell restored
    /// from a checkpoint asks for them again.
    public var pendingPlatformCalls: [FleetAction] {
        let fetches = applications.values.filter(\.fetchInFlight).map(\.app).sorted().map {
            FleetAction.fetchSettings(app: $0)
        }
        let evaluations = devices.flatMap { state in
            state.awaitingEvaluation.map { FleetAction.evaluateCrash(device: state.device, candidate: $0) }
        }
        return fetches + evaluations
    }

    public var deviceCount: Int { devices.count }

    /// Gateways' streams known.
    public var streamCount: Int { streams.count }

    /// Devices in memory with a trip in progress: a pass over all of them, for metrics now and then, not per record.
    public var tripsInProgress: Int { devices.reduce(0) { $0 + ($1.session.isTripInProgress ? 1 : 0) } }

    /// Devices in the order they were met.
    public var deviceIDs: [DeviceID] { devices.map(\.device) }

    public func session(_ device: DeviceID) -> DeviceSession? {
        slot(of: device).map { devices[$0].session }
    }

    /// The settings known for an application (fetched for auto-monitor or by a control command).
    public func settings(app: String) -> DetectionSettings? {
        applications[app]?.settings
    }

    // MARK: Checkpoints

    /// Devices whose state changed since the last call, in the order they were met (for incremental checkpoints).
    /// Whether any device changed since the last `takeChangedDevices()`.
    public var hasChangedDevices: Bool { !changed.isEmpty }

    public mutating func takeChangedDevices() -> [DeviceID] {
        let slots = changed.sorted()
        changed.removeAll(keepingCapacity: true)
        return slots.map { devices[$0].device }
    }

    public func deviceState(_ device: DeviceID) -> FleetDeviceState? {
        slot(of: device).map { devices[$0] }
    }

    public var sharedState: FleetSharedState {
        FleetSharedState(
            applications: applications.values.sorted { $0.app < $1.app },
            deviceOrder: devices.map(\.device), statistics: statistics, newestRecordTime: newestRecordTime,
            streams: streams.values.sorted { $0.name < $1.name })
    }

    /// A fleet as it was checkpointed. Devices are put in `shared.deviceOrder`; a device listed there without a
    /// state is left out, and states of devices not listed follow, sorted.
    public init(options: Options, shared: FleetSharedState, devices states: [(DeviceID, FleetDeviceState)]) {
        self.options = options
        var byDevice: [DeviceID: FleetDeviceState] = [:]
        for (device, state) in states { byDevice[device] = state }
        let listed = Set(shared.deviceOrder)
        let order = shared.deviceOrder + byDevice.keys.filter { !listed.contains($0) }.sorted()
        for device in order {
            guard var state = byDevice.removeValue(forKey: device) else { continue }
            // The configured window, not the checkpoint's: changing --reorder-window and restarting takes effect
            // for every device (see `adoptConfiguredOrdering`).
            Self.adoptConfiguredOrdering(&state, options: options)
            index.insert(device, slot: devices.count)
            devices.append(state)
        }
        for application in shared.applications { applications[application.app] = application }
        for slot in devices.indices { shareSettings(slot: slot) }
        statistics = shared.statistics
        newestRecordTime = shared.newestRecordTime
        for stream in shared.streams ?? [] { streams[stream.name] = stream }
        renumberStreams()
    }

    // MARK: Internals

    /// A device restored (from a checkpoint, or back from eviction) takes the fleet's reorder window, not the one it
    /// was stored with: an operator who changes `--reorder-window` and restarts expects it to apply to all devices.
    /// Only the window: the other ordering options are not settings, and `sequenceMemory` sizes stored state.
    static func adoptConfiguredOrdering(_ state: inout FleetDeviceState, options: Options) {
        if state.ordering.options.window != options.ordering.window {
            state.ordering.adopt(window: options.ordering.window)
        }
    }

    /// What monitoring meets when the platform never gave the application's settings (the session's startup guard
    /// with nothing cached).
    static let settingsUnavailable = RoadSaveError.offlineLimitExceeded(
        lastSuccessfulFetch: nil,
        graceSeconds: DetectionSettings().offlineGrace)

    /// The device's slot, if it is in memory.
    func slot(of device: DeviceID) -> Int? {
        index.slot(of: device, in: devices)
    }

    private mutating func slot(for device: DeviceID) -> Int {
        if lastSlot < devices.count, devices[lastSlot].session.device == device {
            changed.insert(lastSlot)
            return lastSlot
        }
        if let slot = slot(of: device) {
            changed.insert(slot)
            lastSlot = slot
            return slot
        }
        let slot = devices.count
        devices.append(FleetDeviceState(device: device, ordering: options.ordering))
        index.insert(device, slot: slot)
        lastSlot = slot
        statistics.devices += 1
        changed.insert(slot)
        return slot
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

    /// The device's session takes its application's shared copy of the settings when it uses the same ones.
    mutating func shareSettings(slot: Int) {
        let app = devices[slot].device.app
        let settings = devices[slot].session.sharedSettings
        if let shared = sharedSettings[app], shared.wrappedValue == settings.wrappedValue {
            devices[slot].session.shareSettings(shared)
        } else if applications[app]?.settings == settings.wrappedValue {
            sharedSettings[app] = settings
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
    private mutating func apply(_ record: SensorRecord, slot: Int, into actions: inout [FleetAction]) {
        if devices[slot].session.lifecycle == .monitoring {
            statistics.applied += 1
        } else {
            statistics.notMonitored += 1
        }
        devices[slot].lastEventTime = max(devices[slot].lastEventTime ?? record.t, record.t)
        perform(devices[slot].session.handle(record), slot: slot, into: &actions)
    }

    private mutating func perform(_ results: [DetectionAction], slot: Int, into actions: inout [FleetAction]) {
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
