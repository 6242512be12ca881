import RoadSaveModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the records around an impact say beyond the screening's features: the change of velocity, the direction of
/// travel and the positions before the crash position (docs/detection.md "Crash alerts" gives the rules).
enum ImpactReadings {
    /// Standard gravity, m/s² per g.
    static let gravity = 9.80665
    /// Samples at or above this (g) are the impact itself, as `durationMs` counts it.
    static let impactG = 2.0
    /// A bearing is taken between fixes at least this far apart: below it, GPS jitter decides the direction.
    static let headingBaseline = 20.0
    /// … and at most this long apart: an older fix says nothing of the direction at the impact.
    static let headingLookBack = 60.0

    /// The change of velocity, m/s. From the samples: the vector sum of the impact's accelerations (samples at or
    /// above `impactG`, less the mean of the quieter samples before the peak, which hold gravity) times their
    /// spacing. Without such samples: the drop in GPS speed, when both speeds are known.
    static func deltaV(samples: [ImpactSample], speedBefore: Double?, speedAfter: Double?) -> Double? {
        if let fromSamples = deltaV(samples: samples) { return fromSamples }
        guard let speedBefore, let speedAfter else { return nil }
        return max(0, speedBefore - speedAfter)
    }

    static func deltaV(samples: [ImpactSample]) -> Double? {
        let sorted = samples.sorted { $0.dt < $1.dt }
        guard sorted.count >= 3 else { return nil }
        let quiet = sorted.filter { $0.dt < 0 && $0.magnitude < impactG }
        let count = Double(max(1, quiet.count))
        let baseline =
            quiet.isEmpty
            ? (0.0, 0.0, 0.0)
            : (
                quiet.map(\.x).reduce(0, +) / count, quiet.map(\.y).reduce(0, +) / count,
                quiet.map(\.z).reduce(0, +) / count
            )
        var sum = (0.0, 0.0, 0.0)
        var impactSamples = 0
        for index in sorted.indices.dropLast() where sorted[index].magnitude >= impactG {
            let step = sorted[index + 1].dt - sorted[index].dt
            guard step > 0, step < 0.5 else { continue }
            impactSamples += 1
            sum.0 += (sorted[index].x - baseline.0) * step
            sum.1 += (sorted[index].y - baseline.1) * step
            sum.2 += (sorted[index].z - baseline.2) * step
        }
        guard impactSamples > 0 else { return nil }
        return gravity * (sum.0 * sum.0 + sum.1 * sum.1 + sum.2 * sum.2).squareRoot()
    }

    /// Degrees clockwise from north: the position fix's own course when it had one, else the bearing to it from the
    /// latest earlier fix at least `headingBaseline` away and at most `headingLookBack` older.
    static func heading(at position: AcceptedFix, track: GPSTrack) -> Double? {
        if let course = position.course { return course }
        guard
            let origin = track.fixes(from: position.t - headingLookBack, to: position.t).reversed()
                .first(where: { $0.t < position.t && $0.distance(to: position) >= headingBaseline })
        else { return nil }
        return bearing(from: origin, to: position)
    }

    /// The initial great-circle bearing, degrees in [0, 360).
    static func bearing(from a: AcceptedFix, to b: AcceptedFix) -> Double {
        let radians = Double.pi / 180
        let lat1 = a.latitude * radians
        let lat2 = b.latitude * radians
        let dLon = (b.longitude - a.longitude) * radians
        let y = sin(dLon) * cos(lat2)
        let x = cos(lat1) * sin(lat2) - sin(lat1) * cos(lat2) * cos(dLon)
        let degrees = atan2(y, x) / radians
        return degrees < 0 ? degrees + 360 : degrees
    }

    /// The two accepted fixes before `position`, newest first (eCall's n-1 and n-2): across a GPS gap they are the
    /// last ones before it, which the track keeps however old.
    static func recentPositions(before position: AcceptedFix, in track: GPSTrack) -> [TimedPosition] {
        track.recent.lazy.filter { $0.t < position.t }.suffix(2).reversed()
            .map { TimedPosition(latitude: $0.latitude, longitude: $0.longitude, time: $0.t) }
    }

    /// The rule for `positionTrusted`: a fix at most `crashPositionTrustedAge` from the impact and at least
    /// `crashPositionTrustedAccuracy` accurate.
    static func isTrusted(age: Double?, accuracy: Double?, settings: DetectionSettings) -> Bool {
        guard let age, let accuracy else { return false }
        return age <= settings.crashPositionTrustedAge && accuracy <= settings.crashPositionTrustedAccuracy
    }
}
