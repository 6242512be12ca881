/// One setting of a command or service, typed: its flag, environment variable and config-file key, its default
/// (written here once), how its text is parsed and checked, and how it is shown. `--help`, the masked effective
/// configuration and the loaders are all derived from these (`SettingValues` reads them).
///
/// It lives next to `CommandLineOptions`, not in ServiceKit, because `roadsave replay` and `report` use the same
/// settings (`PlatformSettings`, `OrderingSettings`) and must not depend on ServiceKit (ZeroMQ, Metrics, Feeds).
public struct Setting<Value: Sendable>: AnySetting {
    public typealias Parse = @Sendable (_ text: String, _ flag: String) throws(CommandLineOptions.UsageError) -> Value

    public let flag: String // "--gateway-endpoint"
    public let environment: String // "ROADSAVE_GATEWAY_ENDPOINT"
    public let key: String // key in a JSON config file: "gatewayEndpoint"
    /// Keys a config file may still give this setting by, from before it was renamed (`formerly(_:)`).
    public private(set) var formerKeys: [String] = []
    public let help: String
    /// The value's name in a command's usage line (`--platform URL`).
    public let valueName: String
    public let isSecret: Bool
    /// Given without a value (`--insecure`); its text from the environment or a file is parsed as usual.
    public let isSwitch: Bool
    /// The value when none is given.
    public let defaultValue: Value
    /// The default as `--help` and the effective configuration show it; nil when there is none to show.
    public let defaultText: String?
    private let parser: Parse

    public init(
        flag: String, environment: String, key: String, default defaultValue: Value, shown defaultText: String?,
        valueName: String = "VALUE", help: String, secret: Bool = false, switch isSwitch: Bool = false,
        parse: @escaping Parse
    ) {
        self.flag = flag
        self.environment = environment
        self.key = key
        self.defaultValue = defaultValue
        self.defaultText = defaultText
        self.valueName = valueName
        self.help = help
        self.isSecret = secret
        self.isSwitch = isSwitch
        parser = parse
    }

    /// The same setting, also read from a config file under `keys`: names it had before it was renamed, so that
    /// the files written for them keep working.
    public func formerly(_ keys: String...) -> Self {
        var renamed = self
        renamed.formerKeys += keys
        return renamed
    }

    /// `text` as this setting's value; a mistake is an error that names the flag.
    public func parse(_ text: String) throws(CommandLineOptions.UsageError) -> Value {
        try parser(text, flag)
    }
}

/// What lists of settings of different types share: all that parsing the arguments, `--help` and `describe()` need.
public protocol AnySetting: Sendable {
    var flag: String { get }
    var environment: String { get }
    var key: String { get }
    var formerKeys: [String] { get }
    var help: String { get }
    var valueName: String { get }
    var isSecret: Bool { get }
    var isSwitch: Bool { get }
    var defaultText: String? { get }
}

// MARK: The kinds of setting

extension Setting where Value == String {
    /// Any text; `nonEmpty` refuses an empty one ("--data-dir must not be empty").
    public init(
        flag: String, environment: String, key: String, default defaultValue: String, valueName: String = "VALUE",
        help: String, nonEmpty: Bool = false
    ) {
        self.init(
            flag: flag, environment: environment, key: key, default: defaultValue, shown: defaultValue,
            valueName: valueName, help: help
        ) { text, flag throws(CommandLineOptions.UsageError) in
            if nonEmpty, text.isEmpty { throw .init("\(flag) must not be empty") }
            return text
        }
    }
}

extension Setting where Value == Double {
    /// A number in `range`.
    public init(
        flag: String, environment: String, key: String, default defaultValue: Double, range: ClosedRange<Double>,
        valueName: String = "S", help: String
    ) {
        self.init(
            flag: flag, environment: environment, key: key, default: defaultValue,
            shown: SettingText.number(defaultValue),
            valueName: valueName, help: help
        ) { text, flag throws(CommandLineOptions.UsageError) in
            try SettingText.number(text, flag: flag, range: range)
        }
    }
}

extension Setting where Value == Int {
    /// A whole number in `range`.
    public init(
        flag: String, environment: String, key: String, default defaultValue: Int, range: ClosedRange<Int>,
        valueName: String = "N", help: String
    ) {
        self.init(
            flag: flag, environment: environment, key: key, default: defaultValue, shown: String(defaultValue),
            valueName: valueName, help: help
        ) { text, flag throws(CommandLineOptions.UsageError) in
            try SettingText.wholeNumber(text, flag: flag, range: range)
        }
    }
}

extension Setting where Value == Bool {
    /// true or false (also 1/0, yes/no, on/off); a `switch` is given as a bare flag and is off by default.
    public init(
        flag: String, environment: String, key: String, default defaultValue: Bool = false, help: String,
        switch isSwitch: Bool = false
    ) {
        self.init(
            flag: flag, environment: environment, key: key, default: defaultValue,
            shown: isSwitch ? nil : String(defaultValue), help: help, switch: isSwitch
        ) { text, flag throws(CommandLineOptions.UsageError) in
            switch text.lowercased() {
            case "true", "1", "yes", "on": return true
            case "false", "0", "no", "off": return false
            default: throw .init("\(flag) must be true or false, got \"\(text)\"")
            }
        }
    }
}

extension Setting {
    /// A setting without a default: nil unless given.
    public init<Wrapped: Sendable>(
        flag: String, environment: String, key: String, valueName: String = "VALUE",
        help: String, secret: Bool = false,
        parse: @escaping @Sendable (_ text: String, _ flag: String) throws(CommandLineOptions.UsageError) -> Wrapped
    )
    where Value == Wrapped? {
        self.init(
            flag: flag, environment: environment, key: key, default: nil, shown: nil, valueName: valueName, help: help,
            secret: secret
        ) { text, flag throws(CommandLineOptions.UsageError) in try parse(text, flag) }
    }
}

extension Setting where Value == String? {
    /// Text without a default: nil unless given (and, with `emptyIsUnset`, when given empty).
    public static func text(
        flag: String, environment: String, key: String, valueName: String = "VALUE", help: String,
        secret: Bool = false, emptyIsUnset: Bool = false
    ) -> Setting<String?> {
        Setting<String?>(
            flag: flag, environment: environment, key: key, default: nil, shown: nil, valueName: valueName,
            help: help, secret: secret
        ) { text, _ in emptyIsUnset && text.isEmpty ? nil : text }
    }
}

/// The text forms the settings share: numbers as they are shown, and the checks with their messages.
public enum SettingText {
    /// `2`, `0.5`: a whole number without a fraction.
    public static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    public static func number(_ text: String, flag: String, range: ClosedRange<Double>) throws(CommandLineOptions
        .UsageError)
        -> Double
    {
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw .init("\(flag) must be a number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    /// A whole number; written as a number (`1e6`, `3.0`) it is taken if it has no fraction.
    public static func wholeNumber(_ text: String, flag: String, range: ClosedRange<Int>) throws(CommandLineOptions
        .UsageError)
        -> Int
    {
        if let value = Int(text), range.contains(value) { return value }
        guard let value = Double(text), value == value.rounded(), value >= Double(range.lowerBound),
            value <= Double(range.upperBound)
        else {
            throw .init(
                "\(flag) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return Int(value)
    }
}
