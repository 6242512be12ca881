/// What `tripDidStart` carries.
public struct TripStartInfo: Sendable, Equatable {
    public var tripID: String
    /// When the movement that started the trip began (not when the decision was taken).
    public var startDate: Double

    public init(tripID: String, startDate: Double) {
        self.tripID = tripID
        self.startDate = startDate
    }
}

/// Why a trip ended: on every `tripDidEnd`, for tuning and support.
public enum TripEndReason: String, Sendable, Codable, CaseIterable {
    /// No movement for the stop delay.
    case stopDelay
    /// The steps counted since the last movement passed the step threshold.
    case steps
    /// The device sent nothing for longer than the data-gap limit; the trip is not merged with what follows.
    case dataGap
    /// `setAutoTripDetection(false)`.
    case detectionPaused
    /// The detection mode changed to one without trips.
    case detectionModeChanged
    /// `stopMonitoring()`.
    case monitoringStopped
}

/// What `tripDidEnd` carries.
public struct TripInfo: Sendable, Equatable {
    public var tripID: String
    public var startDate: Double
    /// The time of the last movement, not the time the end was decided.
    public var endDate: Double
    public var distanceMetres: Double
    public var endReason: TripEndReason

    public init(tripID: String, startDate: Double, endDate: Double, distanceMetres: Double, endReason: TripEndReason) {
        self.tripID = tripID
        self.startDate = startDate
        self.endDate = endDate
        self.distanceMetres = distanceMetres
        self.endReason = endReason
    }

    /// Seconds.
    public var duration: Double { max(0, endDate - startDate) }
    /// Metres a second; zero for a trip of no duration.
    public var averageSpeed: Double { duration > 0 ? distanceMetres / duration : 0 }
}
