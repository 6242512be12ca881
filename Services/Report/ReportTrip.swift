import RoadSaveModel

/// One trip of a device, from its `tripDidStart` and `tripDidEnd` events (either may be missing from an events
/// file: a trip still open when the events were taken has no end).
public struct ReportTrip: Sendable, Equatable {
    public var tripID: String
    public var startDate: Double
    /// The end event's fields; nil while the trip is open.
    public var info: TripInfo?
    /// The latest event of the trip (the end when there is one): its fields are the GeoJSON feature's properties.
    public var event: RoadSaveEvent
    /// How it was driven (its `tripBehaviour`), once the trip has ended and been judged.
    public var behaviour: TripBehaviour?

    public init(
        tripID: String, startDate: Double, info: TripInfo?, event: RoadSaveEvent, behaviour: TripBehaviour? = nil
    ) {
        self.tripID = tripID
        self.startDate = startDate
        self.info = info
        self.event = event
        self.behaviour = behaviour
    }

    /// The end of the trip, or `lastSeen` (the device's last record) while it is open.
    public func endDate(lastSeen: Double) -> Double { info?.endDate ?? max(startDate, lastSeen) }
}
