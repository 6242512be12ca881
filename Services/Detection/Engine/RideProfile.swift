import RoadSaveModel

/// What a ride looked like, gathered fix by fix from the first movement of a trip to its end, to tell a car from
/// public transport (`TransportMode`). A phone on a bus, tram or train reads like one in a car to the activity
/// classifier (automotive) and to GPS (vehicle speeds); what differs is the shape of the ride as a whole:
/// - underground stretches: GPS lost for a minute or more while the phone kept travelling at vehicle speed (metro);
/// - coarse positions for much of the ride from a phone whose positions were sharp before it: under ground, or in a
///   train's carriage (network positions, tens of metres out), where a car's windows let GPS through;
/// - speeds cars do not hold for minutes (intercity trains), and stops at stations between fast runs;
/// - steps counted while the vehicle moves (a passenger walking in the aisle; a driver cannot);
/// - a wait of minutes where the ride began, after walking there: a stop, not a parked car;
/// - frequent short stops on a slow ride: a bus or tram dwelling at its stops every few hundred metres.
/// Measured on the travel diaries of real recordings (docs/detection.md "Passengers"); each sign is chosen so that ordinary
/// driving does not show it, since a driving trip taken for a bus ride would be lost to the consumer.
struct RideProfile: Sendable, Equatable, Codable {
    /// Rides shorter than these are not judged (`unknown`, `tooShort`): too little to tell a car from a bus.
    static let minimumDuration = 180.0
    static let minimumDistance = 1_000.0
    /// A gap between fixes this long, and this many times the ride's usual interval, bridged at vehicle speed, is an
    /// underground stretch (a phone that reports rarely anyway says nothing by a gap).
    static let undergroundGap = 60.0
    static let undergroundGapIntervals = 10.0
    static let undergroundSpeed = 8.0
    /// Gaps that make a ride underground, or the share of the ride one gap must cover.
    static let undergroundGapsNeeded = 2
    static let undergroundShare = 0.2
    /// A fix less accurate than this is a network position, not a GPS fix under open sky (a phone's GPS reads 3–10 m).
    static let coarseAccuracy = 25.0
    /// The share of the ride's fixes that must be coarse, with at least `coarseFixesNeeded` of them, from a phone
    /// whose positions before the ride had a median accuracy of `sharpAccuracyBefore` or better (a phone that reports
    /// coarse positions everywhere, at a low accuracy setting or indoors, says nothing by them).
    static let coarseShare = 0.4
    static let coarseFixesNeeded = 5
    static let sharpAccuracyBefore = 15.0
    /// An activity report counts for the ride's motion when it comes this soon after a fix at vehicle speed.
    static let reportNearFix = 30.0
    /// The share of those reports that must say stationary, with at least `stillReportsNeeded` of them: a carriage
    /// on rails runs smoothly enough for the classifier to call the phone still; a car on a road shakes it.
    static let stillShare = 0.3
    static let stillReportsNeeded = 5
    /// 151 km/h: trains hold it for minutes; a car that does so for `railSpeedDuration` is rare enough to accept.
    static let railSpeed = 42.0
    static let railSpeedDuration = 120.0
    /// Speeds at which the vehicle is moving (steps then come from walking inside it), and at rest.
    static let vehicleSpeed = 5.0
    static let restSpeed = 1.0
    static let stepsWhileMovingThreshold = 30
    /// A dwell at a stop: the vehicle at rest this long between moving stretches (a red light is usually longer, a
    /// queue's creep shorter).
    static let dwellRange = 8.0...45.0
    /// A silence this long that ends within this distance of where it began, slow before it, is a stop.
    static let silentStopGap = 15.0
    static let silentStopDistance = 60.0
    static let minimumDwellStops = 4
    static let dwellStopsPerKilometre = 1.2
    /// The share of all stops that must be dwell-like, and the top speed under which a ride counts as urban.
    static let dwellShare = 0.6
    static let urbanTopSpeed = 20.0

