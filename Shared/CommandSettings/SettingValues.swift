import RoadSaveModel

/// The values given for a list of settings: from flags, the environment and a config file, in that order of
/// precedence, each remembering where it came from. A typed lookup parses the text given, or takes the setting's
/// default; `describe()` shows them all with secrets masked. A command that reads flags only (`roadsave replay`)
/// passes no environment and no file.
public struct SettingValues: Sendable {
    public enum Source: String, Sendable { case flag, environment, file, `default` }

    public let settings: [any AnySetting]
    /// The text given for each setting, by key; a setting not here takes its default.
    private var given: [String: (text: String, source: Source)] = [:]

    public init(
        _ settings: [any AnySetting], options: CommandLineOptions, environment: [String: String] = [:],
        file: [String: String] = [:]
    ) {
        self.settings = settings
        for setting in settings {
            if setting.isSwitch, options.has(setting.flag) {
                given[setting.key] = ("true", .flag)
            } else if let text = options.string(setting.flag) {
                given[setting.key] = (text, .flag)
            } else if let text = environment[setting.environment] {
                given[setting.key] = (text, .environment)
            } else if let text = file[setting.key] {
                given[setting.key] = (text, .file)
            }
        }
    }

    /// The options of `settings` for `CommandLineOptions`: those that take a value, and the switches.
    public static func valued(_ settings: [any AnySetting]) -> Set<String> {
        Set(settings.filter { !$0.isSwitch }.map(\.flag))
    }
    public static func switches(_ settings: [any AnySetting]) -> Set<String> {
        Set(settings.filter(\.isSwitch).map(\.flag))
    }

    /// The setting's value: the text given, parsed and checked (the error names the flag), or its default.
    public func value<Value>(_ setting: Setting<Value>) throws(CommandLineOptions.UsageError) -> Value {
        assert(settings.contains { $0.key == setting.key }, "\(setting.flag) is not among the settings read")
        guard let text = given[setting.key]?.text else { return setting.defaultValue }
        return try setting.parse(text)
    }

    /// Where the setting's value comes from (`.default` when nothing was given).
    public func source(of setting: some AnySetting) -> Source {
        given[setting.key]?.source ?? .default
    }

    /// The effective configuration, one `key=value (source)` per line, secrets masked.
    public func describe() -> String {
        settings.map { setting in
            let text: String
            let source: Source
            if let entry = given[setting.key] {
                (text, source) = entry
            } else if let shown = setting.defaultText {
                (text, source) = (shown, .default)
            } else {
                return "  \(setting.key)=(unset)"
            }
            return "  \(setting.key)=\(setting.isSecret ? Secret.mask(text) : text) (\(source.rawValue))"
        }.joined(separator: "\n")
    }
}
