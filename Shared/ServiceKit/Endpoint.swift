import Foundation
import RoadSaveModel

/// Checks of ZeroMQ endpoints given in configuration, so a typo is reported at start, not as a bind error later.
public enum Endpoint {
    public static func validate(_ endpoint: String, flag: String) throws(CommandLineOptions.UsageError) -> String {
        let schemes = ["tcp://", "ipc://", "inproc://"]
        guard let scheme = schemes.first(where: { endpoint.hasPrefix($0) }) else {
            throw .init("\(flag): \"\(endpoint)\" is not a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH or inproc://NAME)")
        }
        let rest = endpoint.dropFirst(scheme.count)
        guard !rest.isEmpty else { throw .init("\(flag): \"\(endpoint)\" has no address") }
        if scheme == "tcp://" {
            guard let colon = rest.lastIndex(of: ":"), !rest[..<colon].isEmpty else {
                throw .init("\(flag): \"\(endpoint)\" needs HOST:PORT")
            }
            let port = rest[rest.index(after: colon)...]
            guard port == "*" || (Int(port).map { (1...65535).contains($0) } ?? false) else {
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
