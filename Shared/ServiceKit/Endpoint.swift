import CommandSettings
import Foundation
import Logging

/// Checks of ZeroMQ endpoints given in configuration, so a typo is reported at start, not as a bind error later.
public enum Endpoint {
    /// `connecting`: the endpoint is one to connect to, so `*` is no host or port.
    public static func validate(
        _ endpoint: String, flag: String,
        connecting: Bool = false
    ) throws(CommandLineOptions.UsageError) -> String {
        let schemes = ["tcp://", "ipc://", "inproc://"]
        guard let scheme = schemes.first(where: { endpoint.hasPrefix($0) }) else {
            throw .init(
                "\(flag): \"\(endpoint)\" is not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH or inproc://NAME)")
        }
        let rest = endpoint.dropFirst(scheme.count)
        guard !rest.isEmpty else { throw .init("\(flag): \"\(endpoint)\" has no address") }
        if scheme == "tcp://" {
            guard let colon = rest.lastIndex(of: ":"), !rest[..<colon].isEmpty else {
                throw .init("\(flag): \"\(endpoint)\" needs HOST:PORT")
            }
            if connecting, rest[..<colon] == "*" {
                throw .init("\(flag): \"\(endpoint)\": a client needs a host to connect to, not *")
            }
            let port = rest[rest.index(after: colon)...]
            guard (port == "*" && !connecting) || (Int(port).map { (1...65535).contains($0) } ?? false) else {
                throw .init("\(flag): \"\(endpoint)\" has no valid port")
            }
        }
        return endpoint
    }

    /// The address a local client connects to for an endpoint a service binds (`tcp://*:5550` → `tcp://127.0.0.1:5550`).
    public static func connectable(_ bound: String) -> String {
        bound.replacingOccurrences(of: "tcp://*:", with: "tcp://127.0.0.1:")
            .replacingOccurrences(of: "tcp://0.0.0.0:", with: "tcp://127.0.0.1:")
    }
}

public enum LogLevelSetting {
    public static func parse(_ text: String) throws(CommandLineOptions.UsageError) -> Log.Level {
        guard let level = Log.Level(rawValue: text) else {
            throw .init("--log-level must be one of debug, info, warning, error, got \"\(text)\"")
        }
        return level
    }
}
