import RoadSaveModel

/// Movement before a trip: the run that builds evidence towards one, and where a trip it starts begins.
extension TripEngine {
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
        /// Where the drive this run resumes stood (`TripEngine`'s `stoodDrive`), if the run began there soon after
        /// that trip ended.
        var resumedDrive: Whereabouts.Sample?
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
                    heldSpeed: peak.continuing(leadIn.heldSpeed), accuracyBefore: leadIn.accuracyBefore)
            }
            guard maximumSpeed >= settings.startSpeed, odometer.distance >= Self.leadInDistance else { return nil }
            return LeadIn(
                start: start, last: last, lastMovement: lastMovement, distance: odometer.distance, heldSpeed: peak,
                accuracyBefore: ride.accuracyBeforeObserved)
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
        /// How sharp the phone's positions were before the first of these runs (`RideProfile.accuracyBeforeObserved`):
        /// a later run's minutes before are this ride's own fixes.
        var accuracyBefore: Double?
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
}

extension TripEngine.MovementRun {
    private enum CodingKeys: String, CodingKey {
        case start, lastMovement, maximumSpeed, odometer, ride, heldFastFrom, heldFast, heldFastLeapt, leadIn, wakeUp
        case lastMovingFix, heldSpeed, behaviour, resumedDrive
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
        resumedDrive = try container.decodeIfPresent(Whereabouts.Sample.self, forKey: .resumedDrive)
    }
}
