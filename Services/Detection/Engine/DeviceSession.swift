import RoadSaveModel

/// The brief's SDK for one device, as a pure value: the API calls (`configure`, `startMonitoring`, …), the sensor
/// records in event-time order, and `advance(to:)` for time passing. Each returns what the shell must do. The
/// session never reads a clock: every input carries its time, so a recording replays to the same events.
public struct DeviceSession: Sendable, Codable {
    public enum Lifecycle: String, Sendable, Equatable, Codable {
        case unconfigured, configured, monitoring
    }

    public let device: DeviceID
    public private(set) var lifecycle: Lifecycle = .unconfigured
    public private(set) var configuration: RoadSaveConfiguration?
    /// The settings in force: the platform's latest, or the cached ones within the offline grace.
    /// Out of line and shared between the devices of an application (`SessionSettings`).
    @SessionSettings public private(set) var settings: DetectionSettings
    public private(set) var lastSuccessfulSettingsFetch: Double?
    public private(set) var autoTripDetection = true
    public private(set) var capabilities = DeviceCapabilities.full
    /// The latest time the session has been advanced to.
    public private(set) var clock: Double?

    private var gps: GPSTrack
    private var activity = ActivityContext()
    private var steps = StepCounter()
    private var lastRecordTime: Double?
    private var trips: TripEngine
    private var crashes: CrashEngine

    public init(device: DeviceID) {
        self.device = device
        _settings = SessionSettings()
        gps = GPSTrack()
        trips = TripEngine(device: device)
        crashes = CrashEngine(device: device)
    }

    // MARK: The brief's API

    public var detectionMode: CrashDetectionMode { configuration?.detectionMode ?? .all }
    public var isTripInProgress: Bool { trips.isDriving }
    private var monitoring: Bool { lifecycle == .monitoring }
    private var tripsActive: Bool {
        monitoring && autoTripDetection && detectionMode.detectsTrips && settings.tripDetectionEnabled
    }
    private var crashesActive: Bool { monitoring && detectionMode.detectsCrashes && settings.crashDetectionEnabled }
    /// A silence of the records shorter than this ends no trip anyway (the stop delay and the data-gap limit are
    /// longer): only longer ones are looked at for a drive that went on through them.
    private static let bridgeableSilence = 60.0

    /// Configures the device. Configuring again replaces the configuration (a trip in progress is ended if the
    /// new one leaves no trip detection).
    public mutating func configure(_ configuration: RoadSaveConfiguration, at t: Double) throws(RoadSaveError)
        -> [DetectionAction]
    {
        try configuration.validate()
        guard configuration.device == device else {
            throw .invalidConfiguration(field: "clientUserID", reason: "belongs to another device")
        }
        var actions = advance(to: t)
        let wasTripping = tripsActive
        self.configuration = configuration
        autoTripDetection = configuration.shouldAutoDetectTrips
        if lifecycle == .unconfigured { lifecycle = .configured }
        if wasTripping && !tripsActive { actions += endTrip(reason: .detectionModeChanged) }
        return actions
    }

    /// Starts monitoring with the result of a settings fetch (the startup guard).
    public mutating func startMonitoring(at t: Double, fetch: SettingsFetch) throws(RoadSaveError) -> [DetectionAction]
    {
        guard lifecycle != .unconfigured else { throw .notConfigured }
        let actions = advance(to: t)
        try applyStartupGuard(at: t, fetch: fetch)
        if lifecycle != .monitoring {
            lifecycle = .monitoring
            trips.reset()
        }
        return actions
    }

    /// Stops monitoring: a trip in progress ends; impacts waiting for their decision are decided now.
    public mutating func stopMonitoring(at t: Double) throws(RoadSaveError) -> [DetectionAction] {
        guard lifecycle != .unconfigured else { throw .notConfigured }
        var actions = advance(to: t)
        guard monitoring else { return actions }
        // Decided before the trip ends, so that a crash in it leaves it unscored; reported after its end, as before.
        let decided = crashes.decideAll(context: crashContext)
        noteSuspectedCrashes(decided)
        actions += endTrip(reason: .monitoringStopped)
        actions += decided
        // No record will come: the follow-ups of reported crashes go now, with what came until the stop.
        crashes.closeFollowUps(at: t)
        actions += crashes.advance(to: t, context: crashContext)
        lifecycle = .configured
        return actions
    }

