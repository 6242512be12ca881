import Logging
import RoadSaveModel

/// What detection says in its log about records it could not apply (too late for ordering, far in the future): each
/// is kept in the store (`unapplied`) and counted, but only the first few of an interval get a line of their own,
/// then one line counts the rest, so a flood of them (a fleet older than what a data directory already holds)
/// cannot fill the disk. Once, plainly, it says when records are so far behind what was applied that the data
/// directories must hold a newer run of the same devices. A value: time is an input.
public struct UnappliedRecordsLog: Sendable {
    public struct Line: Sendable {
        public var level: Log.Level
        public var message: String
        public var fields: [(String, String)]
    }

    /// Where the records are kept and the state to clear, for the lines.
    public let dataDirectory: String
    private var budget: LogBudget
    /// Records not applied since the start, and whether the stale run was said.
    public private(set) var total = 0
    public private(set) var staleRunReported = false

    /// Records further behind what was applied for their device than this cannot be a gateway's disorder or a
    /// re-send: the device's records were applied from a later run (the reorder window's far-future limit).
    public static let staleRunBehind = RecordOrdering.Options().futureJump

    public init(dataDirectory: String, linesPerInterval: Int = 5, interval: Double = 10) {
        self.dataDirectory = dataDirectory
        budget = LogBudget(limit: linesPerInterval, window: interval)
    }

    /// A record was not applied at `now` (monotonic seconds): the lines to write.
    public mutating func noted(_ record: SensorRecord, _ reason: RecordOrdering.Rejection, now: Double) -> [Line] {
        total += 1
        var lines: [Line] = []
        if case .late(let appliedUpTo) = reason, let line = staleRun(record, appliedUpTo: appliedUpTo) {
            lines.append(line)
        }
        let (write, heldBack) = budget.admit(at: now)
        if heldBack > 0 { lines.append(summary(heldBack)) }
        if write {
            lines.append(
                Line(
                    level: .warning, message: "record not applied (kept in the store's unapplied table)",
                    fields: [
                        ("device", record.device.description), ("kind", record.kind.rawValue),
                        ("t", ISO8601.string(fromSeconds: record.t)), ("reason", reason.description),
                    ]))
        }
        return lines
    }

    /// A record was dropped as a duplicate (its `seq` was taken before): nothing to keep, unless its time is far
    /// behind what was applied for its device, which no re-send explains: a newer run numbered its records alike.
    public mutating func duplicate(_ record: SensorRecord, appliedUpTo: Double?) -> [Line] {
        guard let appliedUpTo, let line = staleRun(record, appliedUpTo: appliedUpTo, duplicate: true) else { return [] }
        return [line]
    }

    /// The plain word, once, that the data directories hold a newer run of these devices.
    private mutating func staleRun(_ record: SensorRecord, appliedUpTo: Double, duplicate: Bool = false) -> Line? {
        guard !staleRunReported, appliedUpTo - record.t > Self.staleRunBehind else { return nil }
        staleRunReported = true
        let taken =
            duplicate
            ? "their seq numbers were taken before, so they are dropped as duplicates"
            : "they are kept in the store's unapplied table, not applied"
        return Line(
            level: .error,
            message: """
                records older than what detection has already applied for their devices: the data directories hold a \
                newer run of these devices (a recording or test sent before?), and \(taken). To start afresh, stop the \
                services and remove detection's data directory and ingest's journal
                """,
            fields: [
                ("device", record.device.description), ("t", ISO8601.string(fromSeconds: record.t)),
                ("appliedUpTo", ISO8601.string(fromSeconds: appliedUpTo)), ("dataDir", dataDirectory),
            ])
    }

    /// The interval's count, once it is over (the service calls this now and then, so a count is said even when no
    /// record follows).
    public mutating func roll(now: Double) -> [Line] {
        let heldBack = budget.roll(at: now)
        return heldBack > 0 ? [summary(heldBack)] : []
    }

    private func summary(_ count: Int) -> Line {
        Line(
            level: .warning, message: "more records not applied (kept in the store's unapplied table)",
            fields: [
                ("records", String(count)), ("in", "the last \(Int(budget.window)) s"),
                ("total", String(total)), ("dataDir", dataDirectory),
            ])
    }
}
