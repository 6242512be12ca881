import RoadSaveModel

/// The readings of a crash's position: the heading, whether it is trusted and the two positions before it.
struct PositionReadings {
    var heading: Double?
    var trusted: Bool
    var recent: [TimedPosition]

    init(position: AcceptedFix?, impact t: Double, context: CrashContext) {
        guard let position else {
            heading = nil
            trusted = false
            recent = []
            return
        }
        heading = ImpactReadings.heading(at: position, track: context.gps)
        trusted = ImpactReadings.isTrusted(
            age: abs(t - position.t), accuracy: position.accuracy,
            settings: context.settings)
        recent = ImpactReadings.recentPositions(before: position, in: context.gps)
    }
}
