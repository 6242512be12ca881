// Many mostly-idle devices (`roadsave simulate --idle-devices N`): each announces itself with a capabilities record
// and one parked location fix, then stays silent. Spread evenly over the run and merged by time with the active
// devices' records, they give the shape of a large fleet where most phones are known but quiet (detection's memory
// benchmark). Generated on the fly: a million idle devices cost no memory in the simulator.

import GatewayKit
import TerminalProgress

/// The idle part of a simulation.
public struct IdleDeviceOptions: Sendable, Equatable {
    /// Number of idle devices (0: none).
    public var count: Int
    /// Users are `userPrefix` + the 1-based device number, zero-padded to seven digits: idle-0000001, …
    public var userPrefix: String

    public static let maximumCount = 10_000_000

    public init(count: Int = 0, userPrefix: String = "idle-") {
        self.count = count
        self.userPrefix = userPrefix
    }

    /// The user of idle device `index` (0-based).
    public func user(_ index: Int) -> String {
        let number = String(index + 1)
        return userPrefix + String(repeating: "0", count: max(0, 7 - number.count)) + number
    }

    public func validationError(active: SimulationOptions) -> SimulationError? {
        if count < 0 || count > Self.maximumCount {
            return SimulationError(
                option: "--idle-devices", reason: "must be between 0 and \(Self.maximumCount), got \(count)")
        }
        if count > 0, active.disorder {
            return SimulationError(option: "--idle-devices", reason: "does not combine with --disorder")
        }
        if count > 0, userPrefix == active.userPrefix {
            return SimulationError(option: "--idle-devices", reason: "idle and active users need different prefixes")
        }
        return nil
    }
}

/// The idle devices' records in time order: device i announces at start + i × duration / count (a capabilities
/// record, seq 0), and sends its one fix (seq 1) 200 ms later.
struct IdleRecordSource {
    let options: IdleDeviceOptions
    let app: String
    let startMs: Int64
    let spacingMs: Double
    let origin: Coordinate
    let seed: UInt64
    private var nextDevice = 0
    /// Devices that announced and have their fix still to send (times increase with the device, so a FIFO).
    private var fixes: [Int] = []
    private var fixHead = 0

    static let fixDelayMs: Int64 = 200

    init(options: IdleDeviceOptions, simulation: SimulationOptions) {
        self.options = options
        app = simulation.app
        startMs = Int64((simulation.start * 1000).rounded())
        spacingMs = simulation.durationMinutes * 60_000 / Double(max(1, options.count))
        origin = simulation.origin
        seed = simulation.seed
    }

    func announceMs(_ device: Int) -> Int64 { startMs + Int64(Double(device) * spacingMs) }

    /// The time of the next record, if any.
    var nextMs: Int64? {
        let announce = nextDevice < options.count ? announceMs(nextDevice) : nil
        let fix = fixHead < fixes.count ? announceMs(fixes[fixHead]) + Self.fixDelayMs : nil
        switch (announce, fix) {
        case (let a?, let f?): return min(a, f)
        case (let a?, nil): return a
        case (nil, let f?): return f
        case (nil, nil): return nil
        }
    }

    /// The next record: (device, seq, record).
    mutating func next() -> (device: Int, seq: Int, record: SimRecord)? {
        let announce = nextDevice < options.count ? announceMs(nextDevice) : nil
        let fixDevice = fixHead < fixes.count ? fixes[fixHead] : nil
        // A fix due at the same millisecond as the next announcement goes first (its device announced earlier).
        if let fixDevice, announce == nil || announceMs(fixDevice) + Self.fixDelayMs <= announce! {
            fixHead += 1
            if fixHead > 4096, fixHead * 2 > fixes.count {
                fixes.removeFirst(fixHead)
                fixHead = 0
            }
            var random = RandomSource(seed: SplitMix64.mix(seed ^ 0x6964_6C65, UInt64(fixDevice) + 1))
            // Parked within about 5 km of the origin.
            let latitude = origin.latitude + random.uniform(-0.045, 0.045)
            let longitude = origin.longitude + random.uniform(-0.055, 0.055)
            let record = SimRecord(
                tMs: announceMs(fixDevice) + Self.fixDelayMs,
                body: .location(
                    latitude: latitude, longitude: longitude, speed: 0, course: nil,
                    hacc: 10 + random.uniform(0, 20).rounded()))
            return (fixDevice, 1, record)
        }
        guard let announce else { return nil }
        let device = nextDevice
        nextDevice += 1
        fixes.append(device)
        return (
            device, 0, SimRecord(tMs: announce, body: .capabilities(activityAvailable: true, pedometerAvailable: true))
        )
    }
}

