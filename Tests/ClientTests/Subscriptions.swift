import Foundation
import RoadSaveClient
import RoadSaveTestKit
import SystemKit

/// A subscription of the library run in a task of its own, its deliveries and its end kept for the test to look at.
final class Collector: Sendable {
    private struct State {
        var deliveries: [RoadSaveSubscriber.Delivery] = []
        var error: RoadSaveClientError?
        var ended = false
    }

    private let state = Locked(State())
    private let task: Task<Void, Never>

    init(_ subscriber: RoadSaveSubscriber, after position: UInt64?) {
        let state = state
        task = Task {
            do throws(RoadSaveClientError) {
                for try await delivery in subscriber.deliveries(after: position) {
                    state.withLock { $0.deliveries.append(delivery) }
                }
            } catch {
                state.withLock { $0.error = error }
            }
            state.withLock { $0.ended = true }
        }
    }

    var deliveries: [RoadSaveSubscriber.Delivery] { state.withLock { $0.deliveries } }
    var error: RoadSaveClientError? { state.withLock { $0.error } }
    var ended: Bool { state.withLock { $0.ended } }
    var lastPosition: UInt64? { deliveries.last?.position }

    /// Ends the subscription (its task cancelled) and waits until it has.
    func stop() async {
        task.cancel()
        _ = await task.value
    }

    /// The key of each delivery's event (`Fleet.key`), in order.
    var keys: [String] { deliveries.compactMap(\.event).map(Fleet.key) }
}

/// Events as the fake feed serves them (the MessagePack body fields of `EventBody.encode`), and how a test knows
/// them again in deliveries.
enum Fleet {
    /// Per device, journeys of start, crash, end; devices interleaved; `app` for every device but those of `other`.
    static func events(devices: Int, journeys: Int, app: String = "demo-app", other: [Int: String] = [:])
        -> [[String: Any]]
    {
        var perDevice: [[[String: Any]]] = []
        for device in 0..<devices {
            let user = "driver-\(device)"
            let application = other[device] ?? app
            var events: [[String: Any]] = []
            for journey in 0..<journeys {
                let trip = "\(user)-trip-\(journey)"
                let start = 1_700_000_000.5 + Double(journey * 3600 + device)
                events.append([
                    "event": "tripDidStart", "app": application, "user": user, "tripID": trip, "startDate": start,
                ])
                events.append(crash(application, user: user, id: "\(user)-crash-\(journey)", at: start + 300.25))
                events.append([
                    "event": "tripDidEnd", "app": application, "user": user, "tripID": trip, "startDate": start,
                    "endDate": start + 600.5, "distanceMetres": 5432.1, "endReason": "stopDelay",
                ])
            }
            perDevice.append(events)
        }
        var all: [[String: Any]] = []
        for index in 0..<(journeys * 3) {
            for device in perDevice { all.append(device[index]) }
        }
        return all
    }

    static func crash(_ app: String, user: String, id: String, at time: Double) -> [String: Any] {
        [
            "event": "crashDetected", "app": app, "user": user, "crashID": id, "confidence": "high",
            "detectedAt": time, "latitude": -33.9248685, "longitude": 18.4240553, "isTest": false,
        ]
    }

    /// What identifies an event of the feed.
    static func key(_ event: [String: Any]) -> String {
        let id = (event["tripID"] as? String) ?? (event["crashID"] as? String) ?? "?"
        return "\(event["event"] as? String ?? "?").\(event["user"] as? String ?? "?").\(id)"
    }

    /// The same for a delivered event.
    static func key(_ event: RoadSaveEvent) -> String {
        let id: String
        switch event.body {
        case .tripDidStart(let info): id = info.tripID
        case .tripDidEnd(let info): id = info.tripID
        case .crashDetected(let info): id = info.crashID
        case .crashFollowUp(let info): id = info.crashID
        case .tripBehaviour(let info): id = info.tripID
        }
        return "\(event.name).\(event.device.user).\(id)"
    }

    /// The keys of one device's events, in order.
    static func ofDevice(_ keys: [String], _ user: String) -> [String] {
        keys.filter { $0.contains(".\(user).") }
    }
}
