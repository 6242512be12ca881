/// A small parser for `--flag value`, `--flag=value` and `--switch` options and positional arguments, shared by
/// every subcommand so that they all report mistakes the same way.
public struct CommandLineOptions: Sendable {
    public struct UsageError: Error, Sendable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    public private(set) var values: [String: String] = [:]
    /// Every value of each option in the order given, for the options that may be given several times.
    public private(set) var repeatedValues: [String: [String]] = [:]
    public private(set) var switches: Set<String> = []
    public private(set) var positional: [String] = []

    /// `valued` are the options that take a value, `flags` those that don't; anything else is an error.
    public init(_ arguments: [String], valued: Set<String>, flags: Set<String>) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                positional += arguments[index...]
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                positional.append(argument)
                continue
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if flags.contains(name) {
                guard inlineValue == nil else { throw UsageError("\(name) takes no value") }
                switches.insert(name)
            } else if valued.contains(name) {
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw UsageError("\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
                values[name] = value
                repeatedValues[name, default: []].append(value)
            } else {
                throw UsageError("unknown option \(name)")
            }
        }
    }

    public func has(_ flag: String) -> Bool { switches.contains(flag) }

    /// The option's value; given several times, the last.
    public func string(_ name: String) -> String? { values[name] }

    /// Every value the option was given, in order (empty when not given).
    public func strings(_ name: String) -> [String] { repeatedValues[name] ?? [] }

    public func double(_ name: String, range: ClosedRange<Double>) throws(UsageError) -> Double? {
        guard let text = values[name] else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw UsageError(
                "\(name) must be a number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    public func integer(_ name: String, range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw UsageError(
                "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    public func choice<T: RawRepresentable & CaseIterable>(_ name: String, _ type: T.Type) throws(UsageError) -> T?
    where T.RawValue == String {
        guard let text = values[name] else { return nil }
        guard let value = T(rawValue: text) else {
            throw UsageError(
                "\(name) must be one of \(T.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(text)\"")
        }
        return value
    }
}
