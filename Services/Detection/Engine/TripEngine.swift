import RoadSaveModel

/// The trip state machine of one device. It only sees what `DeviceSession` hands it (filtered fixes, activity,
/// step counts) and works on their event times; `advance(to:)` fires the stop delay.
struct TripEngine: Sendable, Codable {
    enum State: Sendable, Equatable, Codable {
        case idle(MovementRun?)
        case driving(ActiveTrip)
    }

    /// The movement run being watched while idle, or the trip in progress: at most one of them. Out of line (8
    /// bytes each inline, a few hundred on the heap only while there is one) and changed in place, fix by fix.
    private var run: OutOfLine<MovementRun>?
    private var trip: OutOfLine<ActiveTrip>?
    let device: DeviceID
    /// Where the device has been while idle, to see how the next ride begins.
    private(set) var whereabouts = Whereabouts()
    /// The last movement run a stop broke, while it may still begin the next run's trip (`LeadIn`).
    private var brokenRun: OutOfLine<LeadIn>?
    /// The fix before the one being taken while idle: how fast a new movement run sped up.
    private var lastIdleFix: AcceptedFix?
    /// Where and when the device's last driving trip (judged car or unknown) ended, or, with none that day, its last
    /// ride on public transport: where its car stands, or where none of its cars does (`RideProfile`'s
    /// `boardedAwayFromCar`). Out of line: most devices hold none.
    private var parkedCar: OutOfLine<Whereabouts.Sample>?
    /// Where and when the device's last driving trip ended by the stop delay (its last moving fix): a vehicle that
    /// stood longer than that (a jam, a queue, a level crossing) and moves on from there soon after is the same
    /// drive going on (`MovementRun.resumedDrive`). Out of line: most devices hold none.
    private var stoodDrive: OutOfLine<Whereabouts.Sample>?
    /// How far from where a drive stood a run may begin and still resume it: what a car creeps in a queue, short of
    /// where a walk of the stop delay (about 340 m) takes its driver.
    static let resumeDistance = 300.0
    init(device: DeviceID) {
        self.device = device
    }

    /// The state as one value (checkpoints, and what the state machine means).
    var state: State {
        if let trip { return .driving(trip.value) }
        return .idle(run?.value)
    }

    private mutating func setState(_ state: State) {
        switch state {
        case .idle(let movement):
            run = movement.map { OutOfLine($0) }
            trip = nil
        case .driving(let active):
            trip = OutOfLine(active)
            run = nil
        }
    }

    var isDriving: Bool { trip != nil }
    /// The trip in progress.
    var tripID: String? { trip?.read(\.tripID) }

    // MARK: Inputs

    /// A fix passed the GPS filter; `measurement` is what the filter computed for it (reused, not computed again).
    /// The longest silence of the device's records a drive is taken to have gone on through: longer, and it may
    /// have ended and another begun.
    static let bridgedSilence = 900.0
    /// The speed a vehicle averaged across a silence it drove through, at least (a town drive's, stops included).
    static let bridgingSpeed = 4.0

    /// The device's records fell silent at `silentSince` and come again with `fix` at `t`: whether the trip in
    /// progress drove on through the silence (a tunnel, a phone that paused its GPS on a long drive). It did when
    /// the vehicle was moving at the trip's last movement, the silence began then, and `fix` lies as far on as
    /// `bridgingSpeed` covers from there; the silence then counts as movement, so neither the stop delay nor the
    /// data-gap limit ends the trip. A car that parked shows its stop first (the phone stands still before its
    /// GPS sleeps), and a silence of more than `bridgedSilence` is never bridged.
    mutating func droveThroughSilence(since silentSince: Double, to fix: LocationFix, at t: Double) -> Bool {
        guard let last = trip?.read({ $0.lastMovingFix }), let lastMovement = trip?.read({ $0.lastMovement }),
            lastMovement >= silentSince - Self.silenceBegan, t - lastMovement <= Self.bridgedSilence,
            (last.speed ?? 0) >= RideProfile.vehicleSpeed,
            (fix.horizontalAccuracy ?? 0) >= 0, (fix.horizontalAccuracy ?? 0) <= Self.bridgingAccuracy
        else { return false }
        let distance = Geo.distance(last.latitude, last.longitude, fix.latitude, fix.longitude)
        guard distance / (t - lastMovement) >= Self.bridgingSpeed else { return false }
        trip!.modify { $0.lastMovement = t }
        return true
    }

