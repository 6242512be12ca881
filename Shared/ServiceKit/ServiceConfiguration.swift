import Foundation
import RoadSaveModel

/// One configuration setting of a service: where it comes from and how it is shown.
public struct SettingSpec: Sendable {
    public var flag: String              // "--gateway-endpoint"
    public var environment: String       // "ROADSAVE_GATEWAY_ENDPOINT"
    public var key: String               // key in the JSON config file: "gatewayEndpoint"
    public var defaultValue: String?
    public var help: String
    public var isSecret: Bool
    public var isSwitch: Bool

    public init(flag: String, environment: String, key: String, default defaultValue: String? = nil, help: String,
                secret: Bool = false, switch isSwitch: Bool = false) {
        self.flag = flag
        self.environment = environment
        self.key = key
        self.defaultValue = defaultValue
        self.help = help
        self.isSecret = secret
        self.isSwitch = isSwitch
    }
}

/// Settings from flags, the environment and a JSON file (`--config FILE` or `ROADSAVE_CONFIG`), in that order of
/// precedence, with defaults last. Each value remembers where it came from, so `describe()` can show the effective
/// configuration with secrets masked.
public struct ServiceConfiguration: Sendable {
    public enum Source: String, Sendable { case flag, environment, file, `default` }

    public let specs: [SettingSpec]
    public private(set) var values: [String: (value: String, source: Source)] = [:]
    public private(set) var helpRequested = false

    public static let configFlag = SettingSpec(flag: "--config", environment: "ROADSAVE_CONFIG", key: "config",
                                               help: "JSON file of settings (keys as shown in brackets)")

    public init(specs: [SettingSpec], arguments: [String],
                environment: [String: String] = ProcessInfo.processInfo.environment) throws(CommandLineOptions.UsageError) {
        self.specs = specs
        let all = specs + [Self.configFlag]
        let options = try CommandLineOptions(arguments,
                                             valued: Set(all.filter { !$0.isSwitch }.map(\.flag)),
                                             flags: Set(all.filter(\.isSwitch).map(\.flag) + ["--help", "-h"]))
        helpRequested = options.has("--help") || options.has("-h")
        guard options.positional.isEmpty else {
            throw .init("unexpected argument \"\(options.positional[0])\"")
        }
        var file: [String: String] = [:]
        if let path = options.string("--config") ?? environment["ROADSAVE_CONFIG"], !helpRequested {
            file = try Self.readFile(path, known: Set(specs.map(\.key)))
        }
        for spec in specs {
            if spec.isSwitch, options.has(spec.flag) {
                values[spec.key] = ("true", .flag)
            } else if let value = options.string(spec.flag) {
                values[spec.key] = (value, .flag)
            } else if let value = environment[spec.environment] {
                values[spec.key] = (value, .environment)
            } else if let value = file[spec.key] {
                values[spec.key] = (value, .file)
            } else if let value = spec.defaultValue {
                values[spec.key] = (value, .default)
            }
        }
    }

    public func string(_ key: String) -> String? { values[key]?.value }

    public func bool(_ key: String) throws(CommandLineOptions.UsageError) -> Bool {
        guard let text = values[key]?.value else { return false }
        switch text.lowercased() {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw .init("\(flag(for: key)) must be true or false, got \"\(text)\"")
        }
    }

    public func double(_ key: String, range: ClosedRange<Double>) throws(CommandLineOptions.UsageError) -> Double? {
        guard let text = values[key]?.value else { return nil }
        guard let value = Double(text), range.contains(value) else {
            throw .init("\(flag(for: key)) must be a number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    public func flag(for key: String) -> String { specs.first { $0.key == key }?.flag ?? key }

    /// The effective configuration, one `name=value (source)` per line, secrets masked.
    public func describe() -> String {
        specs.compactMap { spec in
            guard let entry = values[spec.key] else { return "  \(spec.key)=(unset)" }
            let shown = spec.isSecret ? Secret.mask(entry.value) : entry.value
            return "  \(spec.key)=\(shown) (\(entry.source.rawValue))"
        }.joined(separator: "\n")
    }

    /// The options part of a usage text, with the environment variable and file key of each.
    public static func optionsHelp(_ specs: [SettingSpec]) -> String {
        (specs + [configFlag]).map { spec in
            let name = spec.isSwitch ? spec.flag : "\(spec.flag) VALUE"
            let padded = name.count < 28 ? name + String(repeating: " ", count: 28 - name.count) : name + " "
            let defaults = spec.defaultValue.map { " (default \(spec.isSecret ? Secret.mask($0) : $0))" } ?? ""
            return "  \(padded)\(spec.help)\(defaults)\n  \(String(repeating: " ", count: 28))env \(spec.environment), file key [\(spec.key)]"
        }.joined(separator: "\n")
    }

    private static func readFile(_ path: String, known: Set<String>) throws(CommandLineOptions.UsageError) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path) else { throw .init("--config: cannot read \(path)") }
        let value: JSONValue
        do {
            value = try JSONParser.parse([UInt8](data))
        } catch {
            throw .init("--config \(path): not JSON (\(error))")
        }
        guard case let .object(members) = value else { throw .init("--config \(path): expected a JSON object") }
        var result: [String: String] = [:]
        for (key, member) in members {
            guard known.contains(key) else {
                throw .init("--config \(path): unknown setting \"\(key)\"; known: \(known.sorted().joined(separator: ", "))")
            }
            switch member {
            case let .string(text): result[key] = text
            case let .number(number): result[key] = number == number.rounded() ? String(Int64(number)) : String(number)
            case let .bool(flag): result[key] = flag ? "true" : "false"
            case let .array(items):
                // Lists (applications, webhooks) are kept as comma-separated text.
                var parts: [String] = []
                for item in items {
                    guard case let .string(text) = item else { throw .init("--config \(path): \(key) must hold strings") }
                    parts.append(text)
                }
                result[key] = parts.joined(separator: ",")
            default: throw .init("--config \(path): \(key) has an unusable value (\(member.typeName))")
            }
        }
        return result
    }
}
