import RoadSaveModel

/// The trip state machine of one device. It only sees what `DeviceSession` hands it (filtered fixes, activity,
/// step counts) and works on their event times; `advance(to:)` fires the stop delay.
struct TripEngine: Sendable, Codable {
    /// Movement seen before a trip, building evidence towards one.
    struct MovementRun: Sendable, Equatable, Codable {
        var start: AcceptedFix
        var lastMovement: Double
        var maximumSpeed: Double
        var odometer: Odometer
        var ride = RideProfile()
        /// The fix from which every fix has been at `gpsOnlyStartHeldSpeed` or faster, and whether such a stretch
        /// has lasted `gpsOnlyStartHeldDuration` while getting somewhere (a GPS excursion out and back, while the
        /// phone lay still, reads fast too, but goes nowhere).
        var heldFastFrom: AcceptedFix?
        var heldFast = false
        /// The stretch began with a leap no vehicle makes (GPS jumping away): it does not count until the speed has
        /// dropped below the held speed again.
        var heldFastLeapt = false
        /// The runs before this one that a trip started by it begins with (`LeadIn`), if any.
        var leadIn: LeadIn?
        /// When the run's first fix came after a silence that found the phone elsewhere (`WakeUp`), if it did.
        var wakeUp: WakeUp?
        /// The fix of `lastMovement` and the speed held so far (optional: checkpoints before them have neither).
        var lastMovingFix: AcceptedFix?
        var heldSpeed: HeldSpeed?
        /// How the run was driven, should it become a trip: its first seconds are the trip's too.
        var behaviour = DrivingBehaviour()
        /// Faster than any road vehicle speeds up (about 0.5 g).
        static let maximumAcceleration = 5.0
        /// A run this far (counted movement) at vehicle speed is a drive's beginning, not GPS jitter or a stroll.
        static let leadInDistance = 100.0

        var duration: Double { lastMovement - start.t }

        /// This run as the beginning of the next one's trip, once a stop longer than `startRunBreak` has broken it:
        /// when it moved like a vehicle (`startSpeed` reached, `leadInDistance` covered), or itself continued one.
        func asLeadIn(settings: DetectionSettings) -> LeadIn? {
            let last = odometer.last ?? start
            let peak = heldSpeed ?? HeldSpeed()
            if let leadIn {
                return LeadIn(
                    start: leadIn.start, last: last, lastMovement: lastMovement,
                    distance: leadIn.distance + leadIn.last.distance(to: start) + odometer.distance,
                    heldSpeed: peak.continuing(leadIn.heldSpeed))
            }
            guard maximumSpeed >= settings.startSpeed, odometer.distance >= Self.leadInDistance else { return nil }
            return LeadIn(
                start: start, last: last, lastMovement: lastMovement, distance: odometer.distance, heldSpeed: peak)
        }

        /// Notes a fix's speed against the held-speed start of devices without a classifier: the stretch must cover,
        /// in a straight line, at least two thirds of what the held speed would in that time.
        mutating func noteHeld(_ fix: AcceptedFix, after previous: AcceptedFix?, settings: DetectionSettings) {
            guard let speed = fix.speed, speed >= settings.gpsOnlyStartHeldSpeed else {
                heldFastFrom = nil
                heldFastLeapt = false
                return
            }
            guard !heldFastLeapt else { return }
            guard let from = heldFastFrom else {
                // Further from the fix before than the speed then, sped up as no vehicle does, could take it (with
                // both fixes' accuracy): the position leapt. Speeds estimated from displacement smooth a leap over
                // ten seconds, so the distance is what tells.
                if let previous, fix.t > previous.t {
                    let elapsed = fix.t - previous.t
                    let reach =
                        (previous.speed ?? 0) * elapsed + 0.5 * Self.maximumAcceleration * elapsed * elapsed
                        + previous.accuracy + fix.accuracy
                    if previous.distance(to: fix) > reach {
                        heldFastLeapt = true
                        return
                    }
                }
                heldFastFrom = fix
                return
            }
            let elapsed = fix.t - from.t
            if elapsed >= settings.gpsOnlyStartHeldDuration,
                from.distance(to: fix) >= 2.0 / 3.0 * settings.gpsOnlyStartHeldSpeed * elapsed
            {
                heldFast = true
            }
        }
    }

    /// Movement runs broken by stops shorter than `stopDelay` (a red light longer than `startRunBreak`, a queue):
    /// had a trip been under way, those stops would not have ended it, so a trip started later begins where they
    /// did, with their distance. Without it a city drive's trip would start after its last long light.
    struct LeadIn: Sendable, Equatable, Codable {
        var start: AcceptedFix
        var last: AcceptedFix
        var lastMovement: Double
        var distance: Double
        /// Optional: lead-ins of checkpoints before it have none.
        var heldSpeed: HeldSpeed?
    }

