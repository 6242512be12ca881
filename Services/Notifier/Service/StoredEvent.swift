import RecordCodecs
import RoadSaveModel

/// An event as the notifier's store holds it: its position in the notifier's own stream (the third frame of every
/// PUB message, what catch-up asks after), its topic and its current-format JSON.
public struct StoredEvent: Sendable, Equatable {
    public var position: UInt64
    public var event: RoadSaveEvent
    /// `<event>.<app>.<user>` (PROTOCOL §7).
    public var topic: String
    /// The event in the current format, as stored.
    public var json: String

    public init(position: UInt64, event: RoadSaveEvent, topic: String, json: String) {
        self.position = position
        self.event = event
        self.topic = topic
        self.json = json
    }

    /// The topic of an event on the PUB socket and in catch-up.
    public static func topic(of event: RoadSaveEvent) -> String {
        "\(event.name).\(event.device.app).\(event.device.user)"
    }

    /// The event's JSON in `format` (the stored text for the current format).
    public func json(_ format: EventFormat) -> String {
        format == .current ? json : event.json(format)
    }
}