    /// A station stop: after `stationRun` at this speed (90 km/h), down to rest within `stationRamp`, a dwell of
    /// `stationDwell`, and back up to it within `stationRamp`; a jam does not clear that fast.
    static let stationSpeed = 25.0
    static let stationRamp = 150.0
    static let stationDwell = 20.0...300.0
    /// A train runs a minute or more at speed between stations (Caltrain's come 2–4 minutes apart); lights on a
    /// fast road come closer together.
    static let stationRun = 60.0
    static let minimumStationStops = 2
    /// A passenger walks to a stop and waits; a driver leaves within a minute of reaching the car.
    static let boardingWait = 150.0
    /// A driver's next drive leaves from where the last one ended (where it ended is the last moving fix, and the
    /// phone may wake its GPS a few hundred metres under way): further than this, the ride was boarded elsewhere.
    static let awayFromCarDistance = 600.0
    /// Where the last driving trip ended is taken for the car's place for this long: within a day. A car left
    /// overnight where a missed bus ride seemed to end must not turn the next morning's drives into bus rides.
    static let parkedCarValidity = 12 * 3_600.0

    /// How long the device waited where the ride began after walking there (`Whereabouts`); nil when it did not.
    var boardingWaitObserved: Double?
    /// How far from where the device's car stands (`TripEngine`'s `parkedCar`) the ride began
    /// (`Whereabouts.distanceFromCar`); nil when it had no such place that day, or was not seen before the ride.
    var distanceFromCarObserved: Double?
    /// The median accuracy of the phone's positions in the minutes before the ride (`Whereabouts.medianAccuracy`);
    /// nil when too few were seen.
    var accuracyBeforeObserved: Double?
    /// The ride's fixes coarser than `coarseAccuracy` (optional: rides checkpointed before they were counted count
    /// none, and then show no such sign).
    private(set) var coarseFixes: Int?
    /// Fixes of the ride the GPS filter rejected as too coarse (counted in `coarseFixes` too).
    private(set) var rejectedFixes: Int?
    /// Activity reports while the vehicle moved, and those of them that said stationary (optional: rides checkpointed
    /// before they were counted count none, and then show no such sign).
    private(set) var reportsWhileMoving: Int?
    private(set) var stillReportsWhileMoving: Int?
    private(set) var undergroundGaps = 0
    /// The seconds those gaps lasted (optional: rides checkpointed before it was kept count none).
    private(set) var undergroundSeconds: Double?
    private(set) var railSpeedSeconds = 0.0
    private(set) var stepsWhileMoving = 0
    private(set) var stationStops = 0
    private(set) var dwellStops = 0
    private(set) var otherStops = 0
    /// The fastest speed held over two consecutive fixes (one fast fix can be a GPS spike).
    private(set) var sustainedTopSpeed = 0.0
    private var last: AcceptedFix?
    private var first: Double?
    private var fixes = 0
    /// When the vehicle came to rest after moving, while it still is.
    private var restSince: Double?
    private var movedSinceRest = false
    /// The last fix at station speed, and a stop that came from it and is waiting to see station speed again.
    private var lastAtStationSpeed: Double?
    private var stationSpeedSince: Double?
    private var lastStationRun = 0.0
    private var stationStopEnded: Double?

