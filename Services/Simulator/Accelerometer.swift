// Synthetic 100 Hz accelerometer traces (in g) around the moments that matter: bumps, crashes, phone drops and hard
// brakes. Each trace is cut into impact records by the gateway's own trigger (GatewayKit.ImpactTrigger), so
// simulated impacts have exactly the shape of recorded ones. An accelerometer measures specific force: at rest it
// reads +1 g "up", in free fall about 0 g. Forces are built in a body frame (vehicle or person: x forward, y left,
// z up) and rotated into the phone's axes, since a phone sits at some angle in its mount, hand or pocket.

import Foundation
import GatewayKit

struct Vec3 {
    var x: Double
    var y: Double
    var z: Double

    static func + (a: Vec3, b: Vec3) -> Vec3 { Vec3(x: a.x + b.x, y: a.y + b.y, z: a.z + b.z) }
    static func * (a: Vec3, s: Double) -> Vec3 { Vec3(x: a.x * s, y: a.y * s, z: a.z * s) }
    func dot(_ b: Vec3) -> Double { x * b.x + y * b.y + z * b.z }
    var magnitude: Double { dot(self).squareRoot() }
    var normalized: Vec3 { self * (1 / magnitude) }

    static let up = Vec3(x: 0, y: 0, z: 1)

    static func noise(_ sigma: Double, rng: inout RandomSource) -> Vec3 {
        Vec3(x: sigma * rng.gaussian(), y: sigma * rng.gaussian(), z: sigma * rng.gaussian())
    }

    static func randomUnit(rng: inout RandomSource) -> Vec3 {
        let z = rng.uniform(-1, 1)
        let angle = rng.uniform(0, 2 * Double.pi)
        let r = (1 - z * z).squareRoot()
        return Vec3(x: r * cos(angle), y: r * sin(angle), z: z)
    }
}

/// Rotation from the body frame into the phone's axes (rows of the matrix).
struct Rotation {
    var r0: Vec3
    var r1: Vec3
    var r2: Vec3

    func apply(_ v: Vec3) -> Vec3 { Vec3(x: r0.dot(v), y: r1.dot(v), z: r2.dot(v)) }

    /// Z-Y-X Euler angles, radians.
    static func euler(yaw: Double, pitch: Double, roll: Double) -> Rotation {
        let (cy, sy, cp, sp, cr, sr) = (cos(yaw), sin(yaw), cos(pitch), sin(pitch), cos(roll), sin(roll))
        return Rotation(
            r0: Vec3(x: cy * cp, y: cy * sp * sr - sy * cr, z: cy * sp * cr + sy * sr),
            r1: Vec3(x: sy * cp, y: sy * sp * sr + cy * cr, z: sy * sp * cr - cy * sr),
            r2: Vec3(x: -sp, y: cp * sr, z: cp * cr))
    }

    /// A phone in a dash mount or cup holder: steeply pitched, any yaw.
    static func vehicleMount(rng: inout RandomSource) -> Rotation {
        euler(
            yaw: rng.uniform(0, 2 * Double.pi), pitch: rng.uniform(50, 80) * degreesToRadians,
            roll: rng.uniform(-10, 10) * degreesToRadians)
    }

    /// A phone held in the hand, screen towards the face.
    static func hand(rng: inout RandomSource) -> Rotation {
        euler(
            yaw: rng.uniform(-20, 20) * degreesToRadians, pitch: rng.uniform(20, 50) * degreesToRadians,
            roll: rng.uniform(-15, 15) * degreesToRadians)
    }

    /// Lying flat (face up or down, slightly tilted): on the floor after a drop, or knocked off its mount.
    static func lyingFlat(rng: inout RandomSource) -> Rotation {
        euler(
            yaw: rng.uniform(0, 2 * Double.pi), pitch: rng.uniform(-5, 5) * degreesToRadians,
            roll: (rng.chance(0.5) ? 0 : 180 + rng.uniform(-5, 5)) * degreesToRadians)
    }
}

enum ImpactSynthesis {
    static let sampleInterval = 0.01

    private static func time(_ k: Int) -> Double { Double(k) * sampleInterval }

    /// Cuts impact records from a trace with the gateway trigger. Times stay relative to the trace's event.
    static func trigger(_ trace: [AccelerationSample]) -> [TriggeredImpact] {
        ImpactTrigger().impacts(in: trace)
    }

    /// A pothole or speed bump at speed: a sharp vertical wheel hit (half-sine of `width` seconds centred on t = 0),
    /// the suspension's rebound and a decaying body bounce. The car's speed is unaffected.
    static func bump(
        peakG: Double, width: Double, longitudinalG: Double, mount: Rotation,
        rng: inout RandomSource
    ) -> [AccelerationSample] {
        let amplitude = peakG - 1
        var trace: [AccelerationSample] = []
        trace.reserveCapacity(451)
        for k in -150...300 {
            let t = time(k)
            var force = Vec3(x: longitudinalG, y: 0, z: 1)
            if abs(t) < width / 2 {
                let pulse = amplitude * cos(Double.pi * t / width)
                force.z += pulse
                force.x += 0.12 * pulse
            } else if t >= width / 2, t < 2.5 * width {
                force.z -= 0.35 * amplitude * sin(Double.pi * (t - width / 2) / (2 * width))
            }
            if t > 0 { force.z += 0.25 * sin(2 * Double.pi * 1.6 * t) * exp(-t / 0.6) }
            force = force + Vec3(x: 0.04 * rng.gaussian(), y: 0.04 * rng.gaussian(), z: 0.06 * rng.gaussian())
            let phone = mount.apply(force)
            trace.append(AccelerationSample(t: t, x: phone.x, y: phone.y, z: phone.z))
        }
        return trace
    }

