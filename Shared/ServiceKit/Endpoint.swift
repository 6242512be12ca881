import CommandSettings
import Foundation
import Logging
import ZeroMQ

/// Checks of ZeroMQ endpoints given in configuration, so a typo is reported at start, not as a bind error later.
public enum Endpoint {
    /// `connecting`: the endpoint is one to connect to, so `*` is no host or port (`ZMQEndpoint`, the one check).
    public static func validate(
        _ endpoint: String, flag: String,
        connecting: Bool = false
    ) throws(CommandLineOptions.UsageError) -> String {
        if let problem = ZMQEndpoint.problem(endpoint, connecting: connecting) { throw .init("\(flag): \(problem)") }
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