    /// Pauses or resumes automatic trip detection. Pausing ends a trip in progress; resuming runs the startup
    /// guard again (so it needs a settings fetch). Crash detection is unaffected either way.
    public mutating func setAutoTripDetection(_ enabled: Bool, at t: Double, fetch: SettingsFetch? = nil)
        throws(RoadSaveError) -> [DetectionAction]
    {
        guard lifecycle != .unconfigured else { throw .notConfigured }
        var actions = advance(to: t)
        if enabled {
            if monitoring { try applyStartupGuard(at: t, fetch: fetch ?? .unreachable) }
            if !autoTripDetection { trips.reset() }
            autoTripDetection = true
        } else {
            actions += endTrip(reason: .detectionPaused)
            autoTripDetection = false
            trips.reset()
        }
        configuration?.shouldAutoDetectTrips = autoTripDetection
        return actions
    }

    /// Switches the detection mode: a trip in progress ends if trips are no longer detected; crashes already sent
    /// for evaluation are still reported, but no new ones are detected if crashes are switched off.
    public mutating func setDetectionMode(_ mode: CrashDetectionMode, at t: Double) throws(RoadSaveError)
        -> [DetectionAction]
    {
        guard lifecycle != .unconfigured else { throw .notConfigured }
        var actions = advance(to: t)
        let wasTripping = tripsActive
        configuration?.detectionMode = mode
        if wasTripping && !tripsActive { actions += endTrip(reason: .detectionModeChanged) }
        if !mode.detectsTrips { trips.reset() }
        return actions
    }

    /// Raises a test crash: the same evaluation path as a real one, flagged `isTest`; `followUp` asks for its
    /// `crashFollowUp` too.
    public mutating func raiseTestCrash(at t: Double, followUp: Bool = false) throws(RoadSaveError) -> [DetectionAction]
    {
        guard lifecycle != .unconfigured else { throw .notConfigured }
        guard monitoring else { throw .notMonitoring }
        guard crashesActive else { throw .crashDetectionDisabled }
        var actions = advance(to: t)
        actions.append(crashes.raiseTestCrash(at: t, context: crashContext, followUp: followUp))
        return actions
    }

    /// The platform's evaluation of a candidate from `.evaluateCrash` ended: the crash event, and its follow-up
    /// too when the session's time has passed the end of its watch.
    public mutating func crashEvaluated(crashID: String, outcome: CrashEvaluationOutcome) -> [DetectionAction] {
        crashes.evaluated(crashID: crashID, outcome: outcome, now: clock, settings: settings)
    }

    // MARK: Records and time

