// The scenario scripts: one per device, a sequence of phases (stay, walk, drive, ride, cycle…). Phase lengths are
// drawn from realistic ranges and shrunk to fit the time left, so short simulations still tell a whole story; a phase
// cut off by the end of the simulation simply stops (the truth records what really happened).

import Foundation

enum Scenario: String, CaseIterable {
    case commute, walk, run, cycle, bus, parked, crash, phoneDrop, pothole, hardBrake, noPedometer, noActivity

    /// What `mix` cycles through: everything but crashes, which only `--crashes` or `--scenario crash` asks for.
    static let mixCycle: [Scenario] = allCases.filter { $0 != .crash }

    var activityAvailable: Bool { self != .noActivity }
    var pedometerAvailable: Bool { self != .noPedometer }
}

extension DeviceSim {
    /// `planned` seconds, shortened so that `reserve` seconds stay for what follows, but at least `minimum`.
    func fit(_ planned: Double, reserve: Double, minimum: Double = 20) -> Double {
        max(minimum, min(planned, remaining - reserve))
    }

    mutating func run(_ scenario: Scenario) {
        switch scenario {
        case .commute, .noPedometer, .noActivity:
            commute(bumps: 1...3, bumpPeakG: 2.5...4, bumpCause: "bump", hardBrakes: 0)
        case .pothole:
            commute(bumps: 4...8, bumpPeakG: 3...6, bumpCause: "pothole", hardBrakes: 0)
        case .hardBrake:
            commute(bumps: 0...1, bumpPeakG: 2.5...4, bumpCause: "bump", hardBrakes: rng.int(1...2))
        case .walk:
            stay(rng.uniform(20, 60))
            walk(fit(rng.uniform(900, 1800), reserve: 60, minimum: 60))
            stay(.infinity)
        case .run:
            stay(rng.uniform(20, 60))
            walk(fit(rng.uniform(60, 120), reserve: 600))
            walk(fit(rng.uniform(900, 1800), reserve: 300, minimum: 60), running: true)
            walk(fit(rng.uniform(120, 240), reserve: 30))
            stay(.infinity)
        case .cycle:
            stay(rng.uniform(20, 60))
            walk(fit(rng.uniform(30, 90), reserve: 600))
            stay(rng.uniform(10, 30), environment: .urban)
            cycle(fit(rng.uniform(900, 1800), reserve: 200, minimum: 60))
            stay(rng.uniform(10, 30), environment: .urban)
            walk(fit(rng.uniform(30, 90), reserve: 30))
            stay(.infinity)
        case .bus:
            stay(rng.uniform(20, 60))
            walk(fit(rng.uniform(120, 300), reserve: 900))
            stay(fit(rng.uniform(60, 300), reserve: 800), environment: .urban)
            rideBus(fit(rng.uniform(480, 1200), reserve: 300, minimum: 60))
            walk(fit(rng.uniform(120, 300), reserve: 30))
            stay(.infinity)
        case .parked:
            // A phone on a desk or in a parked car: indoor-grade fixes jittering around one spot.
            stay(.infinity)
        case .phoneDrop:
            stay(rng.uniform(20, 60))
            let seconds = fit(rng.uniform(900, 1500), reserve: 60, minimum: 60)
            let drops = (0..<rng.int(1...2)).map { _ in
                PlannedEvent(at: now + seconds * rng.uniform(0.15, 0.85), kind: .drop(standing: rng.chance(0.3)))
            }
            walk(seconds, events: drops)
            stay(.infinity)
        case .crash:
            crashDrive()
        }
    }

    /// Stay where you are: at home, at the desk, at the bus stop, in the parked car.
    mutating func stay(_ seconds: Double, _ context: MotionContext = .still, environment: GPSEnvironment = .indoor) {
        gps.environment = environment
        hold(seconds, context)
    }

    mutating func walk(_ seconds: Double, running: Bool = false, events: [PlannedEvent] = []) {
        let pace = running ? rng.uniform(2.5, 3.5) : rng.uniform(1.2, 1.6)
        let cadence = running ? rng.uniform(2.6, 3.0) : rng.uniform(1.7, 2.0)
        var route = RouteGenerator(style: running ? .running : .walking, pace: pace, finishAfter: now + seconds)
        gps.environment = .urban
        _ = travel(
            running ? .running : .walking, profile: running ? .runner : .walker, route: &route, events: events,
            pace: pace, cadence: cadence)
    }

