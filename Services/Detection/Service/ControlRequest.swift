import DetectionEngine
import RoadSaveModel

/// A control command (CONTRACT §7): `{"command": …, "app": …, "user": …, other arguments}`; `user` may be left out
/// to address every device of the application.
struct ControlRequest {
    enum Command: String, CaseIterable {
        case configure, startMonitoring, stopMonitoring, setAutoTripDetection, setDetectionMode, raiseTestCrash
    }

    var command: Command
    var app: String
    var user: String?
    var detectionMode: CrashDetectionMode?
    var shouldAutoDetectTrips: Bool?
    var enabled: Bool?

    struct Invalid: Error {
        var message: String
    }

    init(json bytes: [UInt8]) throws(Invalid) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw Invalid(message: "not JSON: \(error)")
        }
        guard case .object = value else { throw Invalid(message: "expected a JSON object") }
        guard case let .string(name)? = value["command"] else { throw Invalid(message: "command: missing") }
        guard let command = Command(rawValue: name) else {
            throw Invalid(message: "command: unknown \"\(name)\"; expected one of "
                + Command.allCases.map(\.rawValue).joined(separator: ", "))
        }
        guard case let .string(app)? = value["app"], !app.isEmpty else { throw Invalid(message: "app: missing") }
        self.command = command
        self.app = app
        switch value["user"] {
        case nil, .null?: user = nil
        case let .string(user)? where !user.isEmpty: self.user = user
        default: throw Invalid(message: "user: expected a non-empty string")
        }
        // `mode` for setDetectionMode, `detectionMode` as in the configuration; either is accepted.
        for key in ["detectionMode", "mode"] {
            if case let .string(text)? = value[key] {
                guard let parsed = CrashDetectionMode(rawValue: text) else {
                    throw Invalid(message: "\(key): unknown mode \"\(text)\"; expected all, crashOnly, tripOnly or disabled")
                }
                detectionMode = parsed
            }
        }
        if case let .bool(flag)? = value["shouldAutoDetectTrips"] { shouldAutoDetectTrips = flag }
        if case let .bool(flag)? = value["enabled"] { enabled = flag }
        if command == .setDetectionMode, detectionMode == nil {
            throw Invalid(message: "mode: missing (all, crashOnly, tripOnly or disabled)")
        }
        if command == .setAutoTripDetection, enabled == nil {
            throw Invalid(message: "enabled: missing (true or false)")
        }
    }
}

/// The reply to a control command: `{"ok": true, …}` or `{"ok": false, "error": …, "message": …}`.
enum ControlReply {
    static func ok(devices: [DeviceID], sessions: [DeviceSession]) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.add("ok", true)
        writer.add("devices", devices.count)
        let states = sessions.map { session -> String in
            var device = JSONObjectWriter()
            device.add("user", session.device.user)
            device.add("lifecycle", session.lifecycle.rawValue)
            device.add("detectionMode", session.detectionMode.rawValue)
            device.add("autoTripDetection", session.autoTripDetection)
            device.add("tripInProgress", session.isTripInProgress)
            return device.finish()
        }
        writer.add("states", raw: "[" + states.joined(separator: ",") + "]")
        return Array(writer.finish().utf8)
    }

    static func failure(_ code: String, _ message: String, device: DeviceID? = nil) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.add("ok", false)
        writer.add("error", code)
        writer.add("message", message)
        if let device { writer.add("user", device.user) }
        return Array(writer.finish().utf8)
    }
}
