/// The trip in progress, and where it began.
extension TripEngine {
    struct ActiveTrip: Sendable, Equatable, Codable {
        var tripID: String
        var startDate: Double
        var lastMovement: Double
        var odometer: Odometer
        var ride = RideProfile()
        /// Where the trip began (the position at `startDate`) and the fix of `lastMovement`, where it ends; and the
        /// speed held so far. Optional: trips in checkpoints before them have none, and their end says nothing of it.
        var startPosition: Position?
        var lastMovingFix: AcceptedFix?
        var heldSpeed: HeldSpeed?
        /// How it is being driven, judged at its end (`tripBehaviour`); and whether a crash was suspected in it.
        var behaviour = DrivingBehaviour()
        var crashSuspected = false
    }

    /// A latitude and longitude.
    struct Position: Sendable, Equatable, Codable {
        var latitude: Double
        var longitude: Double

        init(_ fix: AcceptedFix) {
            latitude = fix.latitude
            longitude = fix.longitude
        }
    }
}

extension TripEngine.ActiveTrip {
    private enum CodingKeys: String, CodingKey {
        case tripID, startDate, lastMovement, odometer, ride, startPosition, lastMovingFix, heldSpeed, behaviour
        case crashSuspected
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tripID = try container.decode(String.self, forKey: .tripID)
        startDate = try container.decode(Double.self, forKey: .startDate)
        lastMovement = try container.decode(Double.self, forKey: .lastMovement)
        odometer = try container.decode(Odometer.self, forKey: .odometer)
        ride = try container.decodeIfPresent(RideProfile.self, forKey: .ride) ?? RideProfile()
        startPosition = try container.decodeIfPresent(TripEngine.Position.self, forKey: .startPosition)
        lastMovingFix = try container.decodeIfPresent(AcceptedFix.self, forKey: .lastMovingFix)
        heldSpeed = try container.decodeIfPresent(HeldSpeed.self, forKey: .heldSpeed)
        behaviour = try container.decodeIfPresent(DrivingBehaviour.self, forKey: .behaviour) ?? DrivingBehaviour()
        crashSuspected = try container.decodeIfPresent(Bool.self, forKey: .crashSuspected) ?? false
    }
}
