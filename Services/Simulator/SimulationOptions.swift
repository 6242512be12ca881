// The options of a simulation run, shared by the library entry points and `roadsave simulate`.

import GatewayKit

/// A bad option: which one and why.
public struct SimulationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var option: String
    public var reason: String

    public init(option: String, reason: String) {
        self.option = option
        self.reason = reason
    }

    public var description: String { "\(option): \(reason)" }
}

public struct SimulationOptions: Sendable, Equatable {
    /// 2026-03-02T06:30:00Z.
    public static let defaultStart = 1_772_433_000.0
    /// Every scenario name accepted by `scenario` besides `mix`.
    public static let scenarioNames: [String] = Scenario.allCases.map(\.rawValue)
    /// The scenarios `mix` cycles through, in order.
    public static let mixScenarioNames: [String] = Scenario.mixCycle.map(\.rawValue)

    public var devices: Int
    public var seed: UInt64
    /// Start of the simulation, Unix seconds. Devices start at staggered times within the first few minutes.
    public var start: Double
    /// Length of the simulation, minutes; every device stops at start + duration.
    public var durationMinutes: Double
    /// `mix` or one of `scenarioNames`.
    public var scenario: String
    /// The first `crashes` devices run the `crash` scenario.
    public var crashes: Int
    public var app: String
    /// Users are `userPrefix` + the 1-based device number, zero-padded to three digits: user-001, user-002, …
    public var userPrefix: String
    /// Centre of the simulated area; devices start within 3 km of it.
    public var origin: Coordinate
    /// Emulate a gateway: records of a device up to 3 s out of order, ~1% sent twice.
    public var disorder: Bool
    /// `calm`, `normal` or `aggressive` for every driver, or `mixed`: device by device in that order.
    public var drivingStyleName: String
    /// Every name `drivingStyleName` accepts.
    public static let drivingStyleNames = DrivingStyle.allCases.map(\.rawValue) + ["mixed"]

    public init(
        devices: Int = 3, seed: UInt64 = 1, start: Double = SimulationOptions.defaultStart,
        durationMinutes: Double = 45, scenario: String = "mix", crashes: Int = 0, app: String = "demo-app",
        userPrefix: String = "user-", origin: Coordinate = .capeTown, disorder: Bool = false,
        drivingStyleName: String = "normal"
    ) {
        self.devices = devices
        self.seed = seed
        self.start = start
        self.durationMinutes = durationMinutes
        self.scenario = scenario
        self.crashes = crashes
        self.app = app
        self.userPrefix = userPrefix
        self.origin = origin
        self.disorder = disorder
        self.drivingStyleName = drivingStyleName
    }

    /// The driving style of device `index` (0-based).
    func drivingStyle(_ index: Int) -> DrivingStyle {
        DrivingStyle(rawValue: drivingStyleName) ?? DrivingStyle.allCases[index % DrivingStyle.allCases.count]
    }

    /// The first problem with these options, if any (option names as on the command line).
    public func validationError() -> SimulationError? {
        if devices < 1 || devices > 1_000_000 {
            return SimulationError(option: "--devices", reason: "must be between 1 and 1000000, got \(devices)")
        }
        if !start.isFinite || start < 0 || start > 32_503_680_000 {
            return SimulationError(option: "--start", reason: "must be a time between 1970 and 3000")
        }
        if !durationMinutes.isFinite || durationMinutes <= 0 || durationMinutes > 7 * 24 * 60 {
            return SimulationError(option: "--duration", reason: "must be more than 0 and at most 10080 minutes")
        }
        if scenario != "mix", Scenario(rawValue: scenario) == nil {
            return SimulationError(
                option: "--scenario",
                reason: "unknown scenario '\(scenario)'; expected mix or one of "
                    + Self.scenarioNames.joined(separator: ", "))
        }
        if crashes < 0 || crashes > devices {
            return SimulationError(
                option: "--crashes", reason: "must be between 0 and the number of devices (\(devices)), got \(crashes)")
        }
        if !Self.drivingStyleNames.contains(drivingStyleName) {
            return SimulationError(
                option: "--driving-style",
                reason: "unknown style '\(drivingStyleName)'; expected one of "
                    + Self.drivingStyleNames.joined(separator: ", "))
        }
        if app.isEmpty { return SimulationError(option: "--app", reason: "must not be empty") }
        if !(-85...85).contains(origin.latitude) || !(-180...180).contains(origin.longitude) {
            return SimulationError(option: "--origin", reason: "latitude must be within ±85 and longitude within ±180")
        }
        return nil
    }

    /// The user of device `index` (0-based).
    public func user(_ index: Int) -> String {
        let number = String(index + 1)
        return userPrefix + String(repeating: "0", count: max(0, 3 - number.count)) + number
    }

    /// The scenario of each device: the first `crashes` crash, the rest run `scenario` or, for `mix`, cycle through
    /// the non-crash scenarios from a starting point picked by the seed.
    func assignments() -> [Scenario] {
        let offset = Int(SplitMix64.mix(seed, 0x6D69_78) % UInt64(Scenario.mixCycle.count))
        return (0..<devices).map { index in
            if index < crashes { return .crash }
            if let fixed = Scenario(rawValue: scenario) { return fixed }
            return Scenario.mixCycle[(offset + index) % Scenario.mixCycle.count]
        }
    }
}
