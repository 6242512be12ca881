// What happens to a car on the road: potholes and speed bumps (a jolt, speed unchanged), emergency stops (0.8–0.9 g,
// under the 2 g trigger) and crashes. There is no public phone recording of a car crash, so the crash is built from
// the physics: a half-sine pulse whose area equals the car's change of speed (Δv = v·(1 + e) with a small rebound e),
// which for 50–70 km/h and 60–120 ms gives 30–60 g, then the car at rest within a second.

import Foundation

extension DeviceSim {
    /// A pothole or speed bump hit at the current speed.
    mutating func hitBump(peakG: ClosedRange<Double>, cause: String) {
        let peak = rng.uniform(peakG.lowerBound, peakG.upperBound)
        let trace = ImpactSynthesis.bump(
            peakG: peak, width: rng.uniform(0.03, 0.06), longitudinalG: 0,
            mount: vehicleMount, rng: &rng)
        let impacts = emitImpacts(ImpactSynthesis.trigger(trace)) { _ in cause }
        for impact in impacts {
            truth.bumps.append(
                BumpTruth(
                    t: impact.t, peakG: impact.peakG, durationMs: impact.durationMs,
                    speed: (speed * 100).rounded() / 100))
        }
        // The jolt sometimes fools the pedometer into one step.
        if rng.chance(0.3) { spuriousStep() }
    }

    /// Starts an emergency stop; the travel loop carries it out through the returned override.
    mutating func startHardBrake() -> SpeedOverride {
        let deceleration = rng.uniform(0.8, 0.9) * standardGravity
        let stopSeconds = speed / deceleration + 0.125
        let trace = ImpactSynthesis.hardBrake(
            decelerationG: deceleration / standardGravity, stopSeconds: stopSeconds,
            mount: vehicleMount, rng: &rng)
        // Run through the trigger like everything else: at about 1.35 g nothing should come out.
        emitImpacts(ImpactSynthesis.trigger(trace)) { _ in "hardBrake" }
        truth.hardBrakes.append(
            HardBrakeTruth(
                start: now, end: seconds(nowMs + Int64(stopSeconds * 1000)),
                fromSpeed: (speed * 100).rounded() / 100,
                deceleration: (deceleration * 100).rounded() / 100))
        return SpeedOverride(
            deceleration: deceleration, rampFrom: now, holdSeconds: rng.uniform(2, 6),
            stoppedAt: nil, dropAfterStop: nil, hardBrakeIndex: truth.hardBrakes.count - 1)
    }

    /// A frontal crash at the current speed (50–70 km/h), then the car at rest.
    mutating func crash(leg: inout LegTracker) {
        let before = speed
        let restitution = rng.uniform(0.05, 0.15)
        let deltaV = before * (1 + restitution)
        // Pick the peak, derive the pulse width from Δv = (2/π)·peak·width and keep it within 70–120 ms (so that the time above 2 g is at least 60 ms).
        let peakG = rng.uniform(33, 55)
        let width = min(max(deltaV * Double.pi / (2 * standardGravity * peakG), 0.07), 0.12)
        let direction = Vec3(x: -1, y: rng.uniform(-0.3, 0.3), z: rng.uniform(-0.1, 0.1)).normalized
        let reboundSpeed = before * restitution
        let reboundDecel = rng.uniform(6, 8)
        let reboundSeconds = reboundSpeed / reboundDecel
        var secondary: ImpactSynthesis.SecondaryHit?
        if rng.chance(0.4) {
            // Hit again 0.5–3 s later by the car behind, which pushes the wreck against the obstacle it already
            // rests on: a jolt for the phone, no movement the GPS could see.
            secondary = ImpactSynthesis.SecondaryHit(
                delay: (rng.uniform(0.5, 3.0) * 100).rounded() / 100,
                peakG: rng.uniform(5, 20), width: rng.uniform(0.04, 0.08),
                direction: Vec3(x: 1, y: rng.uniform(-0.3, 0.3), z: 0).normalized)
        }
        let after = rng.chance(0.5) ? Rotation.lyingFlat(rng: &rng) : vehicleMount
        let trace = ImpactSynthesis.crash(
            peakG: peakG, width: width, direction: direction,
            reboundG: reboundDecel / standardGravity, reboundSeconds: reboundSeconds,
            secondary: secondary, mount: vehicleMount, after: after, rng: &rng)
        let crashMs = nowMs
        let crashCoordinate = coordinate
        let impacts = emitImpacts(ImpactSynthesis.trigger(trace)) { $0 == 0 ? "crash" : "crashSecondary" }

        // The rebound (backwards, braked by the wreck) dies out within half a second.
        heading += rng.uniform(-0.5, 0.5)
        let standstillMs = crashMs + Int64((reboundSeconds * 1000).rounded(.up))
        setContext(.vehicleStopped)
        stepRate = 0
        var elapsed = 0.0
        let dt = DeviceSim.tickSeconds
        while elapsed < 3.5, !timeUp {
            let backStart = max(0, reboundSpeed - reboundDecel * elapsed)
            let backEnd = max(0, reboundSpeed - reboundDecel * (elapsed + dt))
            let back = (backStart + backEnd) / 2 * dt
            position.move(back, heading: heading + Double.pi)
            leg.distance += back
            speed = backEnd
            endTick()
            elapsed += dt
        }
        leg.lastMove = standstillMs
        leg.endCoordinate = coordinate
        speed = 0

        let primary = impacts.first
        truth.crashes.append(
            CrashTruth(
                t: primary?.t ?? seconds(crashMs), latitude: crashCoordinate.latitude,
                longitude: crashCoordinate.longitude,
                speedBefore: (before * 100).rounded() / 100, peakG: primary?.peakG ?? 0,
                durationMs: primary?.durationMs ?? 0,
                secondaryHitT: secondary.map { seconds(crashMs + Int64(($0.delay * 1000).rounded())) },
                secondaryRecorded: impacts.count > 1, standstillAt: seconds(standstillMs)))
    }
}
