import CommandSettings
import Foundation
import RecordCodecs

/// A service's settings from flags, the environment and a JSON file (`--config FILE` or `ROADSAVE_CONFIG`), in that
/// order of precedence, with defaults last (`SettingValues`); `describe()` shows the effective configuration with
/// secrets masked.
public struct ServiceConfiguration: Sendable {
    public let values: SettingValues
    public private(set) var helpRequested = false

    public static let configFlag = Setting<String?>.text(
        flag: "--config", environment: "ROADSAVE_CONFIG", key: "config",
        help: "JSON file of settings (keys as shown in brackets)")

    public init(
        specs: [any AnySetting], arguments: [String],
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CommandLineOptions.UsageError) {
        let all = specs + [Self.configFlag]
        let options = try CommandLineOptions(
            arguments, valued: SettingValues.valued(all),
            flags: SettingValues.switches(all).union(["--help", "-h"]))
        helpRequested = options.has("--help") || options.has("-h")
        guard options.positional.isEmpty else {
            throw .init("unexpected argument \"\(options.positional[0])\"")
        }
        var file: [String: String] = [:]
        if let path = options.string(Self.configFlag.flag) ?? environment[Self.configFlag.environment], !helpRequested {
            file = try Self.readFile(path, specs: specs)
        }
        values = SettingValues(specs, options: options, environment: environment, file: file)
    }

    /// The setting's value, typed (see `SettingValues.value`).
    public func value<Value>(_ setting: Setting<Value>) throws(CommandLineOptions.UsageError) -> Value {
        try values.value(setting)
    }

    /// The effective configuration, one `name=value (source)` per line, secrets masked.
    public func describe() -> String { values.describe() }

    /// The options part of a usage text, with the environment variable and file key of each.
    public static func optionsHelp(_ specs: [any AnySetting]) -> String {
        SettingHelp.service(specs + [configFlag])
    }

    /// The file's settings by their keys (one given by a former key is under its key now).
    private static func readFile(_ path: String, specs: [any AnySetting]) throws(CommandLineOptions.UsageError)
        -> [String: String]
    {
        let known = Set(specs.map(\.key))
        var renamed: [String: String] = [:]
        for spec in specs { for former in spec.formerKeys { renamed[former] = spec.key } }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .init("--config: cannot read \(path)")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse([UInt8](data))
        } catch {
            throw .init("--config \(path): not JSON (\(error))")
        }
        guard case .object(let members) = value else { throw .init("--config \(path): expected a JSON object") }
        var result: [String: String] = [:]
        for (given, member) in members {
            let key = renamed[given] ?? given
            guard known.contains(key) else {
                throw .init(
                    "--config \(path): unknown setting \"\(given)\"; known: \(known.sorted().joined(separator: ", "))")
            }
            if key != given, members.contains(where: { $0.0 == key }) {
                throw .init("--config \(path): \"\(given)\" is the former name of \"\(key)\": give one of them")
            }
            switch member {
            case .string(let text): result[key] = text
            case .number(let number): result[key] = number == number.rounded() ? String(Int64(number)) : String(number)
            case .bool(let flag): result[key] = flag ? "true" : "false"
            case .array(let items):
                // Lists (applications, webhooks) are kept as comma-separated text.
                var parts: [String] = []
                for item in items {
                    guard case .string(let text) = item else {
                        throw .init("--config \(path): \(key) must hold strings")
                    }
                    parts.append(text)
                }
                result[key] = parts.joined(separator: ",")
            default: throw .init("--config \(path): \(key) has an unusable value (\(member.typeName))")
            }
        }
        return result
    }
}
