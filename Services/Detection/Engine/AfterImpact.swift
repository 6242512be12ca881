import RoadSaveModel

/// What a device's records showed after a crash's first impact, gathered record by record up to the end of the
/// follow-up's watch (`until`, set when the crash is sent for evaluation): the evidence of `crashFollowUp`. The
/// records counted are exactly those with `since` < t < `until`.
struct AfterImpact: Sendable, Equatable, Codable {
    /// The first impact.
    let since: Double
    /// The end of the watch; nil while the crash is still waiting for its decision (the watch then runs on).
    var until: Double?
    /// The position distances are measured from: the crash position's fix (the last before the impact within
    /// `crashPositionWindow`, else the first after it).
    var anchor: TimedPosition?
    /// Records other than impacts, the time of the last, steps counted and whether walking or running was reported.
    var records = 0
    var lastRecordAt: Double?
    var steps = 0
    var walkingReported = false
    /// The farthest fix from the anchor, the last fix, and the speed held over two fixes after the impact settled.
    var farthest: Double?
    var lastPosition: TimedPosition?
    var heldSpeed = HeldSpeed()

    init(since: Double, anchor: AcceptedFix?) {
        self.since = since
        self.anchor = anchor.map { TimedPosition(latitude: $0.latitude, longitude: $0.longitude, time: $0.t) }
    }

    /// Whether a record at `t` is inside the watch: after the impact and before its end, both excluded. A record at
    /// `until` itself is never counted: the follow-up is due at `until`, and time reaching a deadline fires it before
    /// a record of the same time is applied (`DeviceSession.handle`), while a verdict that comes later finds that
    /// record applied already. Excluding it makes the count a function of event time alone, whatever order the
    /// verdict, ticks, watermarks and records arrive in.
    func watches(_ t: Double) -> Bool { t > since && t < (until ?? .infinity) }

    /// One record after the impact: `fix` when it was an accepted location, `newSteps` counted from it,
    /// `activity` when it reported one.
    mutating func observe(
        at t: Double, fix: AcceptedFix?, newSteps: Int, activity: ActivityObservation?,
        settings: DetectionSettings
    ) {
        guard watches(t) else { return }
        records += 1
        lastRecordAt = t
        steps += newSteps
        if let activity, activity.activity == .walking || activity.activity == .running,
            activity.confidence >= .medium
        {
            walkingReported = true
        }
        guard let fix else { return }
        let position = TimedPosition(latitude: fix.latitude, longitude: fix.longitude, time: fix.t)
        if anchor == nil, fix.t - since <= settings.crashPositionWindow { anchor = position }
        if let anchor {
            let distance = Geo.distance(anchor.latitude, anchor.longitude, fix.latitude, fix.longitude)
            farthest = max(farthest ?? distance, distance)
        }
        lastPosition = position
        if fix.t - since >= settings.crashSettleTime { heldSpeed.add(fix.speed) }
    }

    /// The outcome the evidence gives (docs/detection.md "Crash alerts"): nothing received is `deviceSilent`; a vehicle's speed
    /// (`startSpeed`) held over two fixes and `crashFollowUpMovedDistance` from the crash is `vehicleMovedOn`;
    /// `crashFollowUpWalkingSteps` steps or a walking or running report (medium or high) is `personWalking`; else `stationary`.
    func outcome(settings: DetectionSettings) -> CrashFollowUpOutcome {
        guard records > 0 else { return .deviceSilent }
        if let held = heldSpeed.maximum, held >= settings.startSpeed,
            let farthest, farthest >= settings.crashFollowUpMovedDistance
        {
            return .vehicleMovedOn
        }
        if steps >= settings.crashFollowUpWalkingSteps || walkingReported { return .personWalking }
        return .stationary
    }

    /// The follow-up of the crash `crashID`, reported with `confidence`, as the evidence stands.
    func followUp(
        crashID: String, confidence: CrashConfidence, isTest: Bool,
        settings: DetectionSettings
    ) -> CrashFollowUpInfo {
        let end = until ?? lastRecordAt ?? since
        let known = lastPosition ?? anchor
        return CrashFollowUpInfo(
            crashID: crashID, confidence: confidence, detectedAt: since, observedUntil: end,
            outcome: outcome(settings: settings), isTest: isTest, records: records,
            secondsOfData: (lastRecordAt ?? since) - since, distanceMoved: farthest, steps: steps,
            maxSpeedAfter: heldSpeed.maximum, latitude: known?.latitude, longitude: known?.longitude)
    }
}
