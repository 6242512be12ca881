import Foundation
import GatewayKit
import RoadSaveModel

@testable import DetectionEngine

/// Builds one device's record sequence by narrating what the device does: drive, stop, walk, report activity,
/// count steps, feel an impact. Positions follow the speeds along a heading, one fix a second, so every record
/// is physically consistent with the story.
struct Script {
    static let device = DeviceID(app: "app-1", user: "user-1")
    static let start = 1_772_433_000.0 // 2026-03-02T06:30:00Z

    var device = Script.device
    var t = Script.start
    var latitude = -33.9249
    var longitude = 18.4241
    /// Degrees clockwise from north.
    var heading = 90.0
    var accuracy = 5.0
    var records: [SensorRecord] = []
    var stepCount = 1000
    private var seq: UInt64 = 0
    /// Times of the fixes that were movement (speed ≥ 2 m/s), for checking end dates.
    var lastMovement: Double?

    mutating func add(_ payload: SensorRecord.Payload, at time: Double? = nil) {
        records.append(SensorRecord(device: device, seq: seq, t: time ?? t, payload: payload))
        seq += 1
    }

    mutating func capabilities(activity: Bool = true, pedometer: Bool = true) {
        add(.capabilities(DeviceCapabilities(activityAvailable: activity, pedometerAvailable: pedometer)))
    }

    mutating func activity(_ type: ActivityType, _ confidence: ActivityConfidence) {
        add(.activity(ActivityObservation(type, confidence)))
    }

    /// A fix at the current place and time.
    mutating func fix(speed: Double?, accuracy: Double? = nil, offsetMetres: (north: Double, east: Double) = (0, 0)) {
        let (lat, lon) = Script.moved(latitude, longitude, north: offsetMetres.north, east: offsetMetres.east)
        add(
            .location(
                LocationFix(
                    latitude: lat, longitude: lon, speed: speed, course: heading,
                    horizontalAccuracy: accuracy ?? self.accuracy)))
        if let speed, speed >= 2 { lastMovement = t }
    }

    /// Moves at `speed` m/s for `seconds`, one fix a second (the first one second from now).
    mutating func drive(seconds: Int, speed: Double, turnEvery: Int = 0) {
        for second in 1...max(1, seconds) {
            advance(metres: speed)
            t += 1
            if turnEvery > 0, second % turnEvery == 0 { heading = (heading + 90).truncatingRemainder(dividingBy: 360) }
            fix(speed: speed)
        }
    }

    /// Changes speed steadily from `from` to `to` over `seconds`.
    mutating func accelerate(from: Double, to: Double, seconds: Int) {
        for second in 1...seconds {
            let speed = from + (to - from) * Double(second) / Double(seconds)
            advance(metres: speed)
            t += 1
            fix(speed: speed)
        }
    }

    /// Stands still for `seconds`: a fix every `every` seconds with speed 0 and `jitter` metres of GPS noise.
    mutating func stand(
        seconds: Int, every: Int = 1, jitter: Double = 0, speedKnown: Bool = true,
        random: inout SplitMix64
    ) {
        var elapsed = 0
        while elapsed < seconds {
            elapsed += every
            t += Double(every)
            let offset = (north: random.gaussian() * jitter, east: random.gaussian() * jitter)
            fix(speed: speedKnown ? 0 : nil, offsetMetres: offset)
        }
    }

    mutating func stand(seconds: Int, every: Int = 1) {
        var random = SplitMix64(seed: 1)
        stand(seconds: seconds, every: every, random: &random)
    }

    /// Walks at 1.4 m/s with the pedometer reporting every 2 s at 2 steps a second.
    mutating func walk(seconds: Int, pedometer: Bool = true) {
        for second in 1...seconds {
            advance(metres: 1.4)
            t += 1
            fix(speed: 1.4)
            if pedometer, second % 2 == 0 {
                stepCount += 4
                add(.steps(stepCount))
            }
        }
    }

    /// Nothing at all for `seconds`.
    mutating func silence(seconds: Double) {
        t += seconds
    }

    mutating func impact(peakG: Double, durationMs: Double = 90, freeFall: Double = 0) {
        add(
            .impact(
                ImpactObservation(
                    peakG: peakG, durationMs: durationMs,
                    samples: Script.impactSamples(peakG: peakG, durationMs: durationMs, freeFall: freeFall))))
    }

    /// A 100 Hz window from -1 s to +2 s: rest (1 g), an optional free fall (≈0 g) just before the peak, and a
    /// half-sine pulse of `peakG` lasting `durationMs`.
    static func impactSamples(peakG: Double, durationMs: Double, freeFall: Double) -> [ImpactSample] {
        (-100...200).map { index in
            let dt = Double(index) / 100
            let pulse = durationMs / 1000
            if dt >= -pulse / 2 && dt <= pulse / 2 {
                let shape = cos(Double.pi * dt / pulse)
                return ImpactSample(dt: dt, x: peakG * shape, y: 0, z: 0)
            }
            if freeFall > 0 && dt < 0 && dt >= -freeFall - pulse / 2 {
                return ImpactSample(dt: dt, x: 0.02, y: 0.03, z: 0.05)
            }
            return ImpactSample(dt: dt, x: 0, y: 0, z: 1)
        }
    }

    mutating func advance(metres: Double) {
        let radians = heading * .pi / 180
        (latitude, longitude) = Script.moved(
            latitude, longitude, north: metres * cos(radians), east: metres * sin(radians))
    }

    static func moved(_ lat: Double, _ lon: Double, north: Double, east: Double) -> (Double, Double) {
        let radius = 6_371_008.8
        let dLat = north / radius * 180 / .pi
        let dLon = east / (radius * cos(lat * .pi / 180)) * 180 / .pi
        return (lat + dLat, lon + dLon)
    }
}

/// Gaussian samples from the seeded generator, so noisy scripts repeat exactly.
extension SplitMix64 {
    mutating func gaussian() -> Double {
        let u1 = max(unit(), 1e-12)
        let u2 = unit()
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
}
