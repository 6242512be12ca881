import DetectionEngine
import ZeroMQ

/// Whether the operator key a control command came with may run it. Without keys (no allow-list) every command may.
enum ControlAccess {
    struct Refusal: Equatable {
        var code: String
        var message: String
    }

    /// Nil when the command may run. `key` is the allow-list name libzmq gave the message (ZAP User-Id).
    static func refusal(of request: ControlRequest, key: String?, allowList: CurveAllowList?) -> Refusal? {
        guard let allowList else { return nil }
        // A key removed from the list since its handshake is refused from the next command on.
        guard let key, let entry = allowList.entry(role: .operator, name: key) else {
            return Refusal(code: "forbidden", message: "operator key \"\(key ?? "?")\" is no longer in the allow-list")
        }
        guard entry.allows(application: request.app) else {
            return Refusal(code: "forbidden",
                           message: "operator key \"\(entry.name)\" may not control application \"\(request.app)\" "
                               + "(it is listed for \(entry.applicationsText))")
        }
        return nil
    }
}
