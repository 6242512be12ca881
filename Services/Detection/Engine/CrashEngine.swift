import RoadSaveModel

/// The crash state machine of one device: impacts are gathered into one suspected crash, screened on the
/// features around them once the vehicle has had time to stop, and the survivors go to the platform. An event is
/// only emitted when the platform's evaluation has ended.
struct CrashEngine: Sendable, Codable {
    /// Impacts of one event, waiting until the decision time to see what the vehicle did afterwards.
    struct ImpactCluster: Sendable, Equatable, Codable {
        var firstImpact: Double
        var firstImpactSamples: [ImpactSample]
        var strongest: ImpactObservation
        var count: Int
        /// What was known about the device when the first impact arrived.
        var activityMode: ActivityContext.Mode
        var tripInProgress: Bool
        var tripID: String?
        /// The records since the first impact, for the follow-up; nil for an impact that came too late to watch
        /// what followed it (and in clusters kept from before follow-ups).
        var evidence: AfterImpact?

        init(
            firstImpact: Double, firstImpactSamples: [ImpactSample], strongest: ImpactObservation, count: Int,
            activityMode: ActivityContext.Mode, tripInProgress: Bool, tripID: String? = nil,
            evidence: AfterImpact? = nil
        ) {
            self.firstImpact = firstImpact
            self.firstImpactSamples = firstImpactSamples
            self.strongest = strongest
            self.count = count
            self.activityMode = activityMode
            self.tripInProgress = tripInProgress
            self.tripID = tripID
            self.evidence = evidence
        }

        private enum CodingKeys: String, CodingKey {
            case firstImpact, firstImpactSamples, strongest, count, activityMode, tripInProgress, tripID, evidence
        }

