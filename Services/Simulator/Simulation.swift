// Running a simulation: every device is simulated on its own (seeded from the run's seed and its index, so device i
// does not depend on how many devices there are), its records are numbered (seq) in time order, and the streams are
// merged by time. With `disorder` the merge follows a gateway's sending times instead: up to 3 s late, ~1% twice.

import Foundation
import GatewayKit
import TerminalProgress

/// One device's finished stream.
struct DeviceStream {
    var records: [SimRecord]
    var heads: RecordHeads
    var truth: ScenarioTruth
}

/// Simulates every device of `options` (which must be valid).
func simulateDevices(_ options: SimulationOptions) -> [DeviceStream] {
    var progress = ProgressMeter.off()
    return simulateDevices(options, progress: &progress)
}

/// The same, counting each device simulated on `progress` (whose total is the number of devices).
func simulateDevices(_ options: SimulationOptions, progress: inout ProgressMeter) -> [DeviceStream] {
    precondition(options.validationError() == nil, "invalid simulation options: \(options.validationError()!)")
    let startMs = Int64((options.start * 1000).rounded())
    let durationMs = Int64((options.durationMinutes * 60_000).rounded())
    let endMs = startMs + durationMs
    // Staggered starts within the first few minutes (less on short runs).
    let staggerSeconds = min(180, options.durationMinutes * 6)
    let area = LocalFrame(origin: options.origin)
    return options.assignments().enumerated().map { index, scenario in
        var rng = RandomSource(seed: SplitMix64.mix(options.seed, UInt64(index) + 1))
        let deviceStart = startMs + Int64(rng.uniform(0, staggerSeconds * 1000))
        // Start somewhere within 3 km of the origin.
        var home = Point(east: 0, north: 0)
        home.move(3000 * rng.unit().squareRoot(), heading: rng.uniform(0, 2 * Double.pi))
        let user = options.user(index)
        let truth = ScenarioTruth(
            app: options.app, user: user, device: index, scenario: scenario.rawValue,
            drivingStyle: options.drivingStyle(index),
            activityAvailable: scenario.activityAvailable,
            pedometerAvailable: scenario.pedometerAvailable)
        var device = DeviceSim(
            index: index, frame: LocalFrame(origin: area.coordinate(of: home)), startMs: deviceStart,
            endMs: endMs, rng: rng, truth: truth)
        device.begin()
        device.run(scenario)
        let (records, finalTruth) = device.finish()
        progress.advance()
        return DeviceStream(records: records, heads: RecordHeads(app: options.app, user: user), truth: finalTruth)
    }
}

/// The order in which records go out: (sending time, device, record index = seq).
private struct Outgoing {
    var keys: [Int64]
    var indices: [Int32]
}

private func outgoing(_ stream: DeviceStream, device: Int, options: SimulationOptions) -> Outgoing {
    let records = stream.records
    guard options.disorder else {
        return Outgoing(keys: records.map(\.tMs), indices: Array(0..<Int32(records.count)))
    }
    // A gateway sends each record up to 3 s after it was observed, and resends ~1% (a lost acknowledgement). The
    // capabilities record goes first, as a gateway announces the device before its data.
    var rng = RandomSource(seed: SplitMix64.mix(options.seed ^ 0x6469_736F_7264_6572, UInt64(device) + 1))
    var entries: [(send: Int64, index: Int32)] = []
    entries.reserveCapacity(records.count + records.count / 50)
    for (index, record) in records.enumerated() {
        if index == 0 {
            entries.append((record.tMs, 0))
            continue
        }
        entries.append((record.tMs + Int64(rng.uniform(0, 3000)), Int32(index)))
        if rng.chance(0.01) {
            // The resent copy also goes out within 3 s of the observation (before or after the first copy).
            entries.append((record.tMs + Int64(rng.uniform(0, 3000)), Int32(index)))
        }
    }
    entries.sort { ($0.send, $0.index) < ($1.send, $1.index) }
    return Outgoing(keys: entries.map(\.send), indices: entries.map(\.index))
}

/// Writes the streams merged by sending time (ties: device, then seq) with a min-heap over the devices, counting
/// each record on `progress` at its time since the start.
private func writeMerged(
    _ streams: [DeviceStream], options: SimulationOptions, to writer: inout NDJSONWriter,
    progress: inout ProgressMeter
) throws {
    let startMs = Int64((options.start * 1000).rounded())
    let queues = streams.enumerated().map { outgoing($1, device: $0, options: options) }
    var cursors = [Int](repeating: 0, count: queues.count)
    var heap = DeviceHeap(queues.enumerated().compactMap { device, queue in queue.keys.first.map { ($0, device) } })
    while let top = heap.first {
        let device = top.device
        let queue = queues[device]
        let recordIndex = Int(queue.indices[cursors[device]])
        let record = streams[device].records[recordIndex]
        try writer.write(record, seq: recordIndex, heads: streams[device].heads)
        progress.advance(at: Int(record.tMs - startMs))
        cursors[device] += 1
        if cursors[device] < queue.keys.count {
            heap.replaceFirst(key: queue.keys[cursors[device]])
        } else {
            heap.removeFirst()
        }
    }
}

/// Runs a simulation in memory: the NDJSON lines (without newlines) and the ground truth per device.
public func simulate(_ options: SimulationOptions) -> (lines: [String], truth: [ScenarioTruth]) {
    let streams = simulateDevices(options)
    var writer = NDJSONWriter(fileDescriptor: nil)
    var progress = ProgressMeter.off()
    // In memory nothing can fail to write.
    try! writeMerged(streams, options: options, to: &writer, progress: &progress)
    let bytes = writer.takeBuffer()
    let lines = bytes.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    return (lines, streams.map(\.truth))
}

/// Runs a simulation and streams the records (NDJSON or MessagePack) to a file descriptor; returns the ground truth
/// per device.
public func simulate(
    _ options: SimulationOptions, toFileDescriptor fileDescriptor: Int32,
    format: RecordOutputFormat = .ndjson
) throws -> [ScenarioTruth] {
    var progress = ProgressMeter.off()
    return try simulate(options, toFileDescriptor: fileDescriptor, format: format, progress: &progress)
}

/// The same, with progress in two phases: the devices simulated (of `options.devices`), then the records written
/// (up to the simulated duration).
public func simulate(
    _ options: SimulationOptions, toFileDescriptor fileDescriptor: Int32, format: RecordOutputFormat,
    progress: inout ProgressMeter
) throws -> [ScenarioTruth] {
    progress.startPhase(noun: "devices", total: options.devices)
    let streams = simulateDevices(options, progress: &progress)
    progress.startPhase(noun: "records", total: Int((options.durationMinutes * 60_000).rounded()))
    var writer = NDJSONWriter(fileDescriptor: fileDescriptor, format: format)
    try writeMerged(streams, options: options, to: &writer, progress: &progress)
    try writer.flush()
    return streams.map(\.truth)
}

/// The ground truth as JSON: an array with one object per device, keys sorted, pretty-printed.
public func truthJSON(_ truth: [ScenarioTruth]) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return try encoder.encode(truth)
}
