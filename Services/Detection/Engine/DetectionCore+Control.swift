import Logging
import RoadSaveModel

/// When a control command is taken (its settings fetched first if it needs them), and its audit line.
extension DetectionCore {
    // MARK: Control

    /// A command taken now: the startup guard's settings fetched first when it needs them.
    mutating func handle(
        _ command: ControlCommand, at time: DetectionTime, evicted: inout some EvictedDeviceStore,
        into actions: inout [DetectionCoreAction]
    ) {
        guard command.request.needsSettings else {
            execute(command, fetch: nil, at: time, evicted: &evicted, into: &actions)
            return
        }
        nextCommandNumber += 1
        waitingCommands[nextCommandNumber] = command
        call(.commandSettings(waiting: nextCommandNumber, app: command.request.app), into: &actions)
    }

    mutating func execute(
        _ command: ControlCommand, fetch: SettingsFetch?, at time: DetectionTime,
        evicted: inout some EvictedDeviceStore, into actions: inout [DetectionCoreAction]
    ) {
        guard case .live = phase else {
            actions.append(
                .reply(command.target, ControlReply.failure("stopping", "the detection service is shutting down")))
            return
        }
        let request = command.request
        pendingInputs.append(.control(request: command.text, fetch: fetch, now: time.wall))
        bringBack(for: request, evicted: &evicted, into: &actions)
        let (outcome, fleetActions) = fleet.control(request, now: time.wall, fetch: fetch)
        perform(fleetActions, into: &actions)
        actions.append(
            .log(.info, "control command", Self.audit(request, key: command.target.key, result: outcome.summary)))
        // The reply leaves once the command is stored.
        pendingReplies.append((command.target, outcome.reply))
        commit(at: time, into: &actions)
    }

    /// The audit line's fields of a command: the operator key's name, the command, the application masked, the
    /// user, the result. Never the key itself.
    public static func audit(_ request: ControlRequest?, key: String?, result: String) -> [(String, String)] {
        [
            ("key", key ?? "-"), ("command", request?.command.rawValue ?? "?"),
            ("app", request.map { Secret.mask($0.app) } ?? "?"), ("user", request.map { $0.user ?? "*" } ?? "?"),
            ("result", result),
        ]
    }
}

extension ControlOutcome {
    /// For the log line of a command: `ok (N devices)` or the error code.
    public var summary: String {
        switch self {
        case .ok(let devices, _): "ok (\(devices.count) devices)"
        case .failure(let code, _, _): code
        }
    }
}
