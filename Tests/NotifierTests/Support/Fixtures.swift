import Foundation
import Logging
import RoadSaveModel
import Wire

/// Events, folders and a log for the notifier's tests.
enum Fixtures {
    static let app = "app-1"

    static func tripStart(_ user: String, trip: String, app: String = Fixtures.app, at time: Double = 1_700_000_000)
        -> RoadSaveEvent
    {
        RoadSaveEvent(
            device: DeviceID(app: app, user: user), body: .tripDidStart(TripStartInfo(tripID: trip, startDate: time)))
    }

    static func tripEnd(_ user: String, trip: String, app: String = Fixtures.app, at time: Double = 1_700_000_600)
        -> RoadSaveEvent
    {
        RoadSaveEvent(
            device: DeviceID(app: app, user: user),
            body: .tripDidEnd(
                TripInfo(
                    tripID: trip, startDate: time - 600, endDate: time, distanceMetres: 5432.1, endReason: .stopDelay)))
    }

    static func crash(_ user: String, crash: String, app: String = Fixtures.app, at time: Double = 1_700_000_300)
        -> RoadSaveEvent
    {
        RoadSaveEvent(
            device: DeviceID(app: app, user: user),
            body: .crashDetected(
                CrashInfo(
                    crashID: crash, confidence: .high, detectedAt: time, latitude: -33.9248685, longitude: 18.4240553,
                    isTest: false)))
    }

    /// Start, crash, end of one trip.
    static func journey(_ user: String, _ number: Int, app: String = Fixtures.app) -> [RoadSaveEvent] {
        let base = 1_700_000_000 + Double(number) * 3600
        return [
            tripStart(user, trip: "\(user)-trip-\(number)", app: app, at: base),
            crash(user, crash: "\(user)-crash-\(number)", app: app, at: base + 300),
            tripEnd(user, trip: "\(user)-trip-\(number)", app: app, at: base + 600),
        ]
    }

    /// Events with their MessagePack bodies, as the store takes them.
    static func bodies(_ events: [RoadSaveEvent]) -> [(event: RoadSaveEvent, body: [UInt8])] {
        events.map { ($0, EventBody.encode($0)) }
    }

    /// A fresh folder under the temporary directory.
    static func folder() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-notifier-\(UUID().uuidString)"
        ).path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}

let testLog = Log(category: "notifier-tests", minimumLevel: .error, timestamps: false)
