import CommandSettings

/// The ordering settings `roadsave detect`, `replay` and `report` share: one flag, one default (the engine's,
/// `RecordOrdering.Options`) and one range. 600 s bounds what a device may hold in memory in the service; replay
/// takes the same range, so whatever it replays the service can run.
public enum OrderingSettings {
    public static let reorderWindow = Setting<Double>(
        flag: "--reorder-window", environment: "ROADSAVE_REORDER_WINDOW", key: "reorderWindow",
        default: RecordOrdering.Options().window, range: 0...600, valueName: "S",
        help: "seconds of event time a record may arrive late and still be put in order")

    public static let all: [any AnySetting] = [reorderWindow]

    /// `options` with the ordering these settings give.
    public static func apply(_ values: SettingValues, to options: inout DeviceFleet.Options) throws(CommandLineOptions
        .UsageError)
    {
        options.ordering.window = try values.value(reorderWindow)
    }
}
