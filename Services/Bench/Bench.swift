import CMessagePack
import DetectionEngine
import Foundation
import Logging
import RecordCodecs
import Replay
import Wire

/// `roadsave-bench FILE.ndjson`: how fast records are decoded and replayed, from NDJSON and from MessagePack, each
/// against a baseline measured in the same run (Foundation's JSONDecoder on the same lines; msgpack-c's bare
/// `msgpack_unpack_next` over the same records as MessagePack), so the ratios mean something on a shared, noisy
/// machine. The file is streamed, never read whole: peak RSS is what the replay itself needs. The MessagePack copy
/// is written to a temporary file by the bench itself. Figures, not assertions: `make bench` prints them.

/// The shape Foundation's decoder gets: the record fields of PROTOCOL §2.
struct FoundationRecord: Decodable {
    var kind: String
    var app: String
    var user: String
    var seq: UInt64?
    var t: Double
    var lat: Double?
    var lon: Double?
    var speed: Double?
    var course: Double?
    var hacc: Double?
    var activity: String?
    var confidence: String?
    var steps: Int?
    var peakG: Double?
    var durationMs: Double?
    var samples: [[Double]]?
    var activityAvailable: Bool?
    var pedometerAvailable: Bool?
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func peakResidentMegabytes() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

func format(_ value: Double) -> String { String(format: "%.0f", value) }

func failBench(_ message: String) -> Never {
    FileHandle.standardError.write(Data("roadsave-bench: \(message)\n".utf8))
    exit(2)
}

@main
struct Bench {
    static let usage = """
        Usage: roadsave-bench FILE.ndjson [--baseline-lines N] [--repeat N] [--json FILE] [--only FIGURE]

        Times decoding and replay of FILE, from NDJSON and from MessagePack (a copy the bench writes to a temporary
        file), and prints records a second with their baselines: Foundation's JSONDecoder (on the first N lines,
        default 200000) for NDJSON, msgpack-c's bare msgpack_unpack_next over the same records for MessagePack.
        Each figure is the best of --repeat runs (default 1). --json FILE also writes the figures as JSON.
        --only runs one figure (foundation, bare, decode-ndjson, decode-msgpack, replay-ndjson, replay-msgpack),
        for profiling.

               roadsave-bench ack-server ENDPOINT

        A bare ROUTER that unpacks, validates and acknowledges gateway batches at once: the baseline of
        scripts/bench_services.py.

               roadsave-bench engines FILE.ndjson | counts FILE.ndjson   (--help: each one's options)

        The engines alone (ns a record, memory a device); the work of each hot path counted (heap allocations
        and, under strace, system calls a record and a batch: scripts/bench_counters.py).

               roadsave-bench build

        Prints "debug" or "release": how these binaries were compiled (the scripts label figures with it).
        """

    static func main() async throws {
        try await measure()
    }

    /// Off the main actor: the replayer is not Sendable and lives only in this function.
    nonisolated static func measure() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "ack-server" {
            try AckServer.run(endpoint: arguments.dropFirst().first ?? "tcp://127.0.0.1:0")
        }
        if arguments.first == "engines" {
            try EngineBench.run(arguments: Array(arguments.dropFirst()))
            return
        }
        if arguments.first == "counts" {
            try await CountsBench.run(arguments: Array(arguments.dropFirst()))
            return
        }
        if arguments.first == "build" {
            // What the benchmark scripts label their figures with: a copied build's folder need not say.
            #if DEBUG
                print("debug")
            #else
                print("release")
            #endif
            return
        }
        guard let path = arguments.first, !path.hasPrefix("-") else {
            print(usage)
            exit(arguments.contains("--help") || arguments.contains("-h") ? 0 : 2)
        }
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.endIndex else { return nil }
            return arguments[index + 1]
        }
        let baselineLines = option("--baseline-lines").flatMap(Int.init) ?? 200_000
        let repeats = max(1, option("--repeat").flatMap(Int.init) ?? 1)
        let jsonPath = option("--json")
        let only = option("--only")

        // The MessagePack copy, streamed through the reader and writer replay uses.
        let messagePackPath = NSTemporaryDirectory() + "roadsave-bench-\(getpid()).msgpack"
        defer { unlink(messagePackPath) }
        let (records, fileBytes) = convert(path, to: messagePackPath)
        print(
            "file: \(path), \(records) records, \(fileBytes / 1_048_576) MiB (MessagePack copy: "
                + "\(fileSize(messagePackPath) / 1_048_576) MiB)")

