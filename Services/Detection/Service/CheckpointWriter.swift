import Foundation
import RoadSaveModel
import Storage
import SystemKit
import ZeroMQ

/// Writes detection's checkpoints into `detection.sqlite` on a thread of its own, with a connection of its own: the
/// reactor thread goes on reading records and storing events meanwhile. Writing a checkpoint of 2,000 devices took
/// 0.13–0.7 s, and on the reactor thread a crash decided then waited for it. The inputs and the outbox, which the
/// reactor commits, are in another file (`outbox.sqlite`), so neither waits for the other's write lock.
///
/// Checkpoints are encoded and written one at a time, in the order they were started; one that a newer one has
/// superseded before its turn (a stop takes its own at once, with everything the older one held) is skipped.
final class CheckpointWriter: @unchecked Sendable {
    // @unchecked: `database` (a SQLite connection, not Sendable) is used only on `queue`.
    private let database: SQLiteDatabase
    /// The rows' compression: its dictionary is written with the first checkpoint that uses it.
    private let rows: DeviceRowCodec
    private let queue = DispatchQueue(label: "detection.checkpoints", qos: .utility)
    /// The newest generation started.
    private let newest = Locked(0)

    /// What a checkpoint writes: the fleet's shared state as of input `input`, the states of the changed devices
    /// (in memory) and of those leaving memory, those leaving whose stored row is current, the journal positions.
    struct Checkpoint: Sendable {
        var input: Int64
        var shared: [UInt8]
        var changedDevices: [(DeviceID, [UInt8])]
        var evictedDevices: [(DeviceID, [UInt8])] = []
        var markedEvicted: [DetectionStore.MarkedEviction] = []
        var positions: [String: UInt64]
        var time: Double
    }

    /// Seconds a checkpoint took to encode and to write.
    struct Timing: Sendable {
        var encoding: Double
        var writing: Double
    }

    init(path: String, rows: DeviceRowCodec) throws {
        database = try SQLiteDatabase(path: path)
        self.rows = rows
    }

    /// Checkpoint `generation` is started: those before it that are not written yet will not be.
    func started(_ generation: Int) {
        newest.withLock { $0 = max($0, generation) }
    }

    /// Encodes (`make`) and writes checkpoint `generation` after those before it, off the caller's thread. `done`
    /// gets how it went (on the writer's thread), nil when it was superseded and not written.
    func write(
        _ generation: Int, _ make: @escaping @Sendable () throws -> Checkpoint,
        done: @escaping @Sendable (Result<Timing, any Error>?) -> Void
    ) {
        queue.async { done(self.writeInTurn(generation, make)) }
    }

    /// The same, returning when it is written (a stop, tests).
    func writeAndWait(_ generation: Int, _ make: () throws -> Checkpoint) -> Result<Timing, any Error>? {
        queue.sync { writeInTurn(generation, make) }
    }

    func close() {
        queue.sync { database.close() }
    }

    private func writeInTurn(_ generation: Int, _ make: () throws -> Checkpoint) -> Result<Timing, any Error>? {
        guard newest.withLock({ generation >= $0 }) else { return nil }
        return Result {
            let started = MonotonicClock.now()
            let checkpoint = try make()
            let encoded = MonotonicClock.now()
            try write(checkpoint)
            return Timing(encoding: encoded - started, writing: MonotonicClock.now() - encoded)
        }
    }

    /// One transaction: the checkpoint reflects every input up to `checkpoint.input`. Devices leaving memory get
    /// `resident = 0`; a marked one whose row is missing (it should not be) is written from its state.
    private func write(_ checkpoint: Checkpoint) throws {
        let dictionary = rows.dictionaryToStore
        try database.transaction {
            // The dictionary the rows were compressed against, before them (`DeviceRowCodec`).
            if let dictionary {
                try database.statement("INSERT OR IGNORE INTO row_dictionaries(id, content) VALUES (?, ?)")
                    .run(Int64(dictionary.id), dictionary.content)
            }
            let evicted = try database.statement(
                "INSERT OR REPLACE INTO devices(app, user, state, resident) VALUES (?, ?, ?, 0)")
            for (id, state) in checkpoint.evictedDevices { try evicted.run(id.app, id.user, state) }
            let mark = try database.statement("UPDATE devices SET resident = 0 WHERE app = ? AND user = ?")
            for marked in checkpoint.markedEvicted {
                try mark.run(marked.device.app, marked.device.user)
                if database.changes == 0 { try evicted.run(marked.device.app, marked.device.user, try marked.encode()) }
            }
            let device = try database.statement(
                "INSERT OR REPLACE INTO devices(app, user, state, resident) VALUES (?, ?, ?, 1)")
            for (id, state) in checkpoint.changedDevices { try device.run(id.app, id.user, state) }
            try database.statement("INSERT OR REPLACE INTO checkpoint(id, input, taken_at, state) VALUES (1, ?, ?, ?)")
                .run(checkpoint.input, checkpoint.time, checkpoint.shared)
            let position = try database.statement("INSERT OR REPLACE INTO positions(feed, position) VALUES (?, ?)")
            for (feed, value) in checkpoint.positions { try position.run(feed, value) }
        }
        if dictionary != nil { rows.stored() }
    }
}