    mutating func add(_ fix: AcceptedFix) {
        defer {
            last = fix
            first = first ?? fix.t
            fixes += 1
            if fix.accuracy > Self.coarseAccuracy { coarseFixes = (coarseFixes ?? 0) + 1 }
        }
        if let last, let first, fixes >= 2 {
            let gap = fix.t - last.t
            let usualInterval = (last.t - first) / Double(fixes - 1)
            // A phone that sleeps its GPS while it stands still (Android does, and wakes it minutes later) leaves a
            // gap too: only one that began while the phone was travelling is taken for a tunnel.
            if gap >= max(Self.undergroundGap, Self.undergroundGapIntervals * usualInterval),
                fix.distance(to: last) / gap >= Self.undergroundSpeed, (last.speed ?? 0) >= Self.vehicleSpeed
            {
                undergroundGaps += 1
                undergroundSeconds = (undergroundSeconds ?? 0) + gap
            }
        }
        // A phone that reports by distance (iOS: a fix every 30 m or so) says nothing while the vehicle stands: a
        // silence that ends a few tens of metres on, slow before it, is a stop from the last fix on.
        if let last, restSince == nil, movedSinceRest, fix.t - last.t >= Self.silentStopGap,
            (last.speed ?? 0) < Self.vehicleSpeed, fix.distance(to: last) <= Self.silentStopDistance
        {
            restSince = last.t
            stationStopEnded = nil
        }
        // A fix with no speed yet (the first after a gap) says nothing about moving or resting.
        guard let speed = fix.speed else { return }
        if let last {
            let gap = fix.t - last.t
            let lastSpeed = last.speed ?? 0
            if gap <= 10 {
                sustainedTopSpeed = max(sustainedTopSpeed, min(speed, lastSpeed))
                if speed >= Self.railSpeed, lastSpeed >= Self.railSpeed { railSpeedSeconds += gap }
            }
        }
        if speed >= Self.stationSpeed {
            if let ended = stationStopEnded, fix.t - ended <= Self.stationRamp { stationStops += 1 }
            stationStopEnded = nil
            lastAtStationSpeed = fix.t
            let since = stationSpeedSince ?? fix.t
            stationSpeedSince = since
            lastStationRun = fix.t - since
        } else {
            stationSpeedSince = nil
        }
        if speed >= Self.vehicleSpeed {
            if let restSince, movedSinceRest {
                let dwell = fix.t - restSince
                if Self.dwellRange.contains(dwell) { dwellStops += 1 } else { otherStops += 1 }
                // A stop reached straight from station speed, of a station's length, may be one.
                if let fast = lastAtStationSpeed, restSince - fast <= Self.stationRamp,
                    lastStationRun >= Self.stationRun,
                    Self.stationDwell.contains(dwell)
                {
                    stationStopEnded = fix.t
                }
            }
            restSince = nil
            movedSinceRest = true
        } else if speed < Self.restSpeed, restSince == nil, movedSinceRest {
            restSince = fix.t
            // Stopping again before station speed: stop-and-go, not a station.
            stationStopEnded = nil
        }
    }

    /// A fix of the ride too coarse for the GPS filter (`DetectionSettings.maximumHorizontalAccuracy`): coarse, and
    /// one of the ride's fixes for the share.
    mutating func coarseFixRejected() {
        guard first != nil else { return }
        coarseFixes = (coarseFixes ?? 0) + 1
        rejectedFixes = (rejectedFixes ?? 0) + 1
    }

    /// Steps the pedometer counted at `t`: walking while the vehicle moves is a passenger's.
    mutating func stepsCounted(_ count: Int, at t: Double) {
        guard let last, let speed = last.speed, speed >= Self.vehicleSpeed, t - last.t <= 10 else { return }
        stepsWhileMoving += count
    }

    /// The activity classifier reported `activity` at `t`: while the vehicle moves, a report of stationary is the
    /// smooth ride of a train, metro or tram.
    mutating func activityReported(_ activity: ActivityType, at t: Double) {
        guard let last, let speed = last.speed, speed >= Self.vehicleSpeed, t - last.t <= Self.reportNearFix else {
            return
        }
        reportsWhileMoving = (reportsWhileMoving ?? 0) + 1
        if activity == .stationary { stillReportsWhileMoving = (stillReportsWhileMoving ?? 0) + 1 }
    }

    /// Signs that drivers show too often to decide a ride: reported, never deciding (docs/detection.md
    /// "Passengers": a sign decides only if it takes at most 2 % of the car drives of each dataset it was not fitted
    /// on for transit). `regularDwellStops` (fitted on the travel diaries) takes 4 of enviroCar's 112 drives: town
    /// driving between lights.
    static let weakSigns: Set<TransportReason> = [.regularDwellStops]