    /// A phone that sleeps its GPS while it stands still (Android does) wakes it only minutes after moving off: the
    /// first fix after the silence finds it away already, at speed. It set off, at the latest, as long before that
    /// fix as the distance takes at the fix's speed; the trip begins then, with that distance.
    struct WakeUp: Sendable, Equatable, Codable {
        /// The last fix before the silence, where the phone lay.
        var before: AcceptedFix
        var estimatedDeparture: Double
        /// A silence this long, ending this far away, is a wake-up (fixes every few seconds leave no such gap).
        static let silence = 60.0
        static let distance = 100.0

        init?(before: AcceptedFix?, first fix: AcceptedFix) {
            guard let before, fix.t - before.t >= Self.silence, let speed = fix.speed, speed > 0 else { return nil }
            let distance = before.distance(to: fix)
            guard distance >= Self.distance else { return nil }
            self.before = before
            estimatedDeparture = max(before.t, fix.t - distance / speed)
        }
    }

    struct ActiveTrip: Sendable, Equatable, Codable {
        var tripID: String
        var startDate: Double
        var lastMovement: Double
        var odometer: Odometer
        var ride = RideProfile()
        /// Where the trip began (the position at `startDate`) and the fix of `lastMovement`, where it ends; and the
        /// speed held so far. Optional: trips in checkpoints before them have none, and their end says nothing of it.
        var startPosition: Position?
        var lastMovingFix: AcceptedFix?
        var heldSpeed: HeldSpeed?
        /// How it is being driven, judged at its end (`tripBehaviour`); and whether a crash was suspected in it.
        var behaviour = DrivingBehaviour()
        var crashSuspected = false
    }

    /// A latitude and longitude.
    struct Position: Sendable, Equatable, Codable {
        var latitude: Double
        var longitude: Double

        init(_ fix: AcceptedFix) {
            latitude = fix.latitude
            longitude = fix.longitude
        }
    }

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
                // A phone that fell silent where it waited (iOS stops its fixes while it stands) waited on until it
                // could have left, wherever its first fix finds it: a wake-up's hundreds of metres, or tens.
                let silence = previousIdleFix.flatMap { fix.t - $0.t >= WakeUp.silence ? ($0, fix) : nil }
                started.ride.boardingWaitObserved = whereabouts.waitAfterWalking(
                    departure: fix.t, silentlyFrom: silence)
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

    /// The pedometer counted `newSteps` at `t`, `stepsSinceMovement` since the last movement. Past the threshold the
    /// user walked away, so the trip ends at once; steps while the vehicle moves mark a passenger.
    mutating func stepsCounted(_ newSteps: Int, at t: Double, stepsSinceMovement: Int, context: TripContext)
        -> [RoadSaveEvent]
    {
        if trip != nil {
            trip!.modify { $0.ride.stepsCounted(newSteps, at: t) }
        } else if run != nil {
            run!.modify { $0.ride.stepsCounted(newSteps, at: t) }
        }
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
        if let end = trip.lastMovingFix {
            // A ride on public transport leaves the car where it was; with none parked that day, the device came by
            // public transport, so no car of its stands where the ride ended either: a ride from elsewhere is
            // another leg of the journey.
            let carKnown = parkedCar.map { end.t - $0.read(\.t) <= RideProfile.parkedCarValidity } ?? false
            if verdict.mode.isDriving || !carKnown {
                parkedCar = OutOfLine(Whereabouts.Sample(t: end.t, latitude: end.latitude, longitude: end.longitude))
            }
        }
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
            evidence = sustained || held
        }
        return evidence
    }

    private mutating func start(_ run: MovementRun) -> RoadSaveEvent {
        var startDate = run.start.t
        var startFix = run.start
        var odometer = run.odometer
        var heldSpeed = run.heldSpeed ?? HeldSpeed()
        if let leadIn = run.leadIn {
            startDate = leadIn.start.t
            startFix = leadIn.start
            odometer.addLeadIn(leadIn.distance + leadIn.last.distance(to: run.start))
            heldSpeed = heldSpeed.continuing(leadIn.heldSpeed)
        } else if let wakeUp = run.wakeUp {
            // The phone left from where it lay before the silence.
            startDate = wakeUp.estimatedDeparture
            startFix = wakeUp.before
            odometer.addLeadIn(wakeUp.before.distance(to: run.start))
        }
        var ride = run.ride
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

/// Distance travelled, counted so that GPS jitter adds nothing: only a fix that is movement adds distance, from
/// the last fix counted. Fixes while stopped (jitter) add nothing; slow creeping between two movement fixes is
/// recovered as the straight line between them.
struct Odometer: Sendable, Equatable, Codable {
    private(set) var distance = 0.0
    private(set) var anchor: AcceptedFix
    private(set) var last: AcceptedFix?

    init(anchor: AcceptedFix) {
        self.anchor = anchor
        self.last = anchor
    }

    /// `measurement` is what the GPS filter computed for the fix: the anchor is often the fix before it, whose
    /// distance the filter already has.
    mutating func add(_ fix: AcceptedFix, measurement: FixMeasurement) {
        last = fix
        guard fix.isMovement else { return }
        distance += measurement.distance(from: fix, to: anchor)
        anchor = fix
    }

    /// The distance of the runs a trip begins with (`TripEngine.LeadIn`), counted before this odometer's.
    mutating func addLeadIn(_ metres: Double) {
        distance += metres
    }
}

// Checkpoints written before rides were judged have no `ride` or `whereabouts`, older ones no lead-in, and those
// before trips said where they went no positions or held speed, and none where the last driving trip ended: such a
// device judges what it sees from now on.
// (The `lastTripEnd` of earlier checkpoints is no longer read.)
extension TripEngine {
    private enum CodingKeys: String, CodingKey { case state, device, whereabouts, lastIdleFix, brokenRun, parkedCar }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let state = try container.decode(State.self, forKey: .state)
        device = try container.decode(DeviceID.self, forKey: .device)
        whereabouts = try container.decodeIfPresent(Whereabouts.self, forKey: .whereabouts) ?? Whereabouts()
        lastIdleFix = try container.decodeIfPresent(AcceptedFix.self, forKey: .lastIdleFix)
        brokenRun = try container.decodeIfPresent(LeadIn.self, forKey: .brokenRun).map(OutOfLine.init)
        parkedCar = try container.decodeIfPresent(Whereabouts.Sample.self, forKey: .parkedCar).map(OutOfLine.init)
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
    }
}

