import Foundation
import RoadSaveModel

/// How a trip is being driven, fix by fix (issue 31): hard braking and acceleration from GPS speed, sharp cornering
/// from course and speed, excessive speed, and the acceleration's spread, judged at the trip's end (`judge`). Pure:
/// the fixes' own times only. GPS speed is noisy, so each fix's speed is the median of it and its neighbours (one
/// spiking fix moves nothing), pairs of fixes too close or too far apart are not judged, and a pair implying more
/// than a car can do is a glitch that breaks whatever run it falls in.
struct DrivingBehaviour: Sendable, Equatable, Codable {
    /// A usable fix: its time, place, speed and course.
    struct Point: Sendable, Equatable, Codable {
        var t: Double
        var latitude: Double
        var longitude: Double
        var speed: Double
        var course: Double?
    }

    /// Consecutive pairs accelerating the same way: a brake or a speed-up in the making.
    struct Run: Sendable, Equatable, Codable {
        var start: Point
        var end: Point
        var peak: Double
        var pairs: Int
        var turned = 0.0
    }

    /// The last two usable fixes, the newer waiting for its next neighbour to take the median of.
    private var older: Point?
    private var newer: Point?
    /// The last fix judged (its speed the median).
    private var previous: Point?
    private var longitudinal: Run?
    private var cornering: Run?
    private var speeding: Run?
    private(set) var events: [DrivingEvent] = []
    /// Seconds covered by usable pairs, and the time-weighted sums of squared acceleration over them.
    private(set) var usableSeconds = 0.0
    private var longitudinalSquares = 0.0
    private var lateralSquares = 0.0
    private var lateralSeconds = 0.0

    mutating func add(_ fix: AcceptedFix, settings: BehaviourSettings) {
        guard fix.accuracy <= settings.maximumAccuracy, let speed = fix.speed, speed >= 0 else { return }
        // A repeated or earlier time says nothing about how the speed changed.
        if let newer, fix.t <= newer.t { return }
        let point = Point(t: fix.t, latitude: fix.latitude, longitude: fix.longitude, speed: speed, course: fix.course)
        defer {
            older = newer
            newer = point
        }
        guard let older, var middle = newer else { return }
        // The median of three, without sorting an array per fix.
        middle.speed = max(min(older.speed, middle.speed), min(max(older.speed, middle.speed), point.speed))
        take(middle, settings: settings)
    }

    /// A fix with its median speed: the pair it ends with the one before is judged.
    private mutating func take(_ point: Point, settings: BehaviourSettings) {
        guard let previous else {
            self.previous = point
            return
        }
        let elapsed = point.t - previous.t
        if elapsed < settings.minimumPairInterval { return }
        guard elapsed <= settings.maximumPairInterval else {
            finishRuns(settings: settings)
            self.previous = point
            return
        }
        let acceleration = (point.speed - previous.speed) / elapsed
        let meanSpeed = (point.speed + previous.speed) / 2
        // Courses of a car nearly at rest swing anyhow: turns count from the speed gate up.
        let turn =
            meanSpeed < settings.longitudinalSpeedGate
            ? nil
            : previous.course.flatMap { from in point.course.map { Self.turn(from: from, to: $0) } }
        let lateral = turn.map { meanSpeed * ($0 * .pi / 180) / elapsed }
        if abs(acceleration) > settings.glitchAcceleration || abs(lateral ?? 0) > settings.glitchAcceleration {
            finishRuns(settings: settings)
            self.previous = point
            return
        }
        usableSeconds += elapsed
        longitudinalSquares += acceleration * acceleration * elapsed
        if let lateral {
            lateralSquares += lateral * lateral * elapsed
            lateralSeconds += elapsed
        }
        noteLongitudinal(acceleration, from: previous, to: point, settings: settings)
        noteCornering(lateral, turn: turn ?? 0, from: previous, to: point, settings: settings)
        noteSpeed(point, settings: settings)
        self.previous = point
    }

    /// Degrees turned from one course to the next, the short way round (359° to 1° is 2°).
    static func turn(from: Double, to: Double) -> Double {
        var difference = (to - from).truncatingRemainder(dividingBy: 360)
        if difference > 180 { difference -= 360 }
        if difference < -180 { difference += 360 }
        return difference
    }

    private mutating func noteLongitudinal(_ acceleration: Double, from: Point, to: Point, settings: BehaviourSettings)
    {
        // Changed where it is: a run is two points and more, not worth a copy per fix.
        if let peak = longitudinal?.peak, (peak < 0) == (acceleration < 0), acceleration != 0 {
            longitudinal!.end = to
            longitudinal!.pairs += 1
            longitudinal!.peak = acceleration < 0 ? min(peak, acceleration) : max(peak, acceleration)
            return
        }
        finishLongitudinal(settings: settings)
        if acceleration != 0 { longitudinal = Run(start: from, end: to, peak: acceleration, pairs: 1) }
    }

    private mutating func noteCornering(
        _ lateral: Double?, turn: Double, from: Point, to: Point,
        settings: BehaviourSettings
    ) {
        guard let lateral, abs(lateral) >= settings.corneringThreshold,
            min(from.speed, to.speed) >= settings.corneringSpeedGate
        else {
            finishCornering(settings: settings)
            return
        }
        if let peak = cornering?.peak, (peak < 0) == (lateral < 0) {
            cornering!.end = to
            cornering!.pairs += 1
            cornering!.turned += turn
            cornering!.peak = lateral < 0 ? min(peak, lateral) : max(peak, lateral)
            return
        }
        finishCornering(settings: settings)
        cornering = Run(start: from, end: to, peak: lateral, pairs: 1, turned: turn)
    }

