import RoadSaveModel

/// Puts one device's records into event-time order before they reach its session. A bounded window of event time
/// absorbs small disorder (gateways batch sensors separately); a repeated `seq` is a duplicate and is dropped; a
/// record older than what was already applied is reported as late, never silently applied; and a record that
/// jumps far ahead of the device's stream is held until the next record shows whether the jump was real (a long
/// silence) or a broken timestamp.
public struct RecordOrdering: Sendable {
    public struct Options: Sendable, Equatable, Codable {
        /// How far behind the newest record a record may arrive and still be put in order, in seconds.
        public var window: Double
        /// A jump ahead of the newest record larger than this is held for confirmation, in seconds.
        public var futureJump: Double
        /// How many `seq` values, counting down from the device's highest, are remembered for duplicate detection
        /// (one bit each; see `SequenceWindow`). 1,024 is minutes of records at a gateway's rates, far more than the
        /// reorder window holds; a repeat further behind is judged by its time (late, as a rule).
        public var sequenceMemory: Int

        public init(window: Double = 10, futureJump: Double = 900, sequenceMemory: Int = 1024) {
            self.window = window
            self.futureJump = futureJump
            self.sequenceMemory = sequenceMemory
        }
    }

    public enum Rejection: Sendable, Equatable, CustomStringConvertible {
        /// The same `seq` (or, without one, the same record) was already taken.
        case duplicate
        /// Older than the records already applied by more than the window allows.
        case late(appliedUpTo: Double)
        /// A timestamp far ahead of the device's stream, not confirmed by the records after it.
        case farInFuture(streamTime: Double)

        public var description: String {
            switch self {
            case .duplicate:
                "duplicate record (seq already received)"
            case .late(let appliedUpTo):
                "arrived after records up to \(ISO8601.string(fromSeconds: appliedUpTo)) were applied: too late for the reorder window, not applied"
            case .farInFuture(let streamTime):
                "timestamp far ahead of the device's other records (around \(ISO8601.string(fromSeconds: streamTime))) and not confirmed by the records after it: not applied"
            }
        }
    }

    public private(set) var options: Options
    /// Buffered records in event-time order (ties in arrival order): a ring (its size a power of two, at least the
    /// most ever buffered at once), so released records leave the front without moving the others and are moved out,
    /// not copied.
    private var ring: [SensorRecord?] = []
    private var first = 0
    private var count = 0
    /// The newest event time taken in.
    public private(set) var newest: Double?
    /// The event time of the last record released.
    public private(set) var released: Double?
    /// A record far ahead of the stream, waiting for the next record to confirm it.
    private var suspect: SensorRecord? {
        get { held.first }
        set { held = newValue.map { [$0] } ?? [] }
    }
    /// The suspect's storage: rarely used, so kept out of line (8 bytes a device instead of a record's 121).
    private var held: [SensorRecord] = []
    /// The `seq` values taken: a duplicate within `options.sequenceMemory` of the highest is found (see
    /// `SequenceWindow` for values further behind).
    private var sequences: SequenceWindow

    public init(options: Options = Options()) {
        self.options = options
        sequences = SequenceWindow(size: options.sequenceMemory)
    }

    /// Takes `window` from now on (a fleet restored under another `--reorder-window`): records buffered are
    /// released by it at the next record or tick; a window's worth of records already released stays released.
    public mutating func adopt(window: Double) {
        options.window = window
    }

    /// Records waiting in the buffer.
    public var bufferedCount: Int { count + (suspect == nil ? 0 : 1) }

    /// Takes a record in. Returns the records now ready, in order, and what was rejected (the record itself, or a
    /// suspect it disproved).
    public mutating func insert(_ record: SensorRecord) -> (
        ready: [SensorRecord], rejected: [(SensorRecord, Rejection)]
    ) {
        var ready: [SensorRecord] = []
        var rejected: [(SensorRecord, Rejection)] = []
        insert(record, ready: &ready, rejected: &rejected)
        return (ready, rejected)
    }