    struct SecondaryHit {
        /// Seconds after the primary peak (a multiple of 10 ms).
        var delay: Double
        var peakG: Double
        var width: Double
        var direction: Vec3
    }

    /// A vehicle crash pulse: a half-sine of `peakG` and `width` along `direction` (vehicle frame) centred on t = 0,
    /// then the rebound being braked (`reboundG` forward for `reboundSeconds`), an optional secondary hit, and the
    /// phone possibly knocked out of its mount (`after`).
    static func crash(
        peakG: Double, width: Double, direction: Vec3, reboundG: Double, reboundSeconds: Double,
        secondary: SecondaryHit?, mount: Rotation, after: Rotation,
        rng: inout RandomSource
    ) -> [AccelerationSample] {
        let last = Int(((secondary?.delay ?? 0) + 2.5) / sampleInterval)
        var trace: [AccelerationSample] = []
        trace.reserveCapacity(last + 151)
        for k in -150...last {
            let t = time(k)
            var force = Vec3.up
            var rotation = mount
            if abs(t) <= width / 2 {
                // Structural ringing on top of the pulse, kept small so the peak stays where the physics put it.
                let pulse = peakG * (cos(Double.pi * t / width) + 0.015 * rng.gaussian())
                force = force + direction * pulse
            } else if t > width / 2 {
                rotation = after
                if t < width / 2 + reboundSeconds { force.x += reboundG }
                if let hit = secondary, abs(t - hit.delay) <= hit.width / 2 {
                    force = force + hit.direction * (hit.peakG * cos(Double.pi * (t - hit.delay) / hit.width))
                }
            }
            let phone = rotation.apply(force) + Vec3.noise(0.05, rng: &rng)
            trace.append(AccelerationSample(t: t, x: phone.x, y: phone.y, z: phone.z))
        }
        return trace
    }

    /// A phone drop from the hand: held (with the gait when walking), released, `freeFall` seconds at ~0 g
    /// (tumbling adds up to ~0.15 g), a 16–28 g spike of one or two samples at t = 0, maybe a bounce, then lying still.
    static func drop(
        freeFall: Double, spikeG: Double, spikeWidth: Double, bounce: (delay: Double, peakG: Double)?,
        cadence: Double?, hand: Rotation, ground: Rotation,
        rng: inout RandomSource
    ) -> [AccelerationSample] {
        let release = 0.08
        let spin = rng.uniform(8, 20)
        let tumble = rng.uniform(0.03, 0.15)
        let impactDirection = Vec3.randomUnit(rng: &rng)
        let bounceDirection = Vec3.randomUnit(rng: &rng)
        let second = spikeWidth > 0.01 ? rng.uniform(0.15, 0.4) : 0
        let first = Int(-(freeFall + 1.2) / sampleInterval)
        var trace: [AccelerationSample] = []
        trace.reserveCapacity(250 - first + 1)
        for k in first...250 {
            let t = time(k)
            var phone: Vec3
            if t < -freeFall {
                var held = Vec3.up
                if let cadence {
                    let phase = 2 * Double.pi * cadence * t
                    held.x += 0.08 * sin(phase)
                    held.z += 0.22 * sin(phase + 0.5)
                }
                // While letting go, the hand's support fades to nothing.
                let support = t < -freeFall - release ? 1 : (-freeFall - t) / release
                phone = hand.apply(held) * support + Vec3.noise(0.02, rng: &rng)
            } else if k < 0 {
                phone =
                    Vec3(x: tumble * cos(spin * t), y: tumble * sin(spin * t), z: 0.4 * tumble)
                    + Vec3.noise(0.01, rng: &rng)
            } else if k == 0 {
                phone = impactDirection * spikeG
            } else if k == 1, second > 0 {
                phone = impactDirection * (spikeG * second)
            } else {
                phone = ground.apply(Vec3.up) + Vec3.noise(0.01, rng: &rng)
                if let bounce, abs(t - bounce.delay) < sampleInterval / 2 {
                    phone = phone + bounceDirection * bounce.peakG
                }
            }
            trace.append(AccelerationSample(t: t, x: phone.x, y: phone.y, z: phone.z))
        }
        return trace
    }

    /// An emergency stop: deceleration ramping to `decelerationG` in 0.25 s and held until the car stops after
    /// `stopSeconds`, then the body rocking back. |a| stays near 1.35 g, well under the 2 g trigger.
    static func hardBrake(
        decelerationG: Double, stopSeconds: Double, mount: Rotation,
        rng: inout RandomSource
    ) -> [AccelerationSample] {
        let last = Int((stopSeconds + 2) / sampleInterval)
        var trace: [AccelerationSample] = []
        trace.reserveCapacity(last + 101)
        for k in -100...last {
            let t = time(k)
            var force = Vec3.up
            if t >= 0, t < stopSeconds {
                let ramp = min(1, t / 0.25)
                force.x -= decelerationG * ramp
                force.z += 0.05 * ramp
            } else if t >= stopSeconds {
                let since = t - stopSeconds
                force.x += 0.15 * exp(-since / 0.3) * cos(2 * Double.pi * 1.2 * since)
            }
            let phone = mount.apply(force) + Vec3.noise(0.04, rng: &rng)
            trace.append(AccelerationSample(t: t, x: phone.x, y: phone.y, z: phone.z))
        }
        return trace
    }
}
