import RecordCodecs
import RoadSaveModel

/// A control command (PROTOCOL §7): `{"command": …, "app": …, "user": …, other arguments}`; `user` may be left out
/// to address every device of the application. Codable, so a shell can keep the commands it applied in its input
/// log and give them to the fleet again on recovery.
public struct ControlRequest: Sendable, Equatable, Codable {
    public enum Command: String, Sendable, Equatable, Codable, CaseIterable {
        case configure, startMonitoring, stopMonitoring, setAutoTripDetection, setDetectionMode, raiseTestCrash
    }

    public var command: Command
    public var app: String
    /// nil: every device of the application known to the fleet.
    public var user: String?
    public var detectionMode: CrashDetectionMode?
    public var shouldAutoDetectTrips: Bool?
    public var enabled: Bool?
    /// raiseTestCrash: send its `crashFollowUp` too (test crashes have none unless asked).
    public var followUp: Bool?

    /// What is wrong with a request; the message names the field.
    public struct Invalid: Error, Sendable, Equatable {
        public var message: String

        public init(message: String) {
            self.message = message
        }
    }

    public init(
        command: Command, app: String, user: String? = nil, detectionMode: CrashDetectionMode? = nil,
        shouldAutoDetectTrips: Bool? = nil, enabled: Bool? = nil, followUp: Bool? = nil
    ) {
        self.command = command
        self.app = app
        self.user = user
        self.detectionMode = detectionMode
        self.shouldAutoDetectTrips = shouldAutoDetectTrips
        self.enabled = enabled
        self.followUp = followUp
    }

    public init(json bytes: [UInt8]) throws(Invalid) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw Invalid(message: "not JSON: \(error)")
        }
        guard case .object = value else { throw Invalid(message: "expected a JSON object") }
        guard case .string(let name)? = value["command"] else { throw Invalid(message: "command: missing") }
        guard let command = Command(rawValue: name) else {
            throw Invalid(
                message: "command: unknown \"\(name)\"; expected one of "
                    + (Command.allCases.map(\.rawValue) + OperatorCommand.allCases.map(\.rawValue)).joined(
                        separator: ", "))
        }
        guard case .string(let app)? = value["app"], !app.isEmpty else { throw Invalid(message: "app: missing") }
        self.command = command
        self.app = app
        switch value["user"] {
        case nil, .null?: user = nil
        case .string(let user)? where !user.isEmpty: self.user = user
        default: throw Invalid(message: "user: expected a non-empty string")
        }
        // `mode` for setDetectionMode, `detectionMode` as in the configuration; either is accepted.
        for key in ["detectionMode", "mode"] {
            if case .string(let text)? = value[key] {
                guard let parsed = CrashDetectionMode(rawValue: text) else {
                    throw Invalid(
                        message: "\(key): unknown mode \"\(text)\"; expected all, crashOnly, tripOnly or disabled")
                }
                detectionMode = parsed
            }
        }
        if case .bool(let flag)? = value["shouldAutoDetectTrips"] { shouldAutoDetectTrips = flag }
        if case .bool(let flag)? = value["enabled"] { enabled = flag }
        switch value["followUp"] {
        case nil, .null?: break
        case .bool(let flag)?: followUp = flag
        default: throw Invalid(message: "followUp: expected true or false")
        }
        if command == .setDetectionMode, detectionMode == nil {
            throw Invalid(message: "mode: missing (all, crashOnly, tripOnly or disabled)")
        }
        if command == .setAutoTripDetection, enabled == nil {
            throw Invalid(message: "enabled: missing (true or false)")
        }
    }

    /// The command runs the startup guard, which needs a settings fetch: the shell fetches the application's
    /// settings first and passes the result to `DeviceFleet.control`.
    public var needsSettings: Bool {
        command == .startMonitoring || (command == .setAutoTripDetection && enabled == true)
    }
}

/// What a device looks like after a control command, for the reply.
public struct ControlDeviceState: Sendable, Equatable {
    public var device: DeviceID
    public var lifecycle: DeviceSession.Lifecycle
    public var detectionMode: CrashDetectionMode
    public var autoTripDetection: Bool
    public var tripInProgress: Bool

    public init(_ session: DeviceSession) {
        device = session.device
        lifecycle = session.lifecycle
        detectionMode = session.detectionMode
        autoTripDetection = session.autoTripDetection
        tripInProgress = session.isTripInProgress
    }
}

/// How a control command ended.
public enum ControlOutcome: Sendable, Equatable {
    /// Applied to every target; their states afterwards, in the order they were addressed.
    case ok(devices: [DeviceID], states: [ControlDeviceState])
    /// Refused: `code` is the stable error code (`noDevices`, `notConfigured`, …); `device` the one that refused.
    case failure(code: String, message: String, device: DeviceID?)

    /// The reply on the wire.
    public var reply: [UInt8] {
        switch self {
        case .ok(let devices, let states): ControlReply.ok(devices: devices, states: states)
        case .failure(let code, let message, let device): ControlReply.failure(code, message, device: device)
        }
    }
}

/// The reply to a control command: `{"ok": true, "devices": N, "states": […]}` or
/// `{"ok": false, "error": …, "message": …, "user": …}`.
public enum ControlReply {
    public static func ok(devices: [DeviceID], states: [ControlDeviceState]) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.add("ok", true)
        writer.add("devices", devices.count)
        let states = states.map { state -> String in
            var device = JSONObjectWriter()
            device.add("user", state.device.user)
            device.add("lifecycle", state.lifecycle.rawValue)
            device.add("detectionMode", state.detectionMode.rawValue)
            device.add("autoTripDetection", state.autoTripDetection)
            device.add("tripInProgress", state.tripInProgress)
            return device.finish()
        }
        writer.add("states", raw: "[" + states.joined(separator: ",") + "]")
        return Array(writer.finish().utf8)
    }

    public static func failure(_ code: String, _ message: String, device: DeviceID? = nil) -> [UInt8] {
        var writer = JSONObjectWriter()
        writer.add("ok", false)
        writer.add("error", code)
        writer.add("message", message)
        if let device { writer.add("user", device.user) }
        return Array(writer.finish().utf8)
    }
}
