/// A delegate-equivalent event of one device (PROTOCOL §3).
public struct RoadSaveEvent: Sendable, Equatable {
    public enum Body: Sendable, Equatable {
        case tripDidStart(TripStartInfo)
        case tripDidEnd(TripInfo)
        case crashDetected(CrashInfo)
        /// What happened after a reported crash (an extension of the brief's delegate: `crashDidFollowUp`).
        case crashFollowUp(CrashFollowUpInfo)
        /// How a trip was driven, after its `tripDidEnd` (an extension of the brief's delegate: `tripWasScored`).
        case tripBehaviour(TripBehaviour)
    }

    public var device: DeviceID
    public var body: Body

    public init(device: DeviceID, body: Body) {
        self.device = device
        self.body = body
    }

    /// Every event's name, in the order of `Body`.
    public static let names = ["tripDidStart", "tripDidEnd", "crashDetected", "crashFollowUp", "tripBehaviour"]

    /// The event's name, as the delegate method.
    public var name: String {
        switch body {
        case .tripDidStart: "tripDidStart"
        case .tripDidEnd: "tripDidEnd"
        case .crashDetected: "crashDetected"
        case .crashFollowUp: "crashFollowUp"
        case .tripBehaviour: "tripBehaviour"
        }
    }

    /// Unique per event and the same on every redelivery or replay: derived from what the event is about.
    public var eventID: String {
        switch body {
        case .tripDidStart(let info): StableID.make("event", name, device.app, device.user, info.tripID)
        case .tripDidEnd(let info): StableID.make("event", name, device.app, device.user, info.tripID)
        case .crashDetected(let info): StableID.make("event", name, device.app, device.user, info.crashID)
        case .crashFollowUp(let info): StableID.make("event", name, device.app, device.user, info.crashID)
        case .tripBehaviour(let info): StableID.make("event", name, device.app, device.user, info.tripID)
        }
    }

    /// When the event happened in the device's time: the trip's start or end, the impact, or the end of the time a
    /// follow-up watched, or the end of the trip a behaviour judges.
    public var time: Double {
        switch body {
        case .tripDidStart(let info): info.startDate
        case .tripDidEnd(let info): info.endDate
        case .crashDetected(let info): info.detectedAt
        case .crashFollowUp(let info): info.observedUntil
        case .tripBehaviour(let info): info.endDate
        }
    }

    /// Calls the matching delegate method.
    public func deliver(to delegate: some RoadSaveDelegate) {
        switch body {
        case .tripDidStart(let info): delegate.tripDidStart(info)
        case .tripDidEnd(let info): delegate.tripDidEnd(info)
        case .crashDetected(let info): delegate.crashDetected(info)
        case .crashFollowUp(let info): delegate.crashDidFollowUp(info)
        case .tripBehaviour(let info): delegate.tripWasScored(info)
        }
    }
}
