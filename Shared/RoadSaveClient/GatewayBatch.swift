import Wire

/// A batch on its way: the records and the number of each (acknowledgements' indexes map back to them).
struct GatewayBatch {
    var records: [SensorRecord] = []
    var numbers: [Int] = []
    /// The records' MessagePack bytes as read (MessagePack input), concatenated: the body is these under an array
    /// header, not an encoding of `records`.
    var raw: [UInt8] = []
    /// Seconds after the start when its first / last record is due (pacing), nil when not paced.
    var firstDue: Double?
    var lastDue: Double?
    /// The devices it has records of: a batch found lost goes before any new batch of one of them. Made when asked
    /// (only while a batch waits to be sent again), not kept as records come: a set grown a record at a time was
    /// most of a batch's allocations.
    var devices: Set<DeviceID> { Set(records.lazy.map(\.device)) }

    var isEmpty: Bool { records.isEmpty }

    /// The batch as notices name it.
    func summary(id: String) -> GatewayNotice.Batch {
        GatewayNotice.Batch(id: id, first: numbers.first, last: numbers.last)
    }

    /// The batch's body in `format`.
    func body(_ format: ContentType) -> [UInt8] {
        guard format == .msgpack, !raw.isEmpty else { return RecordBatch.encodeBatch(records, as: format) }
        return MessagePackFraming.arrayHeader(records.count) + raw
    }
}