    /// The last movement must be this close to the last record before the silence (a fix or two).
    private static let silenceBegan = 15.0
    /// A fix after the silence must be at least this good to say where the vehicle got to.
    private static let bridgingAccuracy = 100.0

    mutating func fixAccepted(_ fix: AcceptedFix, measurement: FixMeasurement, context: TripContext) -> RoadSaveEvent? {
        if trip != nil {
            trip!.modify { trip in
                trip.odometer.add(fix, measurement: measurement)
                trip.ride.add(fix)
                trip.heldSpeed?.add(fix.speed)
                trip.behaviour.add(fix, settings: context.settings.behaviour)
                if fix.isMovement {
                    trip.lastMovement = fix.t
                    trip.lastMovingFix = fix
                }
            }
            return nil
        }
        whereabouts.add(fix)
        let previousIdleFix = lastIdleFix
        lastIdleFix = fix
        let startRunBreak = context.settings.startRunBreak
        let settings = context.settings
        if fix.isMovement {
            if let lastMovement = run?.read({ $0.lastMovement }), fix.t - lastMovement <= startRunBreak {
                let previous = run!.read { $0.odometer.last }
                run!.modify { run in
                    run.lastMovement = fix.t
                    run.lastMovingFix = fix
                    run.heldSpeed?.add(fix.speed)
                    run.maximumSpeed = max(run.maximumSpeed, fix.speed ?? 0)
                    run.odometer.add(fix, measurement: measurement)
                    run.ride.add(fix)
                    run.behaviour.add(fix, settings: settings.behaviour)
                    run.noteHeld(fix, after: previous, settings: settings)
                }
            } else {
                var started = MovementRun(
                    start: fix, lastMovement: fix.t, maximumSpeed: fix.speed ?? 0,
                    odometer: Odometer(anchor: fix))
                started.lastMovingFix = fix
                started.heldSpeed = HeldSpeed()
                started.heldSpeed?.add(fix.speed)
                started.ride.add(fix)
                started.behaviour.add(fix, settings: settings.behaviour)
                started.noteHeld(fix, after: previousIdleFix, settings: settings)
                started.wakeUp = WakeUp(before: previousIdleFix, first: fix)
                if let stood = stoodDrive?.value, resumes(stood, with: fix, settings: settings) {
                    started.resumedDrive = stood
                }
                // A phone that fell silent where it waited (iOS stops its fixes while it stands) waited on until it
                // could have left, wherever its first fix finds it: a wake-up's hundreds of metres, or tens.
                let silence = previousIdleFix.flatMap { fix.t - $0.t >= WakeUp.silence ? ($0, fix) : nil }
                started.ride.boardingWaitObserved = whereabouts.waitAfterWalking(
                    departure: fix.t, silentlyFrom: silence)
                started.ride.accuracyBeforeObserved = whereabouts.medianAccuracy(before: fix.t)
                if let broken = run?.read({ $0.asLeadIn(settings: settings) }) { brokenRun = OutOfLine(broken) }
                if let lead = brokenRun?.value, fix.t - lead.lastMovement <= settings.stopDelay {
                    started.leadIn = lead
                }
                brokenRun = nil
                run = OutOfLine(started)
            }
        } else if let lastMovement = run?.read({ $0.lastMovement }) {
            if fix.t - lastMovement > startRunBreak {
                brokenRun = run!.read { $0.asLeadIn(settings: settings) }.map(OutOfLine.init)
                run = nil
            } else {
                let previous = run!.read { $0.odometer.last }
                run!.modify { run in
                    run.heldSpeed?.add(fix.speed)
                    run.odometer.add(fix, measurement: measurement)
                    run.ride.add(fix)
                    run.behaviour.add(fix, settings: settings.behaviour)
                    run.noteHeld(fix, after: previous, settings: settings)
                }
            }
        }
        return startIfEvidenceSuffices(at: fix, measurement: measurement, context: context)
    }

