import DetectionEngine
import ZeroMQ

/// Whether the operator key a control command came with may run it. Without keys (no allow-list) every command may.
enum ControlAccess {
    struct Refusal: Equatable {
        var code: String
        var message: String
    }

    /// Nil when the command may run. `key`: the allow-list entry in force of the key the command's connection was
    /// admitted with, or why that key is refused now (`CurveAllowList.entry(for:role:)`); nil without keys.
    static func refusal(of request: ControlRequest, key: Result<CurveAllowList.Entry, CurveKeyRefusal>?) -> Refusal? {
        refusal(key) { entry in
            entry.allows(application: request.app)
                ? nil
                : "operator key \"\(entry.name)\" may not control application \"\(request.app)\" "
                    + "(it is listed for \(entry.applicationsText))"
        }
    }

    /// Nil when the operator command may run: it concerns every application, so a key limited to some may not.
    static func refusal(of command: OperatorCommand, key: Result<CurveAllowList.Entry, CurveKeyRefusal>?) -> Refusal? {
        refusal(key) { entry in
            entry.applications == nil
                ? nil
                : "operator key \"\(entry.name)\" is listed for \(entry.applicationsText) only; "
                    + "\(command.rawValue) concerns every application, so it needs a key listed for all (*)"
        }
    }

    /// No keys: allowed. A key removed or replaced since its handshake is refused from the next command on. A key
    /// in force: `forbidden` with the reason `entry` gives, if it gives one.
    private static func refusal(
        _ key: Result<CurveAllowList.Entry, CurveKeyRefusal>?,
        entry reason: (CurveAllowList.Entry) -> String?
    ) -> Refusal? {
        switch key {
        case nil: nil
        case .failure(let refusal): Refusal(code: "forbidden", message: refusal.message)
        case .success(let entry): reason(entry).map { Refusal(code: "forbidden", message: $0) }
        }
    }
}
