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
    /// The device has sent nothing for `tripOfflineGrace` (or its records ended, at the end of a replay's input or of
    /// a gateway's stream) before its own records showed the stop delay.
    case deviceSilent
    /// `setAutoTripDetection(false)`.
    case detectionPaused
    /// The detection mode changed to one without trips.
    case detectionModeChanged
    /// `stopMonitoring()`.
    case monitoringStopped
}

/// What a trip was taken in, judged over the whole ride when it ends. Only `car` and `unknown` trips are driving:
/// a phone on a bus, tram or train moves like one in a car, and only the ride as a whole tells them apart.
public enum TransportMode: String, Sendable, Codable, CaseIterable {
    case car
    /// Road or street public transport: a bus or a tram (both stop and go at stops, and GPS cannot tell them apart).
    case bus
    /// A train or a metro.
    case rail
    /// Too short a ride to judge, or an event from before rides were judged.
    case unknown

    /// Whether a trip taken in it counts as driving: every mode but public transport.
    public var isDriving: Bool { self == .car || self == .unknown }
}

/// Why a trip got its `TransportMode`: on every `tripDidEnd`, as `endReason` says why it ended.
public enum TransportReason: String, Sendable, Codable, CaseIterable {
    /// None of the signs of public transport was seen over a ride long enough to show them.
    case noTransitEvidence
    /// The ride was shorter than `RideProfile.minimumDuration` or `minimumDistance`.
    case tooShort
    /// GPS was lost for a minute or more while the phone travelled at vehicle speed: underground.
    case gpsLostWhileMoving
    /// Most of the ride's positions were coarse (network positions) although the phone's were sharp in the minutes
    /// before it: under ground, or in a train's carriage; a car's windows let GPS through.
    case coarsePositionsAboard
    /// The phone's activity classifier called it stationary for much of the ride while the vehicle moved: a
    /// carriage on rails runs smoothly; a car on a road shakes the phone into automotive.
    case stillWhileMoving
    /// Minutes at speeds cars do not hold (`RideProfile.railSpeed`).
    case railSpeed
    /// Two or more stops of a station's length, each after minutes at 90 km/h and straight back to it: a train.
    case stationStops
    /// The pedometer counted steps while the vehicle was moving: nobody walks while driving.
    case stepsWhileMoving
    /// The ride began after the phone had walked to its starting place and waited there for minutes: a stop.
    case boardedAfterWaiting
    /// The ride began far from where the device's last driving trip ended, on the same day, and the phone was seen
    /// away from there before it: a driver walks back to where the car stood, a passenger boards elsewhere.
    case boardedAwayFromCar
    /// Frequent short stops, the dwell of a bus or tram at its stops, on a slow urban ride. A weak sign: town
    /// driving between lights shows it too, so it is reported in `transportSigns` but never decides a ride alone.
    case regularDwellStops
    /// The event was written before rides were judged.
    case notClassified
}

/// What `tripDidEnd` carries.
public struct TripInfo: Sendable, Equatable {
    public var tripID: String
    public var startDate: Double
    /// The time of the last movement, not the time the end was decided.
    public var endDate: Double
    public var distanceMetres: Double
    public var endReason: TripEndReason
    /// What the trip was taken in; `bus` and `rail` trips are not driving (docs/detection.md: "Passengers").
    public var transportMode: TransportMode
    public var transportReason: TransportReason
    /// Every sign of public transport the ride showed, in the order they are weighed: `transportReason` is the
    /// first that decides, and a consumer may weigh them otherwise. Empty for most car trips (and then not written).
    public var transportSigns: [TransportReason]
    /// The positions at `startDate` and at `endDate` (the fix of the last movement), as a trip report shows them;
    /// nil in events written before they were kept.
    public var startLatitude: Double?
    public var startLongitude: Double?
    public var endLatitude: Double?
    public var endLongitude: Double?
    /// Metres a second: the fastest speed held over two fixes in a row (one bad fix does not set it); nil when no two
    /// fixes in a row had a speed, and in events written before it was kept.
    public var maxSpeed: Double?

    public init(
        tripID: String, startDate: Double, endDate: Double, distanceMetres: Double, endReason: TripEndReason,
        transportMode: TransportMode = .unknown, transportReason: TransportReason = .notClassified,
        transportSigns: [TransportReason] = [], startLatitude: Double? = nil, startLongitude: Double? = nil,
        endLatitude: Double? = nil, endLongitude: Double? = nil, maxSpeed: Double? = nil
    ) {
        self.tripID = tripID
        self.startDate = startDate
        self.endDate = endDate
        self.distanceMetres = distanceMetres
        self.endReason = endReason
        self.transportMode = transportMode
        self.transportReason = transportReason
        self.transportSigns = transportSigns
        self.startLatitude = startLatitude
        self.startLongitude = startLongitude
        self.endLatitude = endLatitude
        self.endLongitude = endLongitude
        self.maxSpeed = maxSpeed
    }

    /// Whether the trip counts as driving: every mode but public transport.
    public var isDriving: Bool { transportMode.isDriving }

    /// Seconds.
    public var duration: Double { max(0, endDate - startDate) }
    /// Metres a second; zero for a trip of no duration.
    public var averageSpeed: Double { duration > 0 ? distanceMetres / duration : 0 }
}