        // The first impact is usually the strongest too: its samples are then written once, not twice.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(firstImpact, forKey: .firstImpact)
            if firstImpactSamples != strongest.samples {
                try container.encode(firstImpactSamples, forKey: .firstImpactSamples)
            }
            try container.encode(strongest, forKey: .strongest)
            try container.encode(count, forKey: .count)
            try container.encode(activityMode, forKey: .activityMode)
            try container.encode(tripInProgress, forKey: .tripInProgress)
            try container.encodeIfPresent(tripID, forKey: .tripID)
            try container.encodeIfPresent(evidence, forKey: .evidence)
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            firstImpact = try container.decode(Double.self, forKey: .firstImpact)
            strongest = try container.decode(ImpactObservation.self, forKey: .strongest)
            firstImpactSamples =
                try container.decodeIfPresent([ImpactSample].self, forKey: .firstImpactSamples)
                ?? strongest.samples
            count = try container.decode(Int.self, forKey: .count)
            activityMode = try container.decode(ActivityContext.Mode.self, forKey: .activityMode)
            tripInProgress = try container.decode(Bool.self, forKey: .tripInProgress)
            tripID = try container.decodeIfPresent(String.self, forKey: .tripID)
            evidence = try container.decodeIfPresent(AfterImpact.self, forKey: .evidence)
        }
    }

    let device: DeviceID
    private(set) var pending: [ImpactCluster] = []
    /// Candidates sent for evaluation, in the order sent (a list, not a dictionary, so a checkpoint's bytes never
    /// depend on hash order; it holds a handful at most).
    private(set) var awaitingVerdict: [CrashCandidate] = []
    /// First-impact times of recent crashes, so that later impacts of the same crash don't raise another.
    private var recentCrashes: [Double] = []
    private var testCrashCount = 0
    /// Crashes sent for evaluation whose follow-up is still to come, in the order sent.
    private(set) var followUps: [CrashFollowUpWatch] = []

    init(device: DeviceID) {
        self.device = device
    }

    private enum CodingKeys: String, CodingKey {
        case device, pending, awaitingVerdict, recentCrashes, testCrashCount, followUps
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        device = try container.decode(DeviceID.self, forKey: .device)
        pending = try container.decode([ImpactCluster].self, forKey: .pending)
        awaitingVerdict = try container.decode([CrashCandidate].self, forKey: .awaitingVerdict)
        recentCrashes = try container.decode([Double].self, forKey: .recentCrashes)
        testCrashCount = try container.decode(Int.self, forKey: .testCrashCount)
        // Checkpoints from before follow-ups have none.
        followUps = try container.decodeIfPresent([CrashFollowUpWatch].self, forKey: .followUps) ?? []
    }

    /// A decision or a follow-up has a time to wait for.
    var hasPending: Bool { !pending.isEmpty || followUps.contains { $0.confidence != nil } }

    /// Records are being gathered for a follow-up.
    var isWatching: Bool { !pending.isEmpty || !followUps.isEmpty }

    /// The first impact of the oldest cluster waiting for its decision.
    var oldestPendingImpact: Double? { pending.lazy.map(\.firstImpact).min() }

    func nextDeadline(settings: DetectionSettings) -> Double? {
        let decision = pending.map { decisionTime(of: $0, settings: settings) }.min()
        guard let followUp = followUps.compactMap(\.due).min() else { return decision }
        return decision.map { min($0, followUp) } ?? followUp
    }

    func decisionTime(of cluster: ImpactCluster, settings: DetectionSettings) -> Double {
        cluster.firstImpact + settings.crashDecisionDelay
    }

    /// `watchAfter`: the records after it are still to come, so its follow-up can gather them (not for an impact
    /// that came after later records).
    mutating func impact(_ observation: ImpactObservation, at t: Double, context: CrashContext, watchAfter: Bool = true)
    {
        let settings = context.settings
        if let index = pending.firstIndex(where: {
            t - $0.firstImpact <= settings.crashClusterWindow && t >= $0.firstImpact
        }) {
            pending[index].count += 1
            if observation.peakG > pending[index].strongest.peakG { pending[index].strongest = observation }
            return
        }
        if recentCrashes.contains(where: { t >= $0 && t - $0 <= settings.crashClusterWindow }) { return }
        let anchor = Array(context.gps.fixes(from: t - settings.crashPositionWindow, to: t)).last
        pending.append(
            ImpactCluster(
                firstImpact: t, firstImpactSamples: observation.samples, strongest: observation,
                count: 1, activityMode: context.activity.mode,
                tripInProgress: context.tripInProgress, tripID: context.tripID,
                evidence: watchAfter ? AfterImpact(since: t, anchor: anchor) : nil))
    }

    /// One record of the device (impacts aside), for the follow-ups gathering what came after their impacts.
    mutating func observe(
        at t: Double, fix: AcceptedFix?, newSteps: Int, activity: ActivityObservation?,
        settings: DetectionSettings
    ) {
        for index in pending.indices {
            pending[index].evidence?.observe(
                at: t, fix: fix, newSteps: newSteps, activity: activity, settings: settings)
        }
        for index in followUps.indices {
            followUps[index].evidence.observe(
                at: t, fix: fix, newSteps: newSteps, activity: activity, settings: settings)
        }
    }

    /// Monitoring stops at `t`: no record will come, so every follow-up watches until then at the latest.
    mutating func closeFollowUps(at t: Double) {
        for index in followUps.indices {
            followUps[index].evidence.until = min(followUps[index].evidence.until ?? t, t)
        }
    }

    /// Decides the clusters whose decision time has come.
    mutating func advance(to now: Double, context: CrashContext) -> [DetectionAction] {
        var actions: [DetectionAction] = []
        let settings = context.settings
        while let index = pending.firstIndex(where: { decisionTime(of: $0, settings: settings) <= now }) {
            let cluster = pending.remove(at: index)
            actions.append(decide(cluster, context: context))
        }
        actions += dueFollowUps(at: now, settings: settings)
        // An emptied list gives its buffer back: `hasPending`, asked twice a record, then reads the shared empty
        // array (always in cache) instead of a buffer of this device's, and an idle device holds none.
        if pending.isEmpty { pending = [] }
        return actions
    }

    /// Decides every pending cluster now, with what is known (monitoring stops).
    mutating func decideAll(context: CrashContext) -> [DetectionAction] {
        let clusters = pending
        pending.removeAll()
        return clusters.map { decide($0, context: context) }
    }

    /// The follow-ups of reported crashes whose watch has ended by `now`, in the order their crashes were sent.
    private mutating func dueFollowUps(at now: Double, settings: DetectionSettings) -> [DetectionAction] {
        guard followUps.contains(where: { ($0.due ?? .infinity) <= now }) else { return [] }
        var actions: [DetectionAction] = []
        followUps.removeAll { watch in
            guard let due = watch.due, due <= now, let confidence = watch.confidence else { return false }
            let info = watch.evidence.followUp(
                crashID: watch.crashID, confidence: confidence, isTest: watch.isTest,
                settings: settings)
            actions.append(.emit(RoadSaveEvent(device: device, body: .crashFollowUp(info))))
            return true
        }
        return actions
    }

    /// `followUp`: gather what follows and send `crashFollowUp` for it as for a real crash (test crashes have none
    /// unless asked).
    mutating func raiseTestCrash(at t: Double, context: CrashContext, followUp: Bool = false) -> DetectionAction {
        testCrashCount += 1
        let settings = context.settings
        let position = context.gps.last
        let readings = PositionReadings(position: position, impact: t, context: context)
        // A test crash runs the same evaluation path with the features of an unmistakable crash, so that every
        // stage from the evaluator to the alerting systems is exercised; `isTest` tells them not to act.
        let candidate = CrashCandidate(
            crashID: StableID.make("test-crash", device.app, device.user, millis(t), String(testCrashCount)),
            app: device.app, user: device.user, time: t,
            latitude: position?.latitude, longitude: position?.longitude,
            positionAccuracy: position?.accuracy, speedBefore: 15, speedAfter: 0, peakG: 45, durationMs: 90,
            impactCount: 1, activity: ActivityContext.Mode.inVehicle.rawValue, tripInProgress: context.tripInProgress,
            isTest: true, samples: [], deltaV: 15, heading: readings.heading, positionTime: position?.t,
            positionTrusted: readings.trusted, recentPositions: readings.recent, tripID: context.tripID)
        awaitVerdict(candidate)
        if followUp, settings.crashFollowUpDelay > 0 {
            var evidence = AfterImpact(since: t, anchor: position)
            evidence.until = t + settings.crashFollowUpDelay
            watch(candidate, evidence: evidence)
        }
        return .evaluateCrash(candidate)
    }

    private mutating func watch(_ candidate: CrashCandidate, evidence: AfterImpact) {
        followUps.removeAll { $0.crashID == candidate.crashID }
        followUps.append(CrashFollowUpWatch(crashID: candidate.crashID, isTest: candidate.isTest, evidence: evidence))
    }

    private mutating func awaitVerdict(_ candidate: CrashCandidate) {
        awaitingVerdict.removeAll { $0.crashID == candidate.crashID }
        awaitingVerdict.append(candidate)
    }

    /// The platform's answer (or its absence) for a candidate: the crash event (and its follow-up, when the watch
    /// ended by `now`, the session's time), or a dismissal for `none`.
    mutating func evaluated(
        crashID: String, outcome: CrashEvaluationOutcome, now: Double?,
        settings: DetectionSettings
    ) -> [DetectionAction] {
        guard let index = awaitingVerdict.firstIndex(where: { $0.crashID == crashID }) else { return [] }
        let candidate = awaitingVerdict.remove(at: index)
        let confidence: CrashConfidence
        switch outcome {
        case .unreachable:
            confidence = .unknown
        case .verdict(let verdict):
            guard let fromVerdict = CrashConfidence(verdict: verdict) else {
                followUps.removeAll { $0.crashID == crashID }
                return [.crashDismissed(candidate, .platformVerdictNone)]
            }
            confidence = fromVerdict
        }
        let info = CrashInfo(
            crashID: candidate.crashID, confidence: confidence, detectedAt: candidate.time,
            latitude: candidate.latitude, longitude: candidate.longitude, isTest: candidate.isTest,
            details: candidate.details)
        var actions: [DetectionAction] = [.emit(RoadSaveEvent(device: device, body: .crashDetected(info)))]
        if let watch = followUps.firstIndex(where: { $0.crashID == crashID }) {
            followUps[watch].confidence = confidence
            if let now { actions += dueFollowUps(at: now, settings: settings) }
        }
        return actions
    }

    // MARK: Screening

    private mutating func decide(_ cluster: ImpactCluster, context: CrashContext) -> DetectionAction {
        let settings = context.settings
        let t0 = cluster.firstImpact
        let before = context.gps.fixes(from: t0 - settings.crashSpeedWindowBefore, to: t0).compactMap(\.speed)
        var after = context.gps.fixes(from: t0 + settings.crashSettleTime, to: t0 + settings.crashDecisionDelay)
            .compactMap(\.speed)
        let speedBefore = before.max()
        let speedAfter = median(sorting: &after)
        let nearby =
            Array(context.gps.fixes(from: t0 - settings.crashPositionWindow, to: t0)).last
            ?? Array(context.gps.fixes(from: t0, to: t0 + settings.crashPositionWindow)).first
        // Without a fix near the impact (a tunnel), the last known position is still the best place to send help.
        let position = nearby ?? context.gps.last
        let readings = PositionReadings(position: position, impact: t0, context: context)
        let inVehicle = cluster.tripInProgress || cluster.activityMode == .inVehicle
        let candidate = CrashCandidate(
            crashID: StableID.make("crash", device.app, device.user, millis(t0)),
            app: device.app, user: device.user, time: t0,
            latitude: position?.latitude, longitude: position?.longitude,
            positionAccuracy: position?.accuracy, speedBefore: speedBefore, speedAfter: speedAfter,
            peakG: cluster.strongest.peakG, durationMs: cluster.strongest.durationMs, impactCount: cluster.count,
            activity: cluster.activityMode.rawValue, tripInProgress: cluster.tripInProgress, isTest: false,
            samples: cluster.strongest.samples.map { [$0.dt, $0.x, $0.y, $0.z] },
            deltaV: ImpactReadings.deltaV(
                samples: cluster.strongest.samples, speedBefore: speedBefore,
                speedAfter: speedAfter),
            heading: readings.heading, positionTime: position?.t, positionTrusted: readings.trusted,
            recentPositions: readings.recent, tripID: cluster.tripID)

        if let reason = falsePositiveReason(
            cluster, speedBefore: speedBefore, speedAfter: speedAfter,
            hasPosition: nearby != nil, inVehicle: inVehicle, settings: settings)
        {
            return .crashDismissed(candidate, reason)
        }
        recentCrashes.removeAll { t0 - $0 > settings.crashClusterWindow }
        recentCrashes.append(t0)
        awaitVerdict(candidate)
        if var evidence = cluster.evidence, settings.crashFollowUpDelay > 0 {
            evidence.until = decisionTime(of: cluster, settings: settings) + settings.crashFollowUpDelay
            watch(candidate, evidence: evidence)
        }
        return .evaluateCrash(candidate)
    }

    private func falsePositiveReason(
        _ cluster: ImpactCluster, speedBefore: Double?, speedAfter: Double?,
        hasPosition: Bool, inVehicle: Bool,
        settings: DetectionSettings
    ) -> FalsePositiveReason? {
        if cluster.strongest.peakG < settings.crashMinimumPeakG { return .weakImpact }
        if Self.hasFreeFall(before: cluster.firstImpactSamples, settings: settings) { return .freeFallBeforeImpact }
        if !cluster.tripInProgress, cluster.activityMode == .onFoot || cluster.activityMode == .cycling {
            return .notInVehicle
        }
        guard let speedBefore, hasPosition else {
            // Nothing shows speed or place; only the classifier can vouch for a vehicle.
            return inVehicle ? nil : .unusablePosition
        }
        if speedBefore < settings.crashMinimumSpeedBefore { return .tooSlowBeforeImpact }
        if let speedAfter, speedAfter >= settings.crashSpeedKeptAfter, speedAfter >= speedBefore / 2 {
            return .speedMaintainedAfterImpact
        }
        return nil
    }

    /// A dropped phone falls freely before it hits the ground: |a| near zero for a stretch in the second before
    /// the peak. A vehicle in a crash is decelerated, never weightless, before its impact.
    static func hasFreeFall(before samples: [ImpactSample], settings: DetectionSettings) -> Bool {
        var runStart: Double?
        var longest = 0.0
        for sample in samples where sample.dt < 0 {
            if sample.magnitude < settings.freeFallMaximumG {
                if runStart == nil { runStart = sample.dt }
                longest = max(longest, sample.dt - runStart!)
            } else {
                runStart = nil
            }
        }
        return longest >= settings.freeFallMinimumDuration
    }

}

/// What the crash engine reads from the rest of the session.
struct CrashContext {
    var sharedSettings: SessionSettings
    var settings: DetectionSettings { sharedSettings.wrappedValue }
    var activity: ActivityContext
    var gps: GPSTrack
    var tripInProgress: Bool
    var tripID: String?
}

func millis(_ t: Double) -> String { String(Int64((t * 1000).rounded())) }