        func best(_ name: String, _ body: () async -> Double) async -> Double {
            guard only == nil || only == name else { return .nan }
            var rate = 0.0
            for _ in 0..<repeats { rate = max(rate, await body()) }
            return rate
        }

        let foundationRate = await best("foundation") { foundation(path, lines: baselineLines) }
        let bareRate = await best("bare") { bareUnpack(messagePackPath) }
        let decodeJSONRate = await best("decode-ndjson") { decode(path, .ndjson) }
        let decodeMessagePackRate = await best("decode-msgpack") { decode(messagePackPath, .msgpack) }
        var events = 0
        var devices = 0
        let replayJSONRate = await best("replay-ndjson") {
            await replay(path, .ndjson, events: &events, devices: &devices)
        }
        let replayMessagePackRate = await best("replay-msgpack") {
            await replay(messagePackPath, .msgpack, events: &events, devices: &devices)
        }
        let peak = peakResidentMegabytes()

        func ratio(_ value: Double, _ base: Double) -> String { String(format: "%.1fx", value / base) }
        func perRecord(_ rate: Double) -> String { String(format: "%.0f ns/record", 1e9 / rate) }
        print(
            "baseline  Foundation JSONDecoder:       \(format(foundationRate)) records/s (\(min(baselineLines, records)) records)"
        )
        print("baseline  msgpack-c bare unpack:        \(format(bareRate)) records/s")
        print(
            "decode    NDJSON (read+scan+validate):  \(format(decodeJSONRate)) records/s, \(perRecord(decodeJSONRate)) (\(ratio(decodeJSONRate, foundationRate)) JSONDecoder)"
        )
        print(
            "decode    msgpack (read+scan+validate): \(format(decodeMessagePackRate)) records/s, \(perRecord(decodeMessagePackRate)) (\(ratio(decodeMessagePackRate, bareRate)) bare unpack)"
        )
        print(
            "replay    from NDJSON:                  \(format(replayJSONRate)) records/s (\(ratio(replayJSONRate, foundationRate)) JSONDecoder; target >= 500000), \(events) events, \(devices) devices"
        )
        print(
            "replay    from msgpack:                 \(format(replayMessagePackRate)) records/s (\(ratio(replayMessagePackRate, bareRate)) bare unpack; target >= 1000000)"
        )
        print("peak RSS: \(format(peak)) MiB")