/// Writes the active devices' records (no disorder: by time, device, seq) merged by time with the idle devices'
/// (active first at the same millisecond). Returns the active devices' truth.
func writeWithIdleDevices(
    _ options: SimulationOptions, idle: IdleDeviceOptions,
    to writer: inout NDJSONWriter, progress: inout ProgressMeter
) throws -> [ScenarioTruth] {
    precondition(idle.validationError(active: options) == nil)
    progress.startPhase(noun: "devices", total: options.devices)
    let streams = simulateDevices(options, progress: &progress)
    let startMs = Int64((options.start * 1000).rounded())
    progress.startPhase(noun: "records", total: Int((options.durationMinutes * 60_000).rounded()))
    var cursors = [Int](repeating: 0, count: streams.count)
    var heap = DeviceHeap(
        streams.enumerated().compactMap { device, stream in
            stream.records.first.map { ($0.tMs, device) }
        })

    var source = IdleRecordSource(options: idle, simulation: options)
    var idleHeads: (device: Int, heads: RecordHeads)?
    while true {
        let activeMs = heap.first?.key
        if let idleMs = source.nextMs, activeMs == nil || idleMs < activeMs! {
            let (device, seq, record) = source.next()!
            if idleHeads?.device != device {
                idleHeads = (device, RecordHeads(app: options.app, user: idle.user(device)))
            }
            try writer.write(record, seq: seq, heads: idleHeads!.heads)
            progress.advance(at: Int(record.tMs - startMs))
            continue
        }
        guard let top = heap.first else { break }
        let device = top.device
        let index = cursors[device]
        let record = streams[device].records[index]
        try writer.write(record, seq: index, heads: streams[device].heads)
        progress.advance(at: Int(record.tMs - startMs))
        cursors[device] += 1
        if cursors[device] < streams[device].records.count {
            heap.replaceFirst(key: streams[device].records[cursors[device]].tMs)
        } else {
            heap.removeFirst()
        }
    }
    return streams.map(\.truth)
}

/// Runs a simulation with idle devices and streams the NDJSON to a file descriptor; returns the active devices'
/// ground truth.
public func simulate(
    _ options: SimulationOptions, idle: IdleDeviceOptions, toFileDescriptor fileDescriptor: Int32,
    format: RecordOutputFormat = .ndjson
) throws -> [ScenarioTruth] {
    var progress = ProgressMeter.off()
    return try simulate(options, idle: idle, toFileDescriptor: fileDescriptor, format: format, progress: &progress)
}

/// The same, with progress in two phases: the active devices simulated, then the records written (up to the
/// simulated duration).
public func simulate(
    _ options: SimulationOptions, idle: IdleDeviceOptions, toFileDescriptor fileDescriptor: Int32,
    format: RecordOutputFormat, progress: inout ProgressMeter
) throws -> [ScenarioTruth] {
    var writer = NDJSONWriter(fileDescriptor: fileDescriptor, format: format)
    let truth = try writeWithIdleDevices(options, idle: idle, to: &writer, progress: &progress)
    try writer.flush()
    return truth
}

/// The same in memory: the NDJSON lines (without newlines) and the active devices' truth.
public func simulate(_ options: SimulationOptions, idle: IdleDeviceOptions) -> (lines: [String], truth: [ScenarioTruth])
{
    var writer = NDJSONWriter(fileDescriptor: nil)
    var progress = ProgressMeter.off()
    // In memory nothing can fail to write.
    let truth = try! writeWithIdleDevices(options, idle: idle, to: &writer, progress: &progress)
    let bytes = writer.takeBuffer()
    let lines = bytes.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    return (lines, truth)
}