    /// Takes a record in, appending the records now ready (in order) to `ready` and what was rejected to `rejected`.
    public mutating func insert(
        _ record: SensorRecord, ready: inout [SensorRecord],
        rejected: inout [(SensorRecord, Rejection)]
    ) {
        insert(record, rejected: &rejected)
        while let next = nextReady() { ready.append(next) }
    }

    /// Takes a record in, appending what was rejected to `rejected`; the records it makes ready are then taken one
    /// by one with `nextReady()` (the way that copies nothing: a shell that reuses `rejected` allocates nothing).
    public mutating func insert(_ record: consuming SensorRecord, rejected: inout [(SensorRecord, Rejection)]) {
        if let seq = record.seq {
            if sequences.contains(seq) {
                rejected.append((record, .duplicate))
                return
            }
        } else if isBufferedCopy(record) {
            rejected.append((record, .duplicate))
            return
        }
        if let released, record.t < released - 1e-9 {
            rejected.append((record, .late(appliedUpTo: released)))
            return
        }
        if let pending = suspect {
            suspect = nil
            if record.t > (newest ?? record.t) + options.futureJump {
                // The stream really moved on (a long silence): the held record was genuine.
                take(pending)
            } else {
                rejected.append((pending, .farInFuture(streamTime: newest ?? record.t)))
            }
        } else if let newest, record.t > newest + options.futureJump {
            remember(record.seq)
            suspect = record
            return
        }
        remember(record.seq)
        take(record)
    }

    /// The oldest buffered record if the window has passed it (it is then released), else nil.
    public mutating func nextReady() -> SensorRecord? {
        guard count > 0, let newest, ring[first]!.t <= newest - options.window else { return nil }
        return removeFirst()
    }

    /// The oldest buffered record if it is older than `watermark` (it is then released), else nil: the order a
    /// gateway's watermark gives (`GatewayBatchHeader`), where nothing older than the watermark can still come, so
    /// the window need not wait. A record held as far in the future is taken first once the watermark has passed
    /// it: the gateway's time has reached it, so it was no broken clock.
    public mutating func nextReady(before watermark: Double) -> SensorRecord? {
        if let pending = suspect, pending.t < watermark {
            suspect = nil
            take(pending)
        }
        guard count > 0, ring[first]!.t < watermark else { return nil }
        return removeFirst()
    }

    /// Gives the buffer's memory back once nothing is buffered: room for at least 8 records (about 1 KB, a quarter
    /// of a quiet device's state) that a device whose last records were released would otherwise keep while quiet.
    /// For the clock's releases only: on the record path a device taking records keeps its ring between them.
    mutating func releaseBufferMemoryIfEmpty() {
        guard count == 0, !ring.isEmpty else { return }
        ring = []
        first = 0
    }

    /// Records the buffer has room for without growing (0 once its memory was given back).
    var bufferCapacity: Int { ring.count }

    /// The event time of the oldest record buffered (the one held as far in the future included), nil when none.
    public var oldestBufferedTime: Double? {
        let head = count > 0 ? ring[first]!.t : nil
        switch (head, suspect?.t) {
        case (let head?, let held?): return min(head, held)
        case (let head, let held): return head ?? held
        }
    }

    /// Releases everything (end of input, or a shell's idle flush).
    public mutating func flush() -> [SensorRecord] {
        var all: [SensorRecord] = []
        flush(into: &all)
        return all
    }

    /// Releases everything into `ready`. The buffer's memory goes too: a device that has gone quiet keeps none.
    public mutating func flush(into ready: inout [SensorRecord]) {
        if let pending = suspect {
            suspect = nil
            take(pending)
        }
        while count > 0 { ready.append(removeFirst()) }
        ring = []
        first = 0
    }

    private mutating func removeFirst() -> SensorRecord {
        let record = ring[first].take()!
        first = (first + 1) & (ring.count - 1)
        count -= 1
        released = max(released ?? record.t, record.t)
        return record
    }

    private func slot(_ offset: Int) -> Int { (first + offset) & (ring.count - 1) }