    /// An activity report may complete the evidence gathered from GPS (the classifier lags behind the wheels).
    mutating func activityChanged(context: TripContext) -> RoadSaveEvent? {
        guard trip == nil, let last = run?.read({ $0.odometer.last }) else { return nil }
        return startIfEvidenceSuffices(at: last, context: context)
    }

    /// The activity classifier reported `activity` at `t`: noted by the ride in progress, if any.
    mutating func activityReported(_ activity: ActivityType, at t: Double) {
        modifyRide { $0.activityReported(activity, at: t) }
    }

    /// A fix too coarse for the GPS filter came during the ride in progress, if any: counted among its coarse ones.
    mutating func coarseFixRejected() {
        modifyRide { $0.coarseFixRejected() }
    }

    /// Changes the ride in progress: the trip's, or the movement run's before a trip started; none without either.
    private mutating func modifyRide(_ change: (inout RideProfile) -> Void) {
        if trip != nil {
            trip!.modify { change(&$0.ride) }
        } else if run != nil {
            run!.modify { change(&$0.ride) }
        }
    }

    /// The pedometer counted `newSteps` at `t`, `stepsSinceMovement` since the last movement. Past the threshold the
    /// user walked away, so the trip ends at once; steps while the vehicle moves mark a passenger.
    mutating func stepsCounted(_ newSteps: Int, at t: Double, stepsSinceMovement: Int, context: TripContext)
        -> [RoadSaveEvent]
    {
        modifyRide { $0.stepsCounted(newSteps, at: t) }
        guard stepsSinceMovement > context.settings.stepThreshold else { return [] }
        return end(reason: .steps, settings: context.settings.behaviour)
    }

    /// The time at which the stop delay ends the trip in progress, if nothing moves before then.
    func stopDeadline(context: TripContext) -> Double? {
        guard let lastMovement = trip?.read({ $0.lastMovement }) else { return nil }
        let settings = context.settings
        var from = lastMovement
        // "medium keeps a trip going": while the classifier keeps reporting automotive (a queue, a long red
        // light) the stop delay runs from its latest report, but never past the in-vehicle standstill limit.
        // A device that falls silent reports nothing, so its stop delay runs from its last movement.
        if context.capabilities.activityAvailable, context.activity.currentlyAutomotive,
            let report = context.activity.lastAutomotive, report > from
        {
            from = min(report, lastMovement + settings.maximumStandstillInVehicle - settings.stopDelay)
        }
        return from + settings.stopDelay
    }

    /// A crash was suspected in the trip in progress (sent for the platform's evaluation): its last seconds are the
    /// crash, not the driving, so the trip is not scored.
    mutating func crashSuspected(tripID: String) {
        guard self.tripID == tripID else { return }
        trip!.modify { $0.crashSuspected = true }
    }

