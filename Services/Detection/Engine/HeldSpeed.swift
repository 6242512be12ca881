/// The fastest speed a ride held over two fixes in a row: each pair counts at the slower of its two speeds, so one
/// fix with a wild speed (a GPS glitch) does not set the trip's `maxSpeed`.
struct HeldSpeed: Sendable, Equatable, Codable {
    /// The speed of the last fix taken, nil when it had none.
    private(set) var previous: Double?
    /// The highest of the pairs so far; nil until two fixes in a row had a speed.
    private(set) var maximum: Double?

    mutating func add(_ speed: Double?) {
        if let speed, let previous {
            let held = min(speed, previous)
            maximum = max(maximum ?? held, held)
        }
        previous = speed
    }

    /// The peak of a ride that went on from `earlier`: the larger of both peaks (the pair across the two is not
    /// counted: a stop broke them).
    func continuing(_ earlier: HeldSpeed?) -> HeldSpeed {
        var merged = self
        if let before = earlier?.maximum { merged.maximum = max(merged.maximum ?? before, before) }
        return merged
    }
}