        if let jsonPath {
            let figures = [
                BenchFigure(figure: "decode Foundation JSONDecoder", value: foundationRate, unit: "records/s"),
                BenchFigure(figure: "decode msgpack-c bare unpack", value: bareRate, unit: "records/s"),
                BenchFigure(
                    figure: "decode ndjson", value: decodeJSONRate, unit: "records/s",
                    baseline: "Foundation JSONDecoder", baselineValue: foundationRate),
                BenchFigure(
                    figure: "decode msgpack", value: decodeMessagePackRate, unit: "records/s",
                    baseline: "msgpack-c bare unpack", baselineValue: bareRate),
                BenchFigure(
                    figure: "replay ndjson", value: replayJSONRate, unit: "records/s",
                    baseline: "Foundation JSONDecoder", baselineValue: foundationRate, target: ">= 500000"),
                BenchFigure(
                    figure: "replay msgpack", value: replayMessagePackRate, unit: "records/s",
                    baseline: "msgpack-c bare unpack", baselineValue: bareRate, target: ">= 1000000"),
                BenchFigure(
                    figure: "replay peak RSS", value: peak, unit: "MiB",
                    target: "independent of file size"),
            ]
            do {
                try BenchFigure.write(figures, to: jsonPath)
            } catch {
                failBench("--json \(jsonPath): \(error)")
            }
        }
    }

    static func fileSize(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : 0
    }

    /// NDJSON → MessagePack records, streamed; the number of records and the NDJSON file's size.
    static func convert(_ path: String, to target: String) -> (records: Int, bytes: Int) {
        let reader: RecordFileReader
        do {
            reader = try RecordFileReader(path: path, format: .ndjson)
        } catch {
            failBench("\(error)")
        }
        let descriptor = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { failBench("cannot write \(target): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var writer = RecordFileWriter(descriptor: descriptor, format: .msgpack)
        var records = 0
        do {
            while let (_, item) = reader.next() {
                guard case .record(let record) = item else { continue }
                try writer.write(record)
                records += 1
            }
            try writer.flush()
        } catch {
            failBench("\(target): \(error)")
        }
        if let failure = reader.failure { failBench(failure.description) }
        return (records, reader.bytesRead)
    }

    /// Foundation's JSONDecoder on the first `lines` lines, one record at a time as a service would receive them.
    static func foundation(_ path: String, lines: Int) -> Double {
        var reader: NDJSONLineReader
        do {
            reader = try NDJSONLineReader(path: path)
        } catch {
            failBench(error.description)
        }
        var sample: [Data] = []
        reader.forEachLineUntil(
            { line, _ in
                sample.append(Data(line))
                return sample.count < lines
            }, ended: { _ in })
        let decoder = JSONDecoder()
        var count = 0
        let time = seconds {
            for line in sample where (try? decoder.decode(FoundationRecord.self, from: line)) != nil { count += 1 }
        }
        return Double(sample.count) / time
    }

    /// msgpack-c alone: `msgpack_unpack_next` over the MessagePack records, read in 1 MiB chunks, nothing else.
    static func bareUnpack(_ path: String) -> Double {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { failBench("cannot read \(path)") }
        defer { close(descriptor) }
        let capacity = 1 << 20
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        var unpacked = msgpack_unpacked()
        msgpack_unpacked_init(&unpacked)
        defer { msgpack_unpacked_destroy(&unpacked) }
        var count = 0
        let time = seconds {
            var filled = 0
            while true {
                let got = read(descriptor, buffer + filled, capacity - filled)
                guard got > 0 else { break }
                filled += got
                var offset = 0
                while msgpack_unpack_next(&unpacked, buffer, filled, &offset) == MSGPACK_UNPACK_SUCCESS { count += 1 }
                // The tail is the start of a record that goes on in the next chunk.
                memmove(buffer, buffer + offset, filled - offset)
                filled -= offset
            }
        }
        return Double(count) / time
    }

    /// The record reader alone: read, scan, validate; records are counted and dropped.
    static func decode(_ path: String, _ format: RecordFileFormat) -> Double {
        let reader: RecordFileReader
        do {
            reader = try RecordFileReader(path: path, format: format)
        } catch {
            failBench("\(error)")
        }
        var count = 0
        let time = seconds {
            while let (_, item) = reader.next() {
                if case .record = item { count += 1 }
            }
        }
        if let failure = reader.failure { failBench(failure.description) }
        return Double(count) / time
    }

    /// The whole replay: read, decode, order per device, engines, events encoded (and discarded).
    static func replay(_ path: String, _ format: RecordFileFormat, events: inout Int, devices: inout Int) async
        -> Double
    {
        let whole = await replayWhole(path, format, category: "bench")
        events = whole.events
        devices = whole.devices
        return Double(whole.lines) / whole.seconds
    }

    /// `roadsave replay`'s work on a file, what the timed and the counted benchmarks both run: every record read,
    /// decoded, ordered per device and run through the engines, the events encoded as JSON (and discarded).
    /// `seconds`: the replay itself, from the first record read (the file opened before) to the engines finished.
    static func replayWhole(_ path: String, _ format: RecordFileFormat, category: String) async
        -> (lines: Int, events: Int, devices: Int, seconds: Double)
    {
        let reader: RecordFileReader
        do {
            reader = try RecordFileReader(path: path, format: format)
        } catch {
            failBench("\(error)")
        }
        var eventCount = 0
        let replayer = Replayer(platform: EmbeddedPlatform(), log: Log(category: category, minimumLevel: .error)) {
            event in
            eventCount += event.json().utf8.count > 0 ? 1 : 0
        }
        let start = DispatchTime.now().uptimeNanoseconds
        await ReplayCommand.replay(reader, into: replayer)
        await replayer.finish()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        if let failure = reader.failure { failBench(failure.description) }
        return (replayer.summary.lines, eventCount, replayer.summary.devices, seconds)
    }
}