    /// Ends the trip in progress, if any: its `tripDidEnd` (its end date is its last movement), then its
    /// `tripBehaviour`.
    mutating func end(reason: TripEndReason, settings behaviourSettings: BehaviourSettings) -> [RoadSaveEvent] {
        guard let trip = self.trip?.value else { return [] }
        self.trip = nil
        run = nil
        brokenRun = nil
        lastIdleFix = nil
        whereabouts.forget()
        let verdict = trip.ride.judge(distance: trip.odometer.distance, duration: trip.lastMovement - trip.startDate)
        // Where the device's car stands is known only from its own driving trip: a ride on public transport leaves
        // it where it was, and says nothing of where a car of the device stands (the day may go on by car from
        // anywhere: a second car, a lift, a taxi).
        if verdict.mode.isDriving, let end = trip.lastMovingFix {
            parkedCar = OutOfLine(Whereabouts.Sample(t: end.t, latitude: end.latitude, longitude: end.longitude))
        }
        stoodDrive =
            verdict.mode.isDriving && reason == .stopDelay ? parkedCar : nil
        let info = TripInfo(
            tripID: trip.tripID, startDate: trip.startDate, endDate: trip.lastMovement,
            distanceMetres: trip.odometer.distance, endReason: reason,
            transportMode: verdict.mode, transportReason: verdict.reason, transportSigns: verdict.signs,
            startLatitude: trip.startPosition?.latitude, startLongitude: trip.startPosition?.longitude,
            endLatitude: trip.lastMovingFix?.latitude, endLongitude: trip.lastMovingFix?.longitude,
            maxSpeed: trip.heldSpeed?.maximum)
        let behaviour = trip.behaviour.judge(
            tripID: trip.tripID, endDate: trip.lastMovement,
            distance: trip.odometer.distance,
            duration: trip.lastMovement - trip.startDate, mode: verdict.mode,
            crashed: trip.crashSuspected, settings: behaviourSettings)
        return [
            RoadSaveEvent(device: device, body: .tripDidEnd(info)),
            RoadSaveEvent(device: device, body: .tripBehaviour(behaviour)),
        ]
    }

    /// Forgets evidence gathered so far (detection paused or resumed: the startup guard runs again).
    mutating func reset() {
        if trip == nil {
            run = nil
            brokenRun = nil
        }
    }

    // MARK: Start decision

    private mutating func startIfEvidenceSuffices(
        at fix: AcceptedFix, measurement: FixMeasurement? = nil,
        context: TripContext
    ) -> RoadSaveEvent? {
        guard trip == nil,
            run?.read({ Self.evidenceSuffices($0, at: fix, measurement: measurement, context: context) }) == true
        else { return nil }
        return start(run!.value)
    }

    /// Static: it reads only the run (read in place, where a method would copy the engine to call it).
    private static func evidenceSuffices(
        _ run: MovementRun, at fix: AcceptedFix, measurement: FixMeasurement?,
        context: TripContext
    ) -> Bool {
        let settings = context.settings
        let netDistance = measurement?.distance(to: fix, from: run.start) ?? run.start.distance(to: fix)
        let evidence: Bool
        if context.capabilities.activityAvailable {
            evidence =
                context.activity.allowsTripStart(at: fix.t)
                && run.duration >= settings.startDuration
                && netDistance >= settings.startDistance
                && run.maximumSpeed >= settings.startSpeed
        } else {
            // No classifier: sustained movement faster than walking, running or cycling, over a longer stretch.
            // City driving averages less than that between its lights, but reaches a speed no bicycle holds, or
            // holds 30 km/h for a quarter of a minute, which a bicycle rarely does (so a trip starts within about
            // half a minute of moving off).
            let sustained =
                run.duration >= settings.gpsOnlyStartDuration
                && netDistance >= settings.gpsOnlyStartDistance
                && (run.odometer.distance / run.duration >= settings.gpsOnlyStartSpeed
                    || run.ride.sustainedTopSpeed >= settings.gpsOnlyStartPeakSpeed)
            let held = run.heldFast && netDistance >= settings.gpsOnlyStartHeldDistance
            // A drive that stood past the stop delay and moves on from where it stood: a trip just showed a vehicle
            // there, so the classifier's thresholds, not the stricter ones that keep walks and bicycles out.
            let resumed =
                run.resumedDrive != nil && run.duration >= settings.startDuration
                && netDistance >= settings.startDistance && run.maximumSpeed >= settings.startSpeed
            evidence = sustained || held || resumed
        }
        return evidence
    }

    /// Whether a movement run beginning with `fix` resumes the drive that stood at `stood`: it begins within the stop
    /// delay after that trip ended (twice the stop delay after its last movement), within `resumeDistance` of it.
    private func resumes(_ stood: Whereabouts.Sample, with fix: AcceptedFix, settings: DetectionSettings) -> Bool {
        guard fix.t - stood.t <= 2 * settings.stopDelay else { return false }
        return stood.distance(to: Whereabouts.Sample(t: fix.t, latitude: fix.latitude, longitude: fix.longitude))
            <= Self.resumeDistance
    }

