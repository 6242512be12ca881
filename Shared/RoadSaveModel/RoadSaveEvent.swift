/// A delegate-equivalent event of one device (PROTOCOL §3).
public struct RoadSaveEvent: Sendable, Equatable {
    public enum Body: Sendable, Equatable {
        case tripDidStart(TripStartInfo)
        case tripDidEnd(TripInfo)
        case crashDetected(CrashInfo)
    }

    public var device: DeviceID
    public var body: Body

    public init(device: DeviceID, body: Body) {
        self.device = device
        self.body = body
    }

    /// The event's name, as the delegate method.
    public var name: String {
        switch body {
        case .tripDidStart: "tripDidStart"
        case .tripDidEnd: "tripDidEnd"
        case .crashDetected: "crashDetected"
        }
    }

    /// Unique per event and the same on every redelivery or replay: derived from what the event is about.
    public var eventID: String {
        switch body {
        case let .tripDidStart(info): StableID.make("event", name, device.app, device.user, info.tripID)
        case let .tripDidEnd(info): StableID.make("event", name, device.app, device.user, info.tripID)
        case let .crashDetected(info): StableID.make("event", name, device.app, device.user, info.crashID)
        }
    }

    /// When the event happened in the device's time: the trip's start or end, or the impact.
    public var time: Double {
        switch body {
        case let .tripDidStart(info): info.startDate
        case let .tripDidEnd(info): info.endDate
        case let .crashDetected(info): info.detectedAt
        }
    }

    /// Calls the matching delegate method.
    public func deliver(to delegate: some RoadSaveDelegate) {
        switch body {
        case let .tripDidStart(info): delegate.tripDidStart(info)
        case let .tripDidEnd(info): delegate.tripDidEnd(info)
        case let .crashDetected(info): delegate.crashDetected(info)
        }
    }
}

/// The two wire formats of events.
public enum EventFormat: String, Sendable, CaseIterable {
    /// The 4.0 field names (PROTOCOL §3).
    case current
    /// The 3.x dictionary keys of the brief's migration tables, for consumers still on 3.x.
    case legacy
}

extension RoadSaveEvent {
    /// One line of JSON in the given format.
    public func json(_ format: EventFormat = .current) -> String {
        var writer = JSONObjectWriter()
        writer.add("event", name)
        writer.add("eventID", eventID)
        writer.add("app", device.app)
        writer.add("user", device.user)
        switch (body, format) {
        case let (.tripDidStart(info), .current):
            writer.add("tripID", info.tripID)
            writer.add("startDate", ISO8601.string(fromSeconds: info.startDate))
        case (.tripDidStart, .legacy):
            // 3.x's tripDidStart carried no data.
            break
        case let (.tripDidEnd(info), _):
            writer.add("tripID", info.tripID)
            writer.add("startDate", ISO8601.string(fromSeconds: info.startDate))
            writer.add("endDate", ISO8601.string(fromSeconds: info.endDate))
            writer.add("distanceMetres", info.distanceMetres, decimals: 1)
            if format == .current {
                writer.add("duration", info.duration, decimals: 3)
                writer.add("averageSpeed", info.averageSpeed, decimals: 2)
                writer.add("endReason", info.endReason.rawValue)
                writer.add("transportMode", info.transportMode.rawValue)
                writer.add("transportReason", info.transportReason.rawValue)
                if !info.transportSigns.isEmpty {
                    writer.add("transportSigns", raw: "[" + info.transportSigns.map { "\"\($0.rawValue)\"" }
                        .joined(separator: ",") + "]")
                }
                // Written when known: events kept from before them stay as they were.
                for (key, value, decimals) in [("startLatitude", info.startLatitude, 7), ("startLongitude", info.startLongitude, 7),
                                               ("endLatitude", info.endLatitude, 7), ("endLongitude", info.endLongitude, 7),
                                               ("maxSpeed", info.maxSpeed, 2)] {
                    if let value { writer.add(key, value, decimals: decimals) }
                }
            }
        case let (.crashDetected(info), .current):
            writer.add("crashID", info.crashID)
            writer.add("confidence", info.confidence.rawValue)
            writer.add("detectedAt", ISO8601.string(fromSeconds: info.detectedAt))
            writer.add("latitude", info.latitude, decimals: 7)
            writer.add("longitude", info.longitude, decimals: 7)
            writer.add("isTest", info.isTest)
        case let (.crashDetected(info), .legacy):
            writer.add("crashID", info.crashID)
            writer.add("timestamp", ISO8601.string(fromSeconds: info.detectedAt))
            writer.add("latitude", info.latitude, decimals: 7)
            writer.add("longitude", info.longitude, decimals: 7)
            // 3.x spelled confidences capitalised ("None" was the suppressed verdict).
            writer.add("confidence", info.confidence.rawValue.prefix(1).uppercased() + info.confidence.rawValue.dropFirst())
            // Not a 3.x key, but a test crash must never look like a real one to any consumer.
            if info.isTest { writer.add("isTest", true) }
        }
        return writer.finish()
    }
}