extension TripEngine.MovementRun {
    private enum CodingKeys: String, CodingKey {
        case start, lastMovement, maximumSpeed, odometer, ride, heldFastFrom, heldFast, heldFastLeapt, leadIn, wakeUp
        case lastMovingFix, heldSpeed, behaviour
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        start = try container.decode(AcceptedFix.self, forKey: .start)
        lastMovement = try container.decode(Double.self, forKey: .lastMovement)
        maximumSpeed = try container.decode(Double.self, forKey: .maximumSpeed)
        odometer = try container.decode(Odometer.self, forKey: .odometer)
        ride = try container.decodeIfPresent(RideProfile.self, forKey: .ride) ?? RideProfile()
        heldFastFrom = try container.decodeIfPresent(AcceptedFix.self, forKey: .heldFastFrom)
        heldFast = try container.decodeIfPresent(Bool.self, forKey: .heldFast) ?? false
        heldFastLeapt = try container.decodeIfPresent(Bool.self, forKey: .heldFastLeapt) ?? false
        leadIn = try container.decodeIfPresent(TripEngine.LeadIn.self, forKey: .leadIn)
        wakeUp = try container.decodeIfPresent(TripEngine.WakeUp.self, forKey: .wakeUp)
        lastMovingFix = try container.decodeIfPresent(AcceptedFix.self, forKey: .lastMovingFix)
        heldSpeed = try container.decodeIfPresent(HeldSpeed.self, forKey: .heldSpeed)
        behaviour = try container.decodeIfPresent(DrivingBehaviour.self, forKey: .behaviour) ?? DrivingBehaviour()
    }
}

extension TripEngine.ActiveTrip {
    private enum CodingKeys: String, CodingKey {
        case tripID, startDate, lastMovement, odometer, ride, startPosition, lastMovingFix, heldSpeed, behaviour
        case crashSuspected
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tripID = try container.decode(String.self, forKey: .tripID)
        startDate = try container.decode(Double.self, forKey: .startDate)
        lastMovement = try container.decode(Double.self, forKey: .lastMovement)
        odometer = try container.decode(Odometer.self, forKey: .odometer)
        ride = try container.decodeIfPresent(RideProfile.self, forKey: .ride) ?? RideProfile()
        startPosition = try container.decodeIfPresent(TripEngine.Position.self, forKey: .startPosition)
        lastMovingFix = try container.decodeIfPresent(AcceptedFix.self, forKey: .lastMovingFix)
        heldSpeed = try container.decodeIfPresent(HeldSpeed.self, forKey: .heldSpeed)
        behaviour = try container.decodeIfPresent(DrivingBehaviour.self, forKey: .behaviour) ?? DrivingBehaviour()
        crashSuspected = try container.decodeIfPresent(Bool.self, forKey: .crashSuspected) ?? false
    }
}