    private mutating func start(_ run: MovementRun) -> RoadSaveEvent {
        var startDate = run.start.t
        var startFix = run.start
        var ride = run.ride
        var odometer = run.odometer
        var heldSpeed = run.heldSpeed ?? HeldSpeed()
        if let leadIn = run.leadIn {
            startDate = leadIn.start.t
            startFix = leadIn.start
            odometer.addLeadIn(leadIn.distance + leadIn.last.distance(to: run.start))
            heldSpeed = heldSpeed.continuing(leadIn.heldSpeed)
            ride.accuracyBeforeObserved = leadIn.accuracyBefore
        } else if let wakeUp = run.wakeUp {
            // The phone left from where it lay before the silence.
            startDate = wakeUp.estimatedDeparture
            startFix = wakeUp.before
            odometer.addLeadIn(wakeUp.before.distance(to: run.start))
        }
        if let car = parkedCar?.value {
            ride.distanceFromCarObserved = whereabouts.distanceFromCar(
                car, departure: startDate, firstMoving: run.start)
        }
        let tripID = StableID.make("trip", device.app, device.user, millis(startDate))
        trip = OutOfLine(
            ActiveTrip(
                tripID: tripID, startDate: startDate, lastMovement: run.lastMovement,
                odometer: odometer, ride: ride, startPosition: Position(startFix),
                lastMovingFix: run.lastMovingFix ?? run.odometer.last ?? run.start,
                heldSpeed: heldSpeed, behaviour: run.behaviour))
        self.run = nil
        stoodDrive = nil
        return RoadSaveEvent(device: device, body: .tripDidStart(TripStartInfo(tripID: tripID, startDate: startDate)))
    }
}

/// What the trip engine reads from the rest of the session.
struct TripContext {
    /// A copy of the settings (a few hundred bytes of numbers, no references): cheaper than holding the shared
    /// storage, which costs an atomic retain and release every time a context is made (up to three a record).
    var settings: DetectionSettings
    var capabilities: DeviceCapabilities
    var activity: ActivityContext
}

// Checkpoints written before rides were judged have no `ride` or `whereabouts`, older ones no lead-in, and those
// before trips said where they went no positions or held speed, and none where the last driving trip ended: such a
// device judges what it sees from now on.
// (The `lastTripEnd` of earlier checkpoints is no longer read.)
extension TripEngine {
    private enum CodingKeys: String, CodingKey {
        case state, device, whereabouts, lastIdleFix, brokenRun, parkedCar, stoodDrive
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let state = try container.decode(State.self, forKey: .state)
        device = try container.decode(DeviceID.self, forKey: .device)
        whereabouts = try container.decodeIfPresent(Whereabouts.self, forKey: .whereabouts) ?? Whereabouts()
        lastIdleFix = try container.decodeIfPresent(AcceptedFix.self, forKey: .lastIdleFix)
        brokenRun = try container.decodeIfPresent(LeadIn.self, forKey: .brokenRun).map(OutOfLine.init)
        parkedCar = try container.decodeIfPresent(Whereabouts.Sample.self, forKey: .parkedCar).map(OutOfLine.init)
        stoodDrive = try container.decodeIfPresent(Whereabouts.Sample.self, forKey: .stoodDrive).map(OutOfLine.init)
        setState(state)
    }

    /// The same keys and values as when the state was stored as one enum.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state, forKey: .state)
        try container.encode(device, forKey: .device)
        try container.encode(whereabouts, forKey: .whereabouts)
        try container.encodeIfPresent(lastIdleFix, forKey: .lastIdleFix)
        try container.encodeIfPresent(brokenRun?.value, forKey: .brokenRun)
        try container.encodeIfPresent(parkedCar?.value, forKey: .parkedCar)
        try container.encodeIfPresent(stoodDrive?.value, forKey: .stoodDrive)
    }
}