    /// Applies one record; records must come in event-time order (see `RecordOrdering`). Time first advances to
    /// the record, firing what was due before it.
    public mutating func handle(_ record: SensorRecord) -> [DetectionAction] {
        // A drive that went on through a silence of the records (a tunnel, a paused GPS) is not ended by it: its
        // stop delay must not fire in the silence (`TripEngine.droveThroughSilence`).
        var droveThrough = false
        if tripsActive, let lastRecordTime, record.t - lastRecordTime > Self.bridgeableSilence,
            case .location(let fix) = record.payload
        {
            droveThrough = trips.droveThroughSilence(since: lastRecordTime, to: fix, at: record.t)
        }
        var actions = advance(to: record.t, byRecord: true)
        guard monitoring else { return actions }
        // After a silence longer than the data-gap limit nothing is known of what happened in it: the trip in
        // progress ends at its last movement rather than being merged with whatever comes next.
        if let lastRecordTime, record.t - lastRecordTime > settings.dataGap, !droveThrough {
            actions += endTrip(reason: .dataGap)
        }
        lastRecordTime = record.t

        // What a crash's follow-up gathers from the record.
        var acceptedFix: AcceptedFix?
        var newSteps = 0
        var reportedActivity: ActivityObservation?
        switch record.payload {
        case .location(let fix):
            var measurement = FixMeasurement()
            let filtered = gps.accept(
                fix, at: record.t, settings: _settings,
                keepingFrom: gpsHistoryCutoff(at: record.t),
                pendingImpact: crashes.oldestPendingImpact,
                measurement: &measurement)
            // A position too coarse to use still says the phone had no clear sky on the ride (under ground).
            if case .failure(.poorAccuracy) = filtered, tripsActive { trips.coarseFixRejected() }
            guard case .success(let accepted) = filtered else { break }
            acceptedFix = accepted
            if accepted.isMovement { steps.movementSeen() }
            if tripsActive, let event = trips.fixAccepted(accepted, measurement: measurement, context: tripContext) {
                actions.append(.emit(event))
            }
        case .activity(let observation):
            reportedActivity = observation
            activity.update(observation, at: record.t)
            if tripsActive { trips.activityReported(observation.activity, at: record.t) }
            if tripsActive, let event = trips.activityChanged(context: tripContext) {
                actions.append(.emit(event))
            }
        case .steps(let count):
            // Without a pedometer only the stop delay ends trips.
            guard capabilities.pedometerAvailable else { break }
            newSteps = steps.update(cumulative: count)
            if tripsActive {
                let events = trips.stepsCounted(
                    newSteps, at: record.t, stepsSinceMovement: steps.sinceMovement,
                    context: tripContext)
                if !events.isEmpty { actions += events.map(DetectionAction.emit) }
            }
        case .impact(let observation):
            if crashesActive { crashes.impact(observation, at: record.t, context: crashContext) }
        case .capabilities(let reported):
            capabilities = reported
        }
        if crashes.isWatching, record.kind != .impact {
            crashes.observe(
                at: record.t, fix: acceptedFix, newSteps: newSteps, activity: reportedActivity,
                settings: settings)
        }
        // A record may have moved a deadline to or before now (for example the end of automotive reports).
        // (Nearly always nothing: appending an empty array is still a call.)
        let due = fireDueTimers(at: record.t, byRecord: true)
        if !due.isEmpty { actions += due }
        return actions
    }

    /// An impact record that came after records later than it were applied (too late for ordering): screened
    /// anyway, with what the session knows now (its GPS history around the impact, as far as it still holds it,
    /// and the trip and activity as they are), and decided at once when its decision time has passed.
    public mutating func lateImpact(_ record: SensorRecord) -> [DetectionAction] {
        guard crashesActive, case .impact(let observation) = record.payload else { return [] }
        // What followed it has been applied already: it has no follow-up.
        crashes.impact(observation, at: record.t, context: crashContext, watchAfter: false)
        guard let clock else { return [] }
        return fireDueTimers(at: clock, byRecord: false)
    }

    /// Lets time pass to `t` without a record of the device (it never runs backwards): crash decisions and
    /// follow-ups due by then, and the end of a trip whose device has been silent for `tripOfflineGrace`. The stop
    /// delay is not among them: only the device's own records say it stopped (`handle`).
    public mutating func advance(to t: Double) -> [DetectionAction] {
        advance(to: t, byRecord: false)
    }

    private mutating func advance(to t: Double, byRecord: Bool) -> [DetectionAction] {
        guard let clock, t <= clock else {
            let actions = fireDueTimers(at: t, byRecord: byRecord)
            self.clock = t
            return actions
        }
        return []
    }

    /// The earliest time at which `advance(to:)` will have something to do, for the shell's timer.
    /// `nextDeadline`, asked through in-place access: a fleet asks it of every device on every tick of the service,
    /// and reading it through an array element's getter copied the whole session first (a retain per reference in
    /// it), which made the tick of a large fleet cost more than its records.
    mutating func nextDeadlineInPlace() -> Double? { nextDeadline }

