/// One position of a device's track, as its location record gave it.
public struct TrackPoint: Sendable, Equatable {
    /// Seconds since the Unix epoch.
    public var t: Double
    public var latitude: Double
    public var longitude: Double
    /// GPS speed, m/s; nil when the fix carried none.
    public var speed: Double?

    public init(t: Double, latitude: Double, longitude: Double, speed: Double? = nil) {
        self.t = t
        self.latitude = latitude
        self.longitude = longitude
        self.speed = speed
    }
}