    private mutating func take(_ record: consuming SensorRecord) {
        newest = max(newest ?? record.t, record.t)
        if count == ring.count { grow() }
        // Mostly in order: the insertion point is searched from the end, and later records move up one.
        var offset = count
        while offset > 0, ring[slot(offset - 1)]!.t > record.t {
            ring[slot(offset)] = ring[slot(offset - 1)].take()
            offset -= 1
        }
        ring[slot(offset)] = record
        count += 1
    }

    private mutating func grow() {
        var larger: [SensorRecord?] = Array(repeating: nil, count: max(8, ring.count * 2))
        for offset in 0..<count { larger[offset] = ring[slot(offset)].take() }
        ring = larger
        first = 0
    }

    private var buffered: [SensorRecord] { (0..<count).map { ring[slot($0)]! } }

    private func isBufferedCopy(_ record: SensorRecord) -> Bool {
        (0..<count).contains { ring[slot($0)] == record } || suspect == record
    }

    private mutating func remember(_ seq: UInt64?) {
        guard let seq else { return }
        sequences.insert(seq)
    }
}

// MARK: Checkpoints

extension RecordOrdering: Codable {
    private enum CodingKeys: String, CodingKey {
        case options, buffer, bufferDevice, bufferRecords, newest, released, suspect, sequenceRuns
    }

    /// Written compactly and in a stable order: only the live part of the buffer (its device once, each record an
    /// array: `CheckpointedRecord`), and the remembered `seq` values as runs of consecutive numbers
    /// `[first, count, first, count, …]`, ascending (a gateway numbers a device's records consecutively, so they are
    /// usually one run). Checkpoints written before hold the buffer as records (`buffer`), read too; those written
    /// before the `SequenceWindow` hold the values in arrival order: both are read by taking the values in the order
    /// written, which rebuilds the same window.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(options, forKey: .options)
        // The buffer's records are the device's: its identity once, and each record as an array.
        let records = buffered
        if let device = records.first?.device, records.allSatisfy({ $0.device == device }) {
            try container.encode(device, forKey: .bufferDevice)
            try container.encode(records.map(CheckpointedRecord.init), forKey: .bufferRecords)
        } else {
            try container.encode(records, forKey: .buffer)
        }
        try container.encodeIfPresent(newest, forKey: .newest)
        try container.encodeIfPresent(released, forKey: .released)
        try container.encodeIfPresent(suspect, forKey: .suspect)
        try container.encode(sequences.runs, forKey: .sequenceRuns)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        options = try container.decode(Options.self, forKey: .options)
        let buffered =
            if let device = try container.decodeIfPresent(DeviceID.self, forKey: .bufferDevice) {
                try container.decode([CheckpointedRecord].self, forKey: .bufferRecords).map { $0.record(of: device) }
            } else {
                try container.decode([SensorRecord].self, forKey: .buffer)
            }
        count = buffered.count
        if count > 0 {
            var size = 8
            while size < count { size *= 2 }
            ring = Array(repeating: nil, count: size)
            for (offset, record) in buffered.enumerated() { ring[offset] = record }
        }
        newest = try container.decodeIfPresent(Double.self, forKey: .newest)
        released = try container.decodeIfPresent(Double.self, forKey: .released)
        held = try container.decodeIfPresent(SensorRecord.self, forKey: .suspect).map { [$0] } ?? []
        sequences = SequenceWindow(size: options.sequenceMemory)
        let runs = try container.decode([UInt64].self, forKey: .sequenceRuns)
        guard runs.count % 2 == 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .sequenceRuns, in: container,
                debugDescription: "expected pairs of first value and count")
        }
        for pair in stride(from: 0, to: runs.count, by: 2) {
            let (first, count) = (runs[pair], runs[pair + 1])
            guard count >= 1, count <= UInt64(options.sequenceMemory) + 1, first <= UInt64.max - (count - 1) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .sequenceRuns, in: container,
                    debugDescription: "run of \(count) from \(first) is impossible")
            }
            for offset in 0..<count { sequences.insert(first + offset) }
        }
    }
}