    /// The earliest time at which time passing alone (`advance(to:)`) has something to do: a crash decision or
    /// follow-up, or the end of a trip whose device stays silent (`silenceDeadline`).
    public var nextDeadline: Double? {
        guard monitoring else { return nil }
        // Asked of every device on every tick of the service: no array, and no settings or trip context read for
        // a device with no trip and no pending crash (most of a large fleet).
        var deadline = crashes.hasPending ? crashes.nextDeadline(settings: settings) : nil
        if tripsActive, trips.isDriving, let silence = silenceDeadline {
            deadline = deadline.map { min($0, silence) } ?? silence
        }
        return deadline
    }

    /// When the trip in progress ends if the device sends nothing more: `tripOfflineGrace` after its last record.
    var silenceDeadline: Double? {
        lastRecordTime.map { $0 + settings.tripOfflineGrace }
    }

    // MARK: Internals

    /// The settings' storage, to share with other sessions.
    var sharedSettings: SessionSettings { _settings }

    /// Uses `shared`'s storage for the settings when they are the same (devices of an application hold one copy).
    mutating func shareSettings(_ shared: SessionSettings) {
        _settings.share(shared)
    }

    /// `byRecord`: time reached `now` with a record of the device at `now`, which may show the stop delay passed;
    /// otherwise only the silence of `tripOfflineGrace` ends a trip (and first, when a record comes after it).
    private mutating func fireDueTimers(at now: Double, byRecord: Bool) -> [DetectionAction] {
        guard monitoring else { return [] }
        // The crash context (settings, GPS history) is built only when a decision may be due.
        var actions = crashes.hasPending ? crashes.advance(to: now, context: crashContext) : []
        guard tripsActive, trips.isDriving else { return actions }
        if !actions.isEmpty { noteSuspectedCrashes(actions) }
        if let silence = silenceDeadline, silence <= now {
            actions += endTrip(reason: .deviceSilent)
        } else if byRecord, let deadline = trips.stopDeadline(context: tripContext), deadline <= now {
            actions += endTrip(reason: .stopDelay)
        }
        return actions
    }

    /// The oldest fix time the session may still read at `t` or later: a speed estimate looks back
    /// `GPSTrack.speedReferenceLimit`, an impact from now on reads `crashSpeedWindowBefore` before it, and a crash
    /// waiting for its decision reads from that far before its first impact (and the fixes it is reported with,
    /// which the track keeps given that impact: `GPSTrack.crashPositionsKept`).
    private func gpsHistoryCutoff(at t: Double) -> Double {
        let lookBack = settings.crashSpeedWindowBefore
        var cutoff = t - max(GPSTrack.speedReferenceLimit, lookBack)
        if let firstImpact = crashes.oldestPendingImpact { cutoff = min(cutoff, firstImpact - lookBack) }
        return cutoff
    }

    private mutating func endTrip(reason: TripEndReason) -> [DetectionAction] {
        trips.end(reason: reason, settings: settings.behaviour).map(DetectionAction.emit)
    }

    /// A crash sent for evaluation in the trip in progress leaves that trip unscored (`TripEngine.crashSuspected`).
    private mutating func noteSuspectedCrashes(_ actions: [DetectionAction]) {
        guard trips.isDriving else { return }
        for case .evaluateCrash(let candidate) in actions where !candidate.isTest {
            if let tripID = candidate.tripID { trips.crashSuspected(tripID: tripID) }
        }
    }

    private mutating func applyStartupGuard(at t: Double, fetch: SettingsFetch) throws(RoadSaveError) {
        switch fetch {
        case .fetched(let fetched):
            settings = fetched
            lastSuccessfulSettingsFetch = t
        case .unreachable:
            guard let last = lastSuccessfulSettingsFetch, t - last <= settings.offlineGrace else {
                throw .offlineLimitExceeded(
                    lastSuccessfulFetch: lastSuccessfulSettingsFetch,
                    graceSeconds: settings.offlineGrace)
            }
        }
    }

    private var tripContext: TripContext {
        TripContext(settings: settings, capabilities: capabilities, activity: activity)
    }

    private var crashContext: CrashContext {
        CrashContext(
            sharedSettings: _settings, activity: activity, gps: gps, tripInProgress: trips.isDriving,
            tripID: trips.tripID)
    }
}