    private mutating func noteSpeed(_ point: Point, settings: BehaviourSettings) {
        guard let limit = settings.speedLimit else { return }
        if point.speed > limit {
            if let peak = speeding?.peak {
                speeding!.end = point
                speeding!.pairs += 1
                speeding!.peak = max(peak, point.speed)
            } else {
                speeding = Run(start: point, end: point, peak: point.speed, pairs: 1)
            }
        } else if let end = speeding?.end.t, point.t - end > settings.speedingMerge {
            finishSpeeding(settings: settings)
        }
    }

    private mutating func finishRuns(settings: BehaviourSettings) {
        finishLongitudinal(settings: settings)
        finishCornering(settings: settings)
    }

    private mutating func finishLongitudinal(settings: BehaviourSettings) {
        guard let run = longitudinal else { return }
        longitudinal = nil
        guard run.pairs >= 2, abs(run.end.speed - run.start.speed) >= settings.minimumSpeedChange else { return }
        if run.peak < 0 {
            guard run.peak <= settings.brakingThreshold, run.start.speed >= settings.longitudinalSpeedGate else {
                return
            }
            record(.hardBraking, severe: run.peak <= settings.severeBraking, run, settings: settings)
        } else {
            guard run.peak >= settings.accelerationThreshold, run.end.speed >= settings.longitudinalSpeedGate else {
                return
            }
            record(.hardAcceleration, severe: run.peak >= settings.severeAcceleration, run, settings: settings)
        }
    }

    private mutating func finishCornering(settings: BehaviourSettings) {
        guard let run = cornering else { return }
        cornering = nil
        guard run.pairs >= 2, abs(run.turned) >= settings.minimumTurn else { return }
        record(.sharpCornering, severe: abs(run.peak) >= settings.severeCornering, run, settings: settings)
    }

    private mutating func finishSpeeding(settings: BehaviourSettings) {
        guard let run = speeding, let limit = settings.speedLimit else { return }
        speeding = nil
        guard run.end.t - run.start.t >= settings.speedingDuration else { return }
        record(.excessiveSpeed, severe: run.peak >= limit + settings.severeSpeedingMargin, run, settings: settings)
    }

    /// One event, or the one before of its kind made longer when this one follows it closely (one manoeuvre).
    private mutating func record(_ kind: DrivingEventKind, severe: Bool, _ run: Run, settings: BehaviourSettings) {
        let event = DrivingEvent(
            kind: kind, severity: severe ? .severe : .harsh, start: run.start.t, end: run.end.t,
            peak: run.peak, startSpeed: run.start.speed, endSpeed: run.end.speed,
            latitude: run.start.latitude, longitude: run.start.longitude, fixes: run.pairs + 1)
        if let index = events.lastIndex(where: { $0.kind == kind }),
            event.start - events[index].end <= settings.sameEventWindow
        {
            var merged = events[index]
            merged.end = event.end
            merged.endSpeed = event.endSpeed
            merged.fixes += event.fixes
            if abs(event.peak) > abs(merged.peak) { merged.peak = event.peak }
            if event.severity == .severe { merged.severity = .severe }
            events[index] = merged
        } else {
            events.append(event)
        }
    }

    /// The verdict on the trip that ended: `mode` what it was judged to be taken in, `crashed` whether a crash was
    /// detected in it.
    func judge(
        tripID: String, endDate: Double, distance: Double, duration: Double, mode: TransportMode, crashed: Bool,
        settings: BehaviourSettings
    ) -> TripBehaviour {
        var finished = self
        finished.finishRuns(settings: settings)
        finished.finishSpeeding(settings: settings)
        let unscored: UnscoredReason? =
            if crashed { .crash } else if mode == .bus || mode == .rail {
                .notCar
            } else if mode == .unknown || distance < settings.minimumDistance || duration < settings.minimumDuration {
                .tooShort
            } else if finished.usableSeconds < settings.minimumUsableShare * duration { .sparseGPS } else { nil }
        guard unscored == nil else {
            return TripBehaviour(
                tripID: tripID, endDate: endDate, unscored: unscored, events: finished.events,
                distanceMetres: distance)
        }
        // Severe events weigh twice; the rate is taken over the floor distance at least.
        let weighted = finished.events.reduce(0.0) { $0 + ($1.severity == .severe ? 2 : 1) }
        let rate = weighted / max(distance, settings.scoreFloorDistance) * 100_000
        let longitudinalRMS = (finished.longitudinalSquares / finished.usableSeconds).squareRoot()
        let lateralRMS =
            finished.lateralSeconds > 0 ? (finished.lateralSquares / finished.lateralSeconds).squareRoot() : 0
        // Each subscore halves at its setting; the score is their product, so either can only lower it.
        let eventsScore = 100 / (1 + rate / settings.eventsHalvingRate)
        let spread =
            (longitudinalRMS * longitudinalRMS + settings.lateralWeight * lateralRMS * lateralRMS)
            / (settings.smoothnessHalvingRMS * settings.smoothnessHalvingRMS)
        let smoothnessScore = 100 / (1 + spread)
        return TripBehaviour(
            tripID: tripID, endDate: endDate, events: finished.events, distanceMetres: distance,
            eventsPer100Kilometres: rate, longitudinalRMS: longitudinalRMS, lateralRMS: lateralRMS,
            eventsScore: eventsScore, smoothnessScore: smoothnessScore,
            score: eventsScore * smoothnessScore / 100)
    }
}
