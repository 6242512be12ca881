import RoadSaveModel

/// A location fix that passed the GPS filter.
/// (The optional comes last among the stored properties, and the course is a `Float` after it: 48 bytes a fix, as
/// without a course, instead of 56.)
public struct AcceptedFix: Sendable, Equatable, Codable {
    public var t: Double
    public var latitude: Double
    public var longitude: Double
    /// Horizontal accuracy in metres (a typical phone value when the record had none).
    public var accuracy: Double
    /// Reported GPS speed, or a conservative estimate from displacement; `nil` when neither is known yet.
    public var speed: Double?
    /// Fast enough to be movement evidence (`DetectionSettings.movementSpeed`).
    public var isMovement: Bool
    /// The reported course, degrees clockwise from north; NaN when the record had none (a crash's heading).
    private var courseDegrees: Float

    public init(
        t: Double, latitude: Double, longitude: Double, speed: Double?, accuracy: Double, isMovement: Bool,
        course: Double? = nil
    ) {
        self.t = t
        self.latitude = latitude
        self.longitude = longitude
        self.speed = speed
        self.accuracy = accuracy
        self.isMovement = isMovement
        courseDegrees = course.map(Float.init) ?? .nan
    }

    /// The direction of travel the fix reported, degrees clockwise from north in [0, 360).
    public var course: Double? { courseDegrees.isNaN ? nil : Double(courseDegrees) }

    func distance(to other: AcceptedFix) -> Double {
        Geo.distance(latitude, longitude, other.latitude, other.longitude)
    }

    public static func == (a: AcceptedFix, b: AcceptedFix) -> Bool {
        a.t == b.t && a.latitude == b.latitude && a.longitude == b.longitude && a.accuracy == b.accuracy
            && a.speed == b.speed && a.isMovement == b.isMovement && a.course == b.course
    }
}

/// What the GPS filter computed for the fix it accepted, for the engines after it to reuse rather than compute
/// again: the cosine of its latitude, the fix before it and that fix's cosine (`previousLatitude` and
/// `previousLongitude` NaN when there was none), and the distance between them when the filter needed it (NaN when
/// not). The same computation on the same values gives the same bits, so reusing them changes no result.
struct FixMeasurement: Sendable {
    var cosLatitude = Double.nan
    var previousLatitude = Double.nan
    var previousLongitude = Double.nan
    var previousCosLatitude = Double.nan
    var distanceFromPrevious = Double.nan

    /// `fix.distance(to: other)`, where `fix` is the fix measured.
    func distance(from fix: AcceptedFix, to other: AcceptedFix) -> Double {
        guard other.latitude.bitPattern == previousLatitude.bitPattern,
            other.longitude.bitPattern == previousLongitude.bitPattern
        else {
            return Geo.distance(
                fix.latitude, fix.longitude, cosLatitude,
                other.latitude, other.longitude, Geo.cosLatitude(other.latitude))
        }
        if !distanceFromPrevious.isNaN { return distanceFromPrevious }
        return Geo.distance(
            fix.latitude, fix.longitude, cosLatitude,
            other.latitude, other.longitude, previousCosLatitude)
    }

    /// `other.distance(to: fix)`, where `fix` is the fix measured.
    func distance(to fix: AcceptedFix, from other: AcceptedFix) -> Double {
        Geo.distance(
            other.latitude, other.longitude, Geo.cosLatitude(other.latitude),
            fix.latitude, fix.longitude, cosLatitude)
    }
}

extension AcceptedFix {
    /// Written as `[t, latitude, longitude, speed or null, accuracy, isMovement]`, then `course` when the fix had
    /// one: a device's history holds a few hundred fixes, the largest part of its checkpoint, and keys would nearly
    /// double it. (Fixes of checkpoints from before courses were kept have six members.)
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(t)
        try container.encode(latitude)
        try container.encode(longitude)
        if let speed { try container.encode(speed) } else { try container.encodeNil() }
        try container.encode(accuracy)
        try container.encode(isMovement)
        if !courseDegrees.isNaN { try container.encode(courseDegrees) }
    }

    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        t = try container.decode(Double.self)
        latitude = try container.decode(Double.self)
        longitude = try container.decode(Double.self)
        speed = try container.decodeNil() ? nil : try container.decode(Double.self)
        accuracy = try container.decode(Double.self)
        isMovement = try container.decode(Bool.self)
        courseDegrees = container.isAtEnd ? .nan : try container.decode(Float.self)
    }
}

