// A phone GPS at 1 Hz. Real position errors are not white: they wander slowly (multipath, satellite geometry), so the
// error is a first-order Gauss–Markov process per axis with sigma ≈ hacc/2 and a ~30 s correlation time. The reported
// accuracy drifts too, jumps to 20–65 m in urban-canyon episodes, and a few fixes are deliberately broken (invalid,
// or a ~300 m outlier that still claims good accuracy) so that consumers' filters get exercised.

import Foundation

enum GPSEnvironment {
    case openSky, urban, indoor

    /// Median accuracy and the range the reported accuracy stays in, metres.
    var accuracy: (median: Double, low: Double, high: Double) {
        switch self {
        case .openSky: return (4.5, 3, 10)
        case .urban: return (7, 3, 15)
        case .indoor: return (12, 5, 30)
        }
    }

    /// Chance per fix that an urban-canyon episode starts.
    var canyonChance: Double {
        switch self {
        case .openSky: return 1.0 / 2400
        case .urban: return 1.0 / 600
        case .indoor: return 0
        }
    }
}

enum FixQuality {
    case good, outlier, invalid
}

struct GPSFix {
    var coordinate: Coordinate
    var speed: Double
    var course: Double?
    var hacc: Double
    var quality: FixQuality
}

struct GPSReceiver {
    static let correlationSeconds = 30.0
    static let invalidChance = 1.0 / 1200
    static let outlierChance = 1.0 / 2000
    static let dopplerSigma = 0.15
    static let dopplerLimit = 0.3

    var environment: GPSEnvironment = .urban
    /// Phones differ: a multiplier on the environment's median accuracy.
    let quality: Double
    private var logAccuracy = 0.0
    private var noiseEast = 0.0
    private var noiseNorth = 0.0
    private var canyonFixesLeft = 0
    private var canyonLevel = 30.0
    private var lastReported: Coordinate?
    private var lastWasBroken = false

    init(quality: Double) {
        self.quality = quality
    }

    /// The fix for the true state (`position` in `frame`, ground speed m/s, heading radians).
    mutating func fix(
        position: Point, frame: LocalFrame, speed: Double, heading: Double,
        rng: inout RandomSource
    ) -> GPSFix {
        let phi = exp(-1 / Self.correlationSeconds)
        let innovation = (1 - phi * phi).squareRoot()

        // Reported accuracy: a Gauss–Markov walk on its logarithm, so it drifts rather than flickers.
        logAccuracy = phi * logAccuracy + innovation * 0.35 * rng.gaussian()
        let range = environment.accuracy
        var hacc = min(max(range.median * quality * exp(logAccuracy), range.low), range.high)
        if canyonFixesLeft > 0 {
            canyonFixesLeft -= 1
            hacc = min(max(canyonLevel * exp(0.5 * logAccuracy), 20), 65)
        } else if rng.chance(environment.canyonChance) {
            canyonFixesLeft = rng.int(10...60)
            canyonLevel = rng.uniform(22, 60)
        }

        // Correlated position error with sigma hacc/2 per axis.
        let sigma = hacc / 2
        noiseEast = phi * noiseEast + innovation * sigma * rng.gaussian()
        noiseNorth = phi * noiseNorth + innovation * sigma * rng.gaussian()
        var reported = position
        reported.east += noiseEast
        reported.north += noiseNorth

        // Doppler speed: far better than position differences, ±0.3 m/s. At a standstill phones report 0 or -1.
        var dopplerSpeed: Double
        var course: Double?
        if speed < 0.5 {
            dopplerSpeed = rng.chance(0.25) ? -1 : 0
        } else {
            let error = min(max(Self.dopplerSigma * rng.gaussian(), -Self.dopplerLimit), Self.dopplerLimit)
            dopplerSpeed = max(0, speed + error)
            let courseSigma = speed > 5 ? 2.0 : 6.0
            // Rounded as written (one decimal), so 359.96° becomes 0.0 rather than 360.0.
            let degrees =
                (compassDegrees(heading + courseSigma * rng.gaussian() * degreesToRadians) * 10).rounded() / 10
            course = degrees >= 360 ? 0 : degrees
        }

        // Deliberately broken fixes, never two in a row.
        if !lastWasBroken, let stale = lastReported, rng.chance(Self.invalidChance) {
            lastWasBroken = true
            return GPSFix(coordinate: stale, speed: -1, course: nil, hacc: -1, quality: .invalid)
        }
        if !lastWasBroken, lastReported != nil, rng.chance(Self.outlierChance) {
            lastWasBroken = true
            var jumped = reported
            jumped.move(rng.uniform(250, 350), heading: rng.uniform(0, 2 * Double.pi))
            return GPSFix(
                coordinate: frame.coordinate(of: jumped), speed: dopplerSpeed, course: course,
                hacc: hacc, quality: .outlier)
        }
        lastWasBroken = false
        let coordinate = frame.coordinate(of: reported)
        lastReported = coordinate
        return GPSFix(coordinate: coordinate, speed: dopplerSpeed, course: course, hacc: hacc, quality: .good)
    }
}