    mutating func cycle(_ seconds: Double) {
        let pace = rng.uniform(5.0, 6.0)
        var route = RouteGenerator(style: .cycling, pace: pace, finishAfter: now + seconds)
        gps.environment = .urban
        _ = travel(.cycling, profile: .cyclist, route: &route, pace: pace)
    }

    mutating func rideBus(_ seconds: Double) {
        var route = RouteGenerator(style: .bus, finishAfter: now + seconds)
        gps.environment = .urban
        _ = travel(.bus, profile: .busDriver(rng: &rng), route: &route)
    }

    /// A car drive of about `seconds` (it ends at the first car park after that), with red lights and events.
    @discardableResult
    mutating func drive(
        _ seconds: Double, style: RouteGenerator.Style = .city, redLights: Int,
        lightsWithin: Double? = nil, events: [PlannedEvent]
    ) -> TravelOutcome {
        let start = now
        let window = lightsWithin ?? seconds
        var route = RouteGenerator(style: style, finishAfter: start + seconds)
        route.redLights = (0..<redLights).map {
            start + window * (Double($0) + rng.uniform(0.2, 0.8)) / Double(redLights)
        }
        if style == .city, seconds >= 900, rng.chance(0.6) {
            route.highway = (at: start + seconds * rng.uniform(0.2, 0.35), length: rng.uniform(3000, 10000))
        }
        gps.environment = .urban
        return travel(.car, profile: .driver(rng: &rng, style: drivingStyle), route: &route, events: events)
    }

    /// Walk to the car, drive with red lights and bumps (and maybe emergency stops), park, walk away, stay.
    mutating func commute(bumps: ClosedRange<Int>, bumpPeakG: ClosedRange<Double>, bumpCause: String, hardBrakes: Int) {
        stay(rng.uniform(20, 90))
        walk(fit(rng.uniform(60, 180), reserve: 420))
        stay(rng.uniform(10, 40), environment: .urban)
        let seconds = fit(rng.uniform(600, 1500), reserve: 300, minimum: 60)
        let start = now
        var events = (0..<rng.int(bumps)).map { _ in
            PlannedEvent(at: start + seconds * rng.uniform(0.1, 0.9), kind: .bump(peakG: bumpPeakG, cause: bumpCause))
        }
        events += (0..<hardBrakes).map { i in
            PlannedEvent(
                at: start + seconds * (Double(i) + rng.uniform(0.2, 0.7)) / Double(hardBrakes), kind: .hardBrake)
        }
        // 2–5 red lights on a 10–25 min drive; fewer when the drive had to be shortened.
        let redLights = min(5, max(seconds >= 600 ? 2 : 1, Int(seconds / 300) + rng.int(0...1)))
        drive(seconds, redLights: redLights, events: events)
        // Engine off, gather things, get out.
        stay(rng.uniform(10, 60), .vehicleStopped, environment: .urban)
        walk(fit(rng.uniform(60, 180), reserve: 30))
        stay(.infinity)
    }

    /// Walk to the car, drive on an arterial road, crash at 50–70 km/h, stay at the scene.
    mutating func crashDrive() {
        stay(rng.uniform(20, 90))
        walk(fit(rng.uniform(60, 150), reserve: 480))
        stay(rng.uniform(10, 30), environment: .urban)
        let crashAfter = fit(rng.uniform(180, 720), reserve: 180, minimum: 60)
        let outcome = drive(
            crashAfter + 3600, style: .arterial, redLights: crashAfter >= 300 ? rng.int(1...2) : 0,
            lightsWithin: crashAfter * 0.8, events: [PlannedEvent(at: now + crashAfter, kind: .crash)])
        guard outcome == .crashed else {
            stay(.infinity, .vehicleStopped, environment: .urban)
            return
        }
        // Still in the car while the classifier catches up, then stationary. Some get out and stand by the road.
        stay(rng.uniform(10, 30), .vehicleStopped, environment: .urban)
        if rng.chance(0.4) {
            stay(rng.uniform(60, 240), environment: .urban)
            walk(fit(rng.uniform(15, 45), reserve: 0, minimum: 10))
        }
        stay(.infinity, environment: .urban)
    }
}
