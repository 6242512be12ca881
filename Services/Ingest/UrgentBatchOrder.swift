import RoadSaveModel

/// What `UrgentBatchOrder` reads of a batch: its records, each record's device slot (nil: devices unknown), and the
/// gateway stream its header names (nil: none).
public protocol UrgencyReadable {
    var records: [SensorRecord] { get }
    var slots: [Int]? { get }
    var stream: String? { get }
}

/// A crash alert does not wait behind other devices' bulk traffic. The batches of one group commit become durable
/// together and are acknowledged together, so the order in which they go into the journal is free; detection reads
/// the journal in order, and a crash's deciding records that land behind a gateway's burst of thousands of records
/// would be read after all of them. Within a group, a batch holding an impact, or records of a device up to
/// `urgentAfterImpact` after one, goes into the journal first.
///
/// It never overtakes a batch that shares a device or a gateway stream with it (nor one whose devices are unknown):
/// every device's records and every stream's batches keep their order, so the events are those of the arrival order
/// and a stream's watermark never passes records it vouches for. A value: the impacts seen, by device slot, with
/// named inputs (the group, the time) and the order as its answer; no clock of its own.
public struct UrgentBatchOrder: Sendable, Equatable {
    /// Records this long after an impact (event time) decide its crash alert: the platform's decision delay (20 s by
    /// default) and the gap to the first record after it, with room for a longer delay.
    public static let urgentAfterImpact = 60.0
    /// An impact is forgotten this long after it arrived (the devices' slots are reused once they go idle).
    public static let impactMemory = 600.0

    struct Impact: Sendable, Equatable {
        var t: Double
        var arrived: Double
    }

    /// The latest impact of each device that had one lately, by slot.
    private(set) var impacts: [Int: Impact] = [:]

    public init() {}

    /// The journal order of `batches` (arrival order), as their indexes; nil when it is the arrival order, which is
    /// the answer, without allocating, for any group that holds no impact and no device that had one lately.
    public mutating func journalOrder<Batch: UrgencyReadable>(of batches: [Batch], now: Double) -> [Int]? {
        forgetImpacts(before: now - Self.impactMemory)
        var urgent: [Bool]?
        for (index, batch) in batches.enumerated() where isUrgent(batch, now: now) {
            if urgent == nil { urgent = [Bool](repeating: false, count: batches.count) }
            urgent![index] = true
        }
        guard let urgent else { return nil }
        var ahead: [Int] = []
        var behind: [Int] = []
        var devicesBehind = Set<Int>()
        var streamsBehind = Set<String>()
        var unknownBehind = false
        for (index, batch) in batches.enumerated() {
            let overtakes =
                urgent[index] && !behind.isEmpty && !unknownBehind
                && (batch.stream.map { !streamsBehind.contains($0) } ?? true)
                && (batch.slots.map { !$0.contains(where: devicesBehind.contains) } ?? false)
            if overtakes || (urgent[index] && behind.isEmpty) {
                ahead.append(index)
                continue
            }
            behind.append(index)
            if let slots = batch.slots {
                devicesBehind.formUnion(slots)
            } else if !batch.records.isEmpty {
                unknownBehind = true
            }
            if let stream = batch.stream { streamsBehind.insert(stream) }
        }
        let order = ahead + behind
        return order == Array(batches.indices) ? nil : order
    }

    /// Whether `batch` holds an impact or a record of a device shortly after its impact; notes its impacts.
    private mutating func isUrgent(_ batch: some UrgencyReadable, now: Double) -> Bool {
        guard let slots = batch.slots else { return false }
        var urgent = false
        for (record, slot) in zip(batch.records, slots) {
            if record.kind == .impact {
                if record.t >= impacts[slot]?.t ?? -.infinity { impacts[slot] = Impact(t: record.t, arrived: now) }
                urgent = true
            } else if !impacts.isEmpty, let impact = impacts[slot], record.t >= impact.t,
                record.t <= impact.t + Self.urgentAfterImpact
            {
                urgent = true
            }
        }
        return urgent
    }

    private mutating func forgetImpacts(before time: Double) {
        // Looked at before a new dictionary is made: most groups find nothing to forget.
        guard impacts.values.contains(where: { $0.arrived < time }) else { return }
        impacts = impacts.filter { $0.value.arrived >= time }
    }
}

extension GatewayBatch: UrgencyReadable {
    public var stream: String? { header?.gateway }
}
