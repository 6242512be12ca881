import Foundation
import RoadSaveTestKit

/// Records of one device (PROTOCOL §2), written as a gateway would record them: one fix a second, positions that
/// follow the speeds along a heading, a sequence number per record.
struct Drive {
    let app: String
    let user: String
    private(set) var t: Double
    private(set) var latitude: Double
    private(set) var longitude: Double
    let heading: Double
    private(set) var seq = 0
    private(set) var records: [[String: Any]] = []
    /// The time of the last fix at movement speed (≥ 2 m/s): where a trip's `endDate` must be.
    private(set) var lastMovement: Double?

    /// Starts `minutesAgo` before now (whole seconds), from Cape Town.
    init(
        app: String, user: String, minutesAgo: Double = 10, latitude: Double = -33.9249, longitude: Double = 18.4241,
        heading: Double = 90
    ) {
        self.app = app
        self.user = user
        t = (Date().timeIntervalSince1970 - minutesAgo * 60).rounded(.down)
        self.latitude = latitude
        self.longitude = longitude
        self.heading = heading
    }

    mutating func add(_ kind: String, _ fields: [String: Any] = [:]) {
        var record: [String: Any] = ["kind": kind, "app": app, "user": user, "seq": seq, "t": t]
        record.merge(fields) { $1 }
        records.append(record)
        seq += 1
    }

    mutating func activity(_ activity: String, _ confidence: String = "high") {
        add("activity", ["activity": activity, "confidence": confidence])
    }

    private mutating func move(_ metres: Double) {
        let radius = 6_371_008.8
        let heading = self.heading * .pi / 180
        latitude += metres * cos(heading) / radius * 180 / .pi
        longitude += metres * sin(heading) / (radius * cos(latitude * .pi / 180)) * 180 / .pi
    }

    private mutating func fix(_ speed: Double) {
        add(
            "location",
            [
                "lat": (latitude * 1e7).rounded() / 1e7, "lon": (longitude * 1e7).rounded() / 1e7,
                "speed": (speed * 100).rounded() / 100, "course": heading, "hacc": 5,
            ])
        if speed >= 2 { lastMovement = t }
    }

    mutating func drive(_ seconds: Int, speed: Double) {
        for _ in 0..<seconds {
            move(speed)
            t += 1
            fix(speed)
        }
    }

    mutating func ramp(from v0: Double, to v1: Double, seconds: Int) {
        for i in 1...seconds {
            let v = v0 + (v1 - v0) * Double(i) / Double(seconds)
            move(v)
            t += 1
            fix(v)
        }
    }

    mutating func stand(_ seconds: Int) {
        for _ in 0..<seconds {
            t += 1
            fix(0)
        }
    }

    var ndjson: String { records.map(jsonLine).joined(separator: "\n") + "\n" }

    func write() throws -> URL { try temporaryFile(ndjson, suffix: ".ndjson") }

    /// A whole short trip: high automotive, 50 s of driving at 13 m/s (a trip starts), then standing still long
    /// enough for the tests' 5 s stop delay to end it within the recording.
    static func commute(app: String, user: String) -> Drive {
        var drive = Drive(app: app, user: user)
        drive.activity("automotive", "high")
        drive.ramp(from: 2.5, to: 13, seconds: 6)
        drive.drive(44, speed: 13)
        drive.ramp(from: 13, to: 0, seconds: 4)
        drive.activity("stationary", "high")
        drive.stand(12)
        return drive
    }

    /// The smallest drive that starts a trip: what `Services.waitUntilFlowing` sends.
    static func probe(app: String, user: String) -> Drive {
        var drive = Drive(app: app, user: user, minutesAgo: 5)
        drive.activity("automotive", "high")
        drive.drive(40, speed: 10)
        return drive
    }
}

/// The recorded crash of the CLI tests' fixture (`Tests/CLITests/Fixtures/morning.ndjson`): `user-crash` of
/// `demo-app` drives 3 minutes at 15 m/s, hits something at 45 g, stops. Its records as the fixture holds them
/// (some out of order, as a gateway delivers them), and the events `roadsave replay` gave for it, reviewed by hand
/// (`morning.expected.ndjson`): the services must give the same ones.
enum RecordedCrash {
    static let fixtures = TestPaths.repository.appendingPathComponent("Tests/CLITests/Fixtures")
    static let user = "user-crash"
    static let app = "demo-app"

    /// The device's records, as an NDJSON file of their own.
    static func file() throws -> URL {
        let text = try String(contentsOf: fixtures.appendingPathComponent("morning.ndjson"), encoding: .utf8)
        let lines = text.split(separator: "\n").filter { $0.contains("\"user\":\"\(user)\"") }
        return try temporaryFile(lines.joined(separator: "\n") + "\n", suffix: ".ndjson")
    }

    /// The reviewed events of the device, by event name.
    static func expected() throws -> [String: [String: Any]] {
        let text = try String(contentsOf: fixtures.appendingPathComponent("morning.expected.ndjson"), encoding: .utf8)
        var events: [String: [String: Any]] = [:]
        for line in text.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object.string("user") == user, let name = object.string("event")
            else { continue }
            events[name] = object
        }
        return events
    }
}

/// ISO 8601 UTC with milliseconds, as events carry dates (PROTOCOL §3).
func iso8601(_ seconds: Double) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    formatter.timeZone = TimeZone(identifier: "UTC")
    return formatter.string(from: Date(timeIntervalSince1970: seconds))
}
