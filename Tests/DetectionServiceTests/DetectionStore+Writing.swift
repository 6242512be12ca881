import RoadSaveModel

@testable import DetectionService

extension DetectionStore {
    /// Writes a checkpoint at once, as the service's checkpoints are written (`checkpoints`, after any being
    /// written), then deletes the inputs it holds, as the service does once a checkpoint is written. For stores the
    /// service does not run on: its generation outranks every checkpoint the service could start.
    func writeCheckpoint(
        input: Int64, shared: [UInt8], changedDevices: [(DeviceID, [UInt8])],
        evictedDevices: [(DeviceID, [UInt8])] = [], markedEvicted: [MarkedEviction] = [],
        positions: [String: UInt64], at time: Double
    ) throws {
        let checkpoint = CheckpointWriter.Checkpoint(
            input: input, shared: shared, changedDevices: changedDevices,
            evictedDevices: evictedDevices, markedEvicted: markedEvicted,
            positions: positions, time: time)
        checkpoints.started(.max)
        _ = try checkpoints.writeAndWait(.max) { checkpoint }?.get()
        try forgetInputs(through: input)
    }
}
