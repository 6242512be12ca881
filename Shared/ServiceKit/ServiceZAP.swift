import Logging
import ZeroMQ

/// The CurveZMQ guard of a service: one ZAP handler on the service's reactor (before any socket it protects is bound,
/// so no client gets in unchecked), every refusal logged, and the allow-list re-read on SIGHUP (a list that does not
/// load leaves the previous one in force).
public enum ServiceZAP {
    /// Makes `socket` a CurveZMQ server for `role` when the service has keys, starting the service's handler on first
    /// use (call before the socket is bound, so no client gets in unchecked). Without keys it logs that the socket's
    /// `clients` connect in plaintext, since anyone who reaches the port gets in.
    public static func secure(
        _ socket: ZMQSocket, role: CurveRole, keys: CurveServerKeys?, handler: inout ZAPHandler?,
        loop: ReactorLoop, reactor: Reactor, log: Log, clients: String,
        fields: KeyValuePairs<String, String> = [:], unlimitedKeysOnly: String? = nil
    ) throws {
        guard let keys else {
            log.warning(
                "no CurveZMQ keys: \(clients) connect in plaintext and unauthenticated (loopback only, or --insecure)",
                fields)
            return
        }
        let zap = try handler ?? start(loop: loop, reactor: reactor, keys: keys, role: role, log: log)
        handler = zap
        try zap.secure(socket, role: role, secretKey: keys.secretKey, unlimitedKeysOnly: unlimitedKeysOnly)
    }

    /// Starts the handler; `role` is the role whose keys the log counts (the socket's own role).
    public static func start(
        loop: ReactorLoop, reactor: Reactor, keys: CurveServerKeys, role: CurveRole,
        log: Log
    ) throws -> ZAPHandler {
        let zap = try ZAPHandler(loop: loop, allowListPath: keys.allowListPath) { [log] decision in
            if decision.accepted {
                log.debug("key accepted", ["role": decision.role, "key": decision.who, "address": decision.address])
            } else {
                log.warning(
                    "connection refused",
                    [
                        "role": decision.role, "key": decision.who,
                        "address": decision.address, "reason": decision.reason,
                    ])
            }
        }
        // The handler lives in the loop's values, where the reload (posted from the signal thread) finds it.
        loop.setValue(zap)
        ReloadRequests.onReload {
            reactor.post { loop in
                guard let zap = loop.value(ZAPHandler.self) else { return }
                do {
                    let list = try zap.reload()
                    log.info(
                        "allow-list re-read",
                        ["allow": zap.allowListPath, "\(role.rawValue)Keys": String(list.count(role: role))])
                } catch {
                    log.error("allow-list not re-read; the previous one stays in force", ["error": "\(error)"])
                }
            }
        }
        log.info(
            "CurveZMQ on",
            [
                "publicKey": keys.publicKey, "allow": keys.allowListPath,
                "\(role.rawValue)Keys": String(zap.allowList.count(role: role)),
            ])
        return zap
    }
}