    /// Whether `sign` may decide this ride. `boardedAwayFromCar` (fitted on MobilityNet's scripted journeys, one car
    /// a person) decides only when the phone came to where the ride began on foot, in the minutes before it: a
    /// passenger walks to a stop, while a car that is not the device's own (a second car at home, a lift, a taxi
    /// at the door) meets the phone where it has been, and a phone that records only its rides (Go!Track) shows no
    /// walk at all. Otherwise it is reported, not deciding: 4 of Go!Track's 65 car rides and none of Helsinki's 6
    /// show it, after moves of the car the phone did not record.
    func decides(_ sign: TransportReason) -> Bool {
        if Self.weakSigns.contains(sign) { return false }
        if sign == .boardedAwayFromCar { return boardingWaitObserved != nil }
        return true
    }

    /// The verdict on the ride as a whole: the first deciding sign, and every sign seen.
    func judge(distance: Double, duration: Double)
        -> (mode: TransportMode, reason: TransportReason, signs: [TransportReason])
    {
        guard duration >= Self.minimumDuration, distance >= Self.minimumDistance else {
            return (.unknown, .tooShort, [])
        }
        let signs = signs(distance: distance, duration: duration)
        guard let deciding = signs.first(where: decides) else {
            return (.car, .noTransitEvidence, signs)
        }
        return (mode(decidedBy: deciding), deciding, signs)
    }

    /// Every sign of public transport the ride shows, in the order they are weighed.
    func signs(distance: Double, duration: Double) -> [TransportReason] {
        var signs: [TransportReason] = []
        // One gap on a long ride is a recording's hole as well as a tunnel (a car app's lost minute on a motorway):
        // underground takes several, or a fifth of the ride.
        if undergroundGaps >= Self.undergroundGapsNeeded
            || (undergroundGaps > 0 && (undergroundSeconds ?? .infinity) >= Self.undergroundShare * duration)
        {
            signs.append(.gpsLostWhileMoving)
        }
        if let before = accuracyBeforeObserved, before <= Self.sharpAccuracyBefore, let coarse = coarseFixes,
            coarse >= Self.coarseFixesNeeded,
            Double(coarse) >= Self.coarseShare * Double(fixes + (rejectedFixes ?? 0))
        {
            signs.append(.coarsePositionsAboard)
        }
        if let reports = reportsWhileMoving, let still = stillReportsWhileMoving, still >= Self.stillReportsNeeded,
            Double(still) >= Self.stillShare * Double(reports)
        {
            signs.append(.stillWhileMoving)
        }
        if railSpeedSeconds >= Self.railSpeedDuration { signs.append(.railSpeed) }
        if stationStops >= Self.minimumStationStops { signs.append(.stationStops) }
        if stepsWhileMoving >= Self.stepsWhileMovingThreshold { signs.append(.stepsWhileMoving) }
        if let wait = boardingWaitObserved, wait >= Self.boardingWait { signs.append(.boardedAfterWaiting) }
        if let away = distanceFromCarObserved, away >= Self.awayFromCarDistance { signs.append(.boardedAwayFromCar) }
        let stops = dwellStops + otherStops
        if dwellStops >= Self.minimumDwellStops,
            Double(dwellStops) / (distance / 1_000) >= Self.dwellStopsPerKilometre,
            Double(dwellStops) >= Self.dwellShare * Double(stops),
            sustainedTopSpeed < Self.urbanTopSpeed
        {
            signs.append(.regularDwellStops)
        }
        return signs
    }

    /// What a sign says the ride was taken in: a passenger's signs say rail above urban speeds.
    private func mode(decidedBy sign: TransportReason) -> TransportMode {
        switch sign {
        case .gpsLostWhileMoving, .coarsePositionsAboard, .stillWhileMoving, .railSpeed, .stationStops: .rail
        case .stepsWhileMoving, .boardedAfterWaiting, .boardedAwayFromCar:
            sustainedTopSpeed >= Self.urbanTopSpeed ? .rail : .bus
        case .regularDwellStops: .bus
        case .noTransitEvidence, .tooShort, .notClassified: .car
        }
    }
}
