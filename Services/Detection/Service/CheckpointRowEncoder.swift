import DetectionEngine

/// Device states encoded as a checkpoint writes them (JSON, then compressed against the rows' dictionary, made from
/// the first), alone: for the counted benchmark (`roadsave-bench counts`, path `checkpoint device`), which counts
/// the allocations a device's row costs. Under load a checkpoint writes every changed device every few seconds.
public final class CheckpointRowEncoder {
    private let rows = DeviceRowCodec()

    public init() {}

    /// The rows' bytes in all.
    public func encode(_ shared: FleetSharedState, states: [FleetDeviceState]) throws -> Int {
        let encoded = try DetectionServing.encode(shared, states: states, leaving: [], markedOnly: [], rows: rows)
        return encoded.shared.count + encoded.devices.reduce(0) { $0 + $1.1.count }
    }
}
