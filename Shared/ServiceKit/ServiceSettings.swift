import CommandSettings
import Foundation
import Logging

/// The kinds of setting the three services share, so each service's loader says only what is its own.
public enum ServiceSettings {
    /// `--log-level`, the same in every service.
    public static let logLevel = Setting<Log.Level>(
        flag: "--log-level", environment: "ROADSAVE_LOG_LEVEL", key: "logLevel", default: .info,
        shown: Log.Level.info.rawValue,
        help: "debug, info, warning or error"
    ) { text, _ throws(CommandLineOptions.UsageError) in try LogLevelSetting.parse(text) }

    /// `--data-dir`: the service's store, locked for the life of the process (`DataDirectorySetting`).
    public static func dataDirectory(key: String, default path: String, help: String) -> Setting<String> {
        Setting<String>(
            flag: "--data-dir", environment: "ROADSAVE_DATA_DIR", key: key, default: path, help: help, nonEmpty: true)
    }

    /// An endpoint the service binds, checked at start (`Endpoint.validate`).
    public static func bound(
        flag: String, environment: String, key: String, default endpoint: String,
        help: String
    ) -> Setting<String> {
        Setting<String>(flag: flag, environment: environment, key: key, default: endpoint, shown: endpoint, help: help)
        {
            text, flag throws(CommandLineOptions.UsageError) in try Endpoint.validate(text, flag: flag)
        }
    }

    /// An endpoint the service binds, or `none` (nil) for none.
    public static func boundOrNone(
        flag: String, environment: String, key: String, default endpoint: String,
        help: String
    ) -> Setting<String?> {
        Setting<String?>(flag: flag, environment: environment, key: key, default: endpoint, shown: endpoint, help: help)
        {
            text, flag throws(CommandLineOptions.UsageError) in
            text == "none" ? nil : try Endpoint.validate(text, flag: flag)
        }
    }

    /// Endpoints the service connects to, comma-separated (blanks around them and empty items ignored); at least
    /// one, or the error `none`.
    public static func connected(
        flag: String, environment: String, key: String, default endpoints: [String],
        help: String, none: String
    ) -> Setting<[String]> {
        Setting<[String]>(
            flag: flag, environment: environment, key: key, default: endpoints,
            shown: endpoints.joined(separator: ","), help: help
        ) { text, flag throws(CommandLineOptions.UsageError) in
            var list: [String] = []
            for part in text.split(separator: ",") {
                let item = part.trimmingCharacters(in: .whitespaces)
                guard !item.isEmpty else { continue }
                list.append(try Endpoint.validate(item, flag: flag, connecting: true))
            }
            guard !list.isEmpty else { throw .init(none) }
            return list
        }
    }
}