/// Why a fix did not count.
public enum FixRejection: String, Error, Sendable, CaseIterable {
    case invalidFix, poorAccuracy, duplicate, implausibleJump
}

/// The GPS filter and the recent history of good fixes of one device. Fixes that are invalid, inaccurate,
/// repeated or that jump at impossible speeds don't count: they neither move trips nor add distance.
///
/// The history holds only what can still be read: the fixes from a cutoff the session gives (what speed estimates
/// and crash decisions look back to), and before it the newest fix (the last known position before an impact may be
/// older) and as many more as keep `crashPositionsKept` fixes to report a crash with (its position's fix and the two
/// before it, across a GPS gap too). Everything older would never be read again. (Checkpoints written before carry a
/// `historySeconds`, ignored now, and a longer history, cut at the next fix.)
struct GPSTrack: Sendable, Codable {
    /// Accuracy assumed for fixes that don't report one.
    static let assumedAccuracy = 10.0
    /// Consecutive "jumps" after which the new place is believed (the earlier fix was the bad one, or the device
    /// really was moved while silent).
    static let jumpsBeforeReanchor = 3
    /// Shortest baseline for estimating speed from positions: over one second, jitter looks like movement.
    static let speedBaseline = 10.0
    /// Longest baseline for estimating speed from positions: a speed estimate never reads a fix older than this.
    static let speedReferenceLimit = 30.0
    /// The history kept when the caller gives no cutoff.
    static let defaultHistory = 150.0
    /// Stale fixes are dropped in batches of at least this many, so the array is not rebuilt on every fix.
    static let trimBatch = 8
    /// Fixes a crash is reported with: its position's fix and the two before it (`recentPositions`). The newest so
    /// many at or before the first impact of a crash waiting for its decision (or, without one, the newest so many)
    /// stay, however old; in a steady stream they are all after the cutoff, so nothing more is kept.
    static let crashPositionsKept = 3

    private(set) var recent: [AcceptedFix] = []
    private var consecutiveJumps = 0
    /// The cosine of the latitude of the last fix taken (while `recent.last` has the latitude `cachedLatitude`),
    /// so that each fix's cosine is computed once. Not in checkpoints: a restored track computes it again.
    private var cachedLatitude = Double.nan
    private var cachedCosLatitude = Double.nan

    private enum CodingKeys: String, CodingKey { case recent, consecutiveJumps }

    init() {}

    var last: AcceptedFix? { recent.last }

    /// Filters a fix and, if it counts, adds it to the history. Fixes before `cutoff` (default: 150 s before `t`)
    /// may be dropped, but the newest of them is kept, and the fixes a crash at `pendingImpact` (the first impact of
    /// a crash waiting for its decision), or else one from now on, is reported with (`crashPositionsKept`).
    mutating func accept(
        _ fix: LocationFix, at t: Double, settings: DetectionSettings,
        keepingFrom cutoff: Double? = nil, pendingImpact: Double? = nil
    ) -> Result<AcceptedFix, FixRejection> {
        accept(
            fix, at: t, settings: SessionSettings(wrappedValue: settings), keepingFrom: cutoff,
            pendingImpact: pendingImpact)
    }

    /// The same, reading the settings where they are (a session's shared copy) rather than copying them per fix.
    mutating func accept(
        _ fix: LocationFix, at t: Double, settings sharedSettings: SessionSettings,
        keepingFrom cutoff: Double? = nil, pendingImpact: Double? = nil
    ) -> Result<AcceptedFix, FixRejection> {
        var measurement = FixMeasurement()
        return accept(
            fix, at: t, settings: sharedSettings, keepingFrom: cutoff, pendingImpact: pendingImpact,
            measurement: &measurement)
    }

