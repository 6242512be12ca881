// One simulated device: the true state of its owner (position, heading, speed, what they are doing) advanced in
// 0.1 s ticks, and the phone's sensors observing it: GPS at 1 Hz, the activity classifier once a second, the
// pedometer every 2–5 s. Scenario scripts (Scenarios.swift) drive it through phases; the travel code (Travel.swift)
// moves it along routes.

import GatewayKit

struct DeviceSim {
    static let tickSeconds = 0.1
    static let ticksPerSecond = 10

    let index: Int
    let frame: LocalFrame
    let startMs: Int64
    let endMs: Int64
    var rng: RandomSource
    private(set) var tick = 0
    /// True position, metres from where the device started.
    var position = Point(east: 0, north: 0)
    /// True heading, radians clockwise from north.
    var heading: Double
    /// True ground speed, m/s.
    var speed = 0.0
    /// Steps per second being taken right now (0 unless on foot).
    var stepRate = 0.0
    private(set) var context = MotionContext.still
    var gps: GPSReceiver
    private var classifier: ActivityClassifier?
    private var pedometer: Pedometer?
    private var records: [SimRecord] = []
    var truth: ScenarioTruth
    /// How its owner drives (the truth names it too).
    var drivingStyle: DrivingStyle { DrivingStyle(rawValue: truth.drivingStyle) ?? .normal }
    /// How the phone sits in the car and in the hand (fixed per device: people keep their habits).
    let vehicleMount: Rotation
    let hand: Rotation
    /// Which tick of each second the classifier reports on: its clock is not the GPS clock.
    private let classifierPhase: Int

    init(index: Int, frame: LocalFrame, startMs: Int64, endMs: Int64, rng: RandomSource, truth: ScenarioTruth) {
        self.index = index
        self.frame = frame
        self.startMs = startMs
        self.endMs = endMs
        self.rng = rng
        self.truth = truth
        heading = self.rng.uniform(0, 2 * Double.pi)
        gps = GPSReceiver(quality: self.rng.uniform(0.7, 1.3))
        vehicleMount = Rotation.vehicleMount(rng: &self.rng)
        hand = Rotation.hand(rng: &self.rng)
        classifierPhase = self.rng.int(1...9)
        classifier = truth.activityAvailable ? ActivityClassifier() : nil
        pedometer = truth.pedometerAvailable ? Pedometer(start: Double(startMs) / 1000) : nil
    }

    var nowMs: Int64 { startMs + Int64(tick) * 100 }
    var now: Double { Double(nowMs) / 1000 }
    var timeUp: Bool { nowMs >= endMs }
    /// Seconds left until the end of the simulation.
    var remaining: Double { Double(max(0, endMs - nowMs)) / 1000 }
    var coordinate: Coordinate { frame.coordinate(of: position) }

    /// The stream opens with the device's capabilities, a first fix and the classifier's current activity.
    mutating func begin() {
        records.append(
            SimRecord(
                tMs: nowMs,
                body: .capabilities(
                    activityAvailable: classifier != nil,
                    pedometerAvailable: pedometer != nil)))
        emitFix()
        evaluateClassifier()
    }

    mutating func setContext(_ newContext: MotionContext) {
        guard newContext != context else { return }
        context = newContext
        let t = now
        classifier?.contextChanged(to: newContext, at: t, rng: &rng)
    }

    /// Ends one tick: the caller has already moved the true state; the sensors observe it.
    mutating func endTick() {
        tick += 1
        if stepRate > 0 { pedometer?.add(stepRate * Self.tickSeconds) }
        let t = now
        if let steps = pedometer?.poll(at: t, rng: &rng) {
            records.append(SimRecord(tMs: nowMs, body: .steps(steps)))
        }
        let phase = tick % Self.ticksPerSecond
        if phase == 0 { emitFix() }
        if phase == classifierPhase { evaluateClassifier() }
    }

    /// Stays put for `seconds` (or until the end) in `context`.
    mutating func hold(_ seconds: Double, _ context: MotionContext) {
        let ticks = Int((min(seconds, remaining) * Double(Self.ticksPerSecond)).rounded())
        speed = 0
        stepRate = 0
        setContext(context)
        for _ in 0..<ticks where !timeUp {
            endTick()
        }
    }

    /// A pedometer miscount (the phone jolted in a car): one extra step.
    mutating func spuriousStep() {
        pedometer?.add(1)
    }

    /// Adds impact records cut by the gateway trigger from a trace whose times are relative to now.
    @discardableResult
    mutating func emitImpacts(_ impacts: [TriggeredImpact], cause: (Int) -> String) -> [ImpactTruth] {
        var emitted: [ImpactTruth] = []
        for (i, impact) in impacts.enumerated() {
            let ms = nowMs + Int64((impact.t * 1000).rounded())
            records.append(SimRecord(tMs: ms, body: .impact(impact)))
            // Rounded as written, so the truth matches the records exactly.
            let entry = ImpactTruth(
                t: seconds(ms), peakG: (impact.peakG * 1000).rounded() / 1000,
                durationMs: impact.durationMs.rounded(), cause: cause(i))
            emitted.append(entry)
            truth.impacts.append(entry)
        }
        return emitted
    }

    private mutating func emitFix() {
        let fix = gps.fix(position: position, frame: frame, speed: speed, heading: heading, rng: &rng)
        records.append(
            SimRecord(
                tMs: nowMs,
                body: .location(
                    latitude: fix.coordinate.latitude,
                    longitude: fix.coordinate.longitude,
                    speed: fix.speed, course: fix.course, hacc: fix.hacc)))
        switch fix.quality {
        case .good: break
        case .outlier: truth.gpsOutliers.append(now)
        case .invalid: truth.invalidFixes.append(now)
        }
    }

    private mutating func evaluateClassifier() {
        let t = now
        guard let reports = classifier?.evaluate(at: t, rng: &rng) else { return }
        for report in reports {
            records.append(SimRecord(tMs: nowMs, body: .activity(report)))
        }
    }

    /// The device's records in time order (records at the same time keep the order they were made in) and its truth.
    mutating func finish() -> (records: [SimRecord], truth: ScenarioTruth) {
        var ordered = records
        if !zip(records, records.dropFirst()).allSatisfy({ $0.tMs <= $1.tMs }) {
            let order = records.indices.sorted { (records[$0].tMs, $0) < (records[$1].tMs, $1) }
            ordered = order.map { records[$0] }
        }
        truth.firstRecordT = seconds(ordered.first?.tMs ?? startMs)
        truth.lastRecordT = seconds(ordered.last?.tMs ?? startMs)
        truth.totalSteps = Int(pedometer?.count ?? 0)
        return (ordered, truth)
    }
}
