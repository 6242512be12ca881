import DetectionEngine
import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import ZeroMQ

/// The core's checkpoints written off the reactor thread, and what their end lets go.
extension DetectionServing {
    // MARK: Checkpoints

    /// Writes the core's checkpoint: encoded and written by the checkpoint writer (`CheckpointWriter`, a thread and
    /// a connection of its own) while this thread goes on, or at once for a stop's last one. The devices leaving
    /// memory are kept here until it is written (and given back from here if named meanwhile).
    func write(_ order: CheckpointOrder) {
        guard let store else { return }
        evicted.left(order.leaving, storedAlready: order.leavingUnchanged)
        let leavingAll = evicted.unsaved.values.sorted { $0.device < $1.device }
        evictionsInFlight = (order.generation, leavingAll.map(\.device))
        // A device back in memory since it left is written as it is now (with `changed`), not as it left. Those whose
        // stored row is current are only marked out of memory; the others are encoded and written.
        let leaving = leavingAll.filter { !core.fleet.isResident($0.device) }
        let leavingNow = leaving.filter { !evicted.storedAlready.contains($0.device) }
        let markedNow = leaving.filter { evicted.storedAlready.contains($0.device) }
        let (shared, states, input, positions, time) = (
            order.shared, order.changed, order.input, order.positions, order.at
        )
        let generation = order.generation
        store.checkpoints.started(generation)
        let rows = store.rows
        let make: @Sendable () throws -> CheckpointWriter.Checkpoint = {
            let encoded = try Self.encode(
                shared, states: states, leaving: leavingNow, markedOnly: markedNow, rows: rows)
            return CheckpointWriter.Checkpoint(
                input: input, shared: encoded.shared, changedDevices: encoded.devices,
                evictedDevices: encoded.evicted, markedEvicted: encoded.markedOnly,
                positions: positions, time: time)
        }
        // Counts, not the lists: `done` below must not keep the states alive (`make` lets go of them once run).
        let (changedCount, encodedCount, markedCount) = (states.count, leavingNow.count, markedNow.count)
        let bound = ReactorBound(self, on: reactor)
        let log = log
        let done: @Sendable (Result<CheckpointWriter.Timing, any Error>?) -> Void = { result in
            bound.value.checkpointEnded(generation: generation, result)
            if case .success(let timing) = result {
                // What sizes a checkpoint (and detection's memory between two), for tuning at scale.
                log.debug(
                    "checkpoint",
                    [
                        "resident": String(bound.value.core?.fleet.residentCount ?? 0),
                        "changed": String(changedCount), "leavingEncoded": String(encodedCount),
                        "leavingMarked": String(markedCount),
                        "encodeSeconds": String(format: "%.3f", timing.encoding),
                        "writeSeconds": String(format: "%.3f", timing.writing),
                    ])
            }
        }
        guard !order.wait else {
            done(store.checkpoints.writeAndWait(generation, make))
            return
        }
        store.checkpoints.write(generation, make) { [reactor] result in
            reactor.post { _ in done(result) }
        }
    }

    private func checkpointEnded(generation: Int, _ result: Result<CheckpointWriter.Timing, any Error>?) {
        let outcome: CheckpointOutcome
        switch result {
        case .success(let timing)?: outcome = .written(cost: timing.encoding + timing.writing)
        case .failure(let error)?: outcome = .failed("\(error)")
        case nil: outcome = .superseded
        }
        if case .written = outcome, let (written, leaving) = evictionsInFlight, written == generation {
            evicted.written(leaving)
            if leaving.count >= 1000 { returnFreedMemorySoon() }
        }
        if evictionsInFlight?.generation == generation { evictionsInFlight = nil }
        guard core != nil else { return }
        perform(core.checkpointWritten(generation: generation, outcome: outcome, at: time))
    }

    /// The states of a large eviction are freed only once the checkpoint writer's closures have let go of them: the
    /// heap is trimmed a moment after the write is taken into account. Trimmed at once, nothing was free yet, and the
    /// heap kept the pages of every state that left until the next large eviction (664 MiB settled with 327 devices
    /// in memory, 400,000 known).
    private func returnFreedMemorySoon() {
        _ = loop?.schedule(after: 0.2) { EvictedDevices.returnFreedMemory() }
    }

    typealias Encoded = (
        shared: [UInt8], devices: [(DeviceID, [UInt8])], evicted: [(DeviceID, [UInt8])],
        markedOnly: [DetectionStore.MarkedEviction]
    )

    /// Encodes a checkpoint (off the reactor thread). `markedOnly`: devices leaving memory whose stored row is
    /// current; each carries a way to encode its state, for a row that turns out to be missing.
    static func encode(
        _ shared: FleetSharedState, states: [FleetDeviceState], leaving: [EvictedState],
        markedOnly: [EvictedState], rows: DeviceRowCodec
    ) throws -> Encoded {
        // One encoder for the whole checkpoint: the devices of an application repeat its settings.
        let encoder = StreamingJSONEncoder(reusing: DetectionSettings.self)
        // Those leaving first: each state (~4 KB) goes as soon as its row (~200 bytes) is made.
        let evictedStates = try leaving.map { evicted in
            (evicted.device, try evicted.encodedRow { rows.compress(try checkpointJSON($0, encoder)) })
        }
        let devices = try states.map { ($0.device, rows.compress(try checkpointJSON($0, encoder))) }
        let marked = markedOnly.map { evicted in
            DetectionStore.MarkedEviction(device: evicted.device) {
                try evicted.encodedRow { rows.compress(try checkpointJSON($0)) }
            }
        }
        return (try checkpointJSON(shared, encoder), devices, evictedStates, marked)
    }

    /// A checkpoint row's JSON: written directly (`StreamingJSONEncoder`, about a quarter of JSONEncoder's time), or
    /// by JSONEncoder for a value that encoder does not follow. Members in the order the types encode them (stable;
    /// JSONEncoder's unsorted order was its tables' hash order), not sorted: sorting took about 4 % of detection's
    /// samples while many devices left memory, and JSONDecoder does not need it.
    static func checkpointJSON<Value: Encodable>(
        _ value: Value,
        _ encoder: StreamingJSONEncoder = StreamingJSONEncoder()
    ) throws -> [UInt8] {
        if let bytes = try? encoder.encode(value) { return bytes }
        return Array(try JSONEncoder().encode(value))
    }
}