    /// The same, also saying what was computed for the fix accepted (`measurement`, unchanged for a rejected one).
    mutating func accept(
        _ fix: LocationFix, at t: Double, settings sharedSettings: SessionSettings,
        keepingFrom cutoff: Double? = nil, pendingImpact: Double? = nil,
        measurement: inout FixMeasurement
    ) -> Result<AcceptedFix, FixRejection> {
        var settings: DetectionSettings { sharedSettings.wrappedValue }
        if let accuracy = fix.horizontalAccuracy, accuracy < 0 { return .failure(.invalidFix) }
        let accuracy = fix.horizontalAccuracy ?? Self.assumedAccuracy
        if accuracy > settings.maximumHorizontalAccuracy { return .failure(.poorAccuracy) }
        let course = fix.course.flatMap { $0 >= 0 && $0 < 360 ? $0 : nil }
        var candidate = AcceptedFix(
            t: t, latitude: fix.latitude, longitude: fix.longitude, speed: fix.speed,
            accuracy: accuracy, isMovement: false, course: course)
        var measured = FixMeasurement()
        if let last {
            if t <= last.t { return .failure(.duplicate) }
            measured.cosLatitude = Geo.cosLatitude(candidate.latitude)
            measured.previousLatitude = last.latitude
            measured.previousLongitude = last.longitude
            measured.previousCosLatitude =
                last.latitude.bitPattern == cachedLatitude.bitPattern
                ? cachedCosLatitude : Geo.cosLatitude(last.latitude)
            let elapsed = t - last.t
            // Nearly every fix is surely no jump by a bound without trigonometry (its distance is then computed
            // only if something needs it: for most fixes, nothing does); the others are decided on the distance.
            if !(Geo.distanceBound(candidate.latitude, candidate.longitude, last.latitude, last.longitude) / elapsed
                <= settings.maximumPlausibleSpeed)
            {
                let step = Geo.distance(
                    candidate.latitude, candidate.longitude, measured.cosLatitude,
                    last.latitude, last.longitude, measured.previousCosLatitude)
                measured.distanceFromPrevious = step
                if step / elapsed > settings.maximumPlausibleSpeed {
                    consecutiveJumps += 1
                    guard consecutiveJumps >= Self.jumpsBeforeReanchor else { return .failure(.implausibleJump) }
                    // Believe the new place, but don't carry speed estimates across the jump.
                    recent.removeAll()
                }
            }
        } else {
            measured.cosLatitude = Geo.cosLatitude(candidate.latitude)
        }
        consecutiveJumps = 0
        if candidate.speed == nil {
            candidate.speed = estimatedSpeed(for: candidate, cosLatitude: measured.cosLatitude)
        }
        candidate.isMovement = (candidate.speed ?? 0) >= settings.movementSpeed
        recent.append(candidate)
        cachedLatitude = candidate.latitude
        cachedCosLatitude = measured.cosLatitude
        trim(keepingFrom: cutoff ?? t - Self.defaultHistory, pendingImpact: pendingImpact)
        measurement = measured
        return .success(candidate)
    }

    /// Speed from displacement over at least `speedBaseline` seconds, less twice the two fixes' combined accuracy
    /// (about 95 % of jitter): parked jitter gives zero rather than a phantom speed.
    private func estimatedSpeed(for fix: AcceptedFix, cosLatitude: Double) -> Double? {
        guard let reference = recent.last(where: { fix.t - $0.t >= Self.speedBaseline }) else { return nil }
        guard fix.t - reference.t <= Self.speedReferenceLimit else { return nil }
        let noise = 2 * (fix.accuracy * fix.accuracy + reference.accuracy * reference.accuracy).squareRoot()
        let travelled =
            Geo.distance(
                fix.latitude, fix.longitude, cosLatitude, reference.latitude, reference.longitude,
                Geo.cosLatitude(reference.latitude)) - noise
        return max(0, travelled) / (fix.t - reference.t)
    }

    private mutating func trim(keepingFrom cutoff: Double, pendingImpact: Double?) {
        var older = 0
        while older < recent.count, recent[older].t < cutoff { older += 1 }
        // The newest fix before the cutoff stays, and so do the fixes a crash is reported with: the newest
        // `crashPositionsKept` at or before the pending impact (without one, the newest of all).
        var stale = max(0, older - 1)
        var lastReported = recent.count - 1
        if let pendingImpact {
            while lastReported >= 0, recent[lastReported].t > pendingImpact { lastReported -= 1 }
        }
        if lastReported >= 0 { stale = min(stale, max(0, lastReported - (Self.crashPositionsKept - 1))) }
        guard stale >= Self.trimBatch else { return }
        // A new array of the right size, with room for the next batch: appending to a full array would double it.
        var kept: [AcceptedFix] = []
        kept.reserveCapacity(recent.count - stale + Self.trimBatch + 1)
        kept.append(contentsOf: recent[stale...])
        recent = kept
    }

    /// Fixes with `from ≤ t ≤ to`.
    func fixes(from: Double, to: Double) -> some Sequence<AcceptedFix> {
        recent.lazy.filter { $0.t >= from && $0.t <= to }
    }
}
