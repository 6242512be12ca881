/// Distance travelled, counted so that GPS jitter adds nothing: only a fix that is movement adds distance, from
/// the last fix counted. Fixes while stopped (jitter) add nothing; slow creeping between two movement fixes is
/// recovered as the straight line between them.
struct Odometer: Sendable, Equatable, Codable {
    private(set) var distance = 0.0
    private(set) var anchor: AcceptedFix
    private(set) var last: AcceptedFix?

    init(anchor: AcceptedFix) {
        self.anchor = anchor
        self.last = anchor
    }

    /// `measurement` is what the GPS filter computed for the fix: the anchor is often the fix before it, whose
    /// distance the filter already has.
    mutating func add(_ fix: AcceptedFix, measurement: FixMeasurement) {
        last = fix
        guard fix.isMovement else { return }
        distance += measurement.distance(from: fix, to: anchor)
        anchor = fix
    }

    /// The distance of the runs a trip begins with (`TripEngine.LeadIn`), counted before this odometer's.
    mutating func addLeadIn(_ metres: Double) {
        distance += metres
    }
}
