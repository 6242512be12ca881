import DetectionEngine
import DetectionService
import Feeds
import Foundation
import IngestService
import Logging
import RecordCodecs
import Replay
import RoadSaveModel
import Wire

/// `roadsave-bench counts FILE.ndjson`: the work of each hot path counted, not timed: heap allocations a record and
/// a batch, read from the allocation counter (scripts/alloc-counter) when it is preloaded, and markers around each
/// region for `strace`, so that scripts/bench_counters.py counts its system calls. Work does not move with the
/// machine's load: `make test` guards these counts, `make bench` prints them (docs/benchmarks.md, Counters).
///
/// Each path is run once unmeasured first (metadata, caches, the first pages of a journal), then measured. The
/// figures are of the whole process, which does nothing else meanwhile (no sockets, no other task).
enum CountsBench {
    static let usage = """
        Usage: roadsave-bench counts FILE.ndjson [--json FILE] [--only PATH[,PATH...]]

        Runs FILE's records through each hot path and prints the heap allocations a record and a batch each made,
        read from the allocation counter scripts/alloc-counter/alloc_counter.c when it is preloaded (LD_PRELOAD;
        without it every count is "unavailable"). Around each measured region it makes a marker system call,
        access("roadsave-counts:begin:PATH") and access("roadsave-counts:end:PATH"), that scripts/bench_counters.py
        finds under strace to count the region's system calls. Paths:
          replay msgpack, replay ndjson   roadsave replay's work (read, decode, order, engines, events encoded)
          engines                         DeviceFleet over decoded records (as roadsave-bench engines)
          codec decode msgpack|json       a gateway batch of 1000 records decoded and validated
          codec encode msgpack            a batch of 1000 records encoded (ingest, for a JSON gateway)
          ingest batch N                  sensor-ingest's work on a gateway batch of N records (100, 1000):
                                          validation, device admission, the journal's append (16 shards, a
                                          temporary journal, fsync'd) and the acknowledgement
          ingest feed read N              the journal read for detection's next reply after each batch
          detection feed reply N          detection's work on that reply: the shell's decoding and the core's apply
          checkpoint device               a checkpoint of every device after the batches of 100 (its "records"
                                          are devices): each state's JSON row, compressed, as detection writes it
        --json FILE writes one object per path: path, records, batches, allocations (null when unavailable).
        """

    static func run(arguments: [String]) async throws {
        guard let options = BenchArguments.read(arguments, usage: usage) else { return }
        let path = options.path
        // Paths as printed ("checkpoint-device") or as in the usage ("checkpoint device"); a prefix names several.
        func dashed(_ name: some StringProtocol) -> String { name.replacingOccurrences(of: " ", with: "-") }
        let only = options.value(of: "--only").map { Set($0.split(separator: ",").map { dashed($0) }) }
        for requested in only ?? [] where !paths.contains(where: { dashed($0).hasPrefix(requested) }) {
            failBench("--only: no path \(requested); the paths: \(paths.map { dashed($0) }.joined(separator: ", "))")
        }
        func wanted(_ name: String) -> Bool {
            let path = dashed(name)
            return only.map { $0.contains { path.hasPrefix($0) } } ?? true
        }

        let counter = AllocationCounter()
        if !counter.isAvailable {
            print("allocations: unavailable (the allocation counter is not preloaded: scripts/bench_counters.py)")
        }
        guard let data = FileManager.default.contents(atPath: path) else { failBench("cannot read \(path)") }
        var records: [SensorRecord] = []
        for line in data.split(separator: 0x0A) {
            if let record = try? RecordDecoding.record(fromJSON: [UInt8](line)) { records.append(record) }
        }
        print("file: \(path), \(records.count) records")
        let work = NSTemporaryDirectory() + "roadsave-counts-\(getpid())"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }

        var regions: [Region] = []
        func region(_ name: String) -> Region {
            let region = Region(name, counter: counter)
            regions.append(region)
            return region
        }

        for format in [RecordFileFormat.msgpack, .ndjson] where wanted("replay \(format)") {
            let file: String
            if format == .msgpack {
                file = work + "/records.msgpack"
                _ = Bench.convert(path, to: file)
            } else {
                file = path
            }
            _ = await replay(file, format)
            let measured = region("replay \(format)")
            let count = await measured.measureAsync { await replay(file, format) }
            measured.add(records: count, batches: 1)
        }
        if wanted("engines") {
            _ = engines(records)
            let measured = region("engines")
            measured.measure { _ = engines(records) }
            measured.add(records: records.count, batches: 1)
        }
        let batchesOf1000 = stride(from: 0, to: records.count, by: 1000).map {
            Array(records[$0..<min(records.count, $0 + 1000)])
        }
        for contentType in [ContentType.msgpack, .json] where wanted("codec decode \(name(contentType))") {
            let bodies = batchesOf1000.map { RecordBatch.encodeBatch($0, as: contentType) }
            let identifiers = IdentifierCache()
            for body in bodies.prefix(3) { _ = try? RecordBatch.decodeBatch(body, contentType: contentType) }
            let measured = region("codec decode \(name(contentType))")
            for body in bodies {
                measured.measure {
                    _ = try? RecordBatch.decodeBatch(body, contentType: contentType, identifiers: identifiers)
                }
            }
            measured.add(records: records.count, batches: bodies.count)
        }
        if wanted("codec encode msgpack") {
            for batch in batchesOf1000.prefix(3) { _ = RecordBatch.encodeBatch(batch, as: .msgpack) }
            let measured = region("codec encode msgpack")
            for batch in batchesOf1000 { measured.measure { _ = RecordBatch.encodeBatch(batch, as: .msgpack) } }
            measured.add(records: records.count, batches: batchesOf1000.count)
        }
        for size in [100, 1000]
        where wanted("ingest batch \(size)") || wanted("ingest feed read \(size)")
            || wanted("detection feed reply \(size)") || (size == 100 && wanted("checkpoint device"))
        {
            try pipeline(
                records, batchSize: size, directory: work + "/journal-\(size)",
                regions: (
                    region("ingest batch \(size)"), region("ingest feed read \(size)"),
                    region("detection feed reply \(size)")
                ), checkpoint: size == 100 && wanted("checkpoint device") ? region("checkpoint device") : nil)
        }

        // `paths` checks --only before any work; a region it does not list would be refused there (the count
        // guards run the debug build, where this holds the two together).
        assert(regions.allSatisfy { paths.contains($0.name) }, "a region missing from CountsBench.paths")
        print(
            "path                              records  batches   allocations  allocs/record  allocs/batch")
        for region in regions {
            print(
                region.name.padding(toLength: 32, withPad: " ", startingAt: 0)
                    + String(format: " %8d %8d", region.records, region.batches)
                    + (region.allocations.map {
                        String(
                            format: " %13llu %14.3f %13.1f", $0, Double($0) / Double(max(1, region.records)),
                            Double($0) / Double(max(1, region.batches)))
                    } ?? "   unavailable"))
        }
        if let jsonPath = options.value(of: "--json") {
            let body = "[\n" + regions.map(\.json).joined(separator: ",\n") + "\n]\n"
            try Data(body.utf8).write(to: URL(fileURLWithPath: jsonPath))
        }
    }

    /// Every path this benchmark counts, in its order.
    static let paths =
        [
            "replay msgpack", "replay ndjson", "engines", "codec decode msgpack", "codec decode json",
            "codec encode msgpack",
        ]
        + [100, 1000].flatMap { ["ingest batch \($0)", "ingest feed read \($0)", "detection feed reply \($0)"] }
        + ["checkpoint device"]

    static func name(_ contentType: ContentType) -> String { contentType == .msgpack ? "msgpack" : "json" }

    /// `roadsave replay`'s work on a file (`Bench.replayWhole`). The records read.
    static func replay(_ file: String, _ format: RecordFileFormat) async -> Int {
        await Bench.replayWhole(file, format, category: "counts").lines
    }

    static func engines(_ records: [SensorRecord]) -> Int {
        var shell = EngineBenchShell()
        for record in records { shell.receive(record, now: nil) }
        shell.finish()
        return shell.events
    }

    /// The records in gateway batches of `batchSize` (MessagePack, with a watermark header, as `roadsave send`
    /// sends them) through sensor-ingest's validation and journal (16 shards, its default) and, after each batch,
    /// the journal's next reply to detection and detection's work on it. The first tenth of the batches is not
    /// measured (devices admitted for the first time, the journal's first pages).
    static func pipeline(
        _ records: [SensorRecord], batchSize: Int, directory: String,
        regions: (ingest: Region, read: Region, detection: Region), checkpoint: Region? = nil
    ) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let log = Log(category: "counts", minimumLevel: .error)
        let journal = try Journal(directory: directory, shards: 16, log: log)
        defer { journal.close() }
        let applications = Set(records.map(\.device.app))
        let identifiers = IdentifierCache()
        let contentType = ContentType.msgpack.frame
        let decoder = JournalReplyDecoder(log: log)
        // The records' last time as the wall clock, not the machine's: it is written into every checkpoint row
        // (a device's last arrival), and a number's digits change what it costs to write (a clock reading made
        // the `checkpoint device` count differ from run to run, by up to 3 %, on debug builds).
        let time = DetectionTime(wall: records.map(\.t).max() ?? 0, monotonic: 1000)
        var core = DetectionCore(
            options: DetectionCore.Options(), fleet: DeviceFleet(), journalEndpoints: ["counts"], at: time)
        var evicted = NoEvictedDevices()
        let platform = EmbeddedPlatform()
        var lastInput: Int64 = 0
        func perform(_ actions: [DetectionCoreAction]) {
            for action in actions {
                switch action {
                case .commit(let commit):
                    lastInput += Int64(commit.inputs.count)
                    core.committed(lastInput: commit.inputs.isEmpty ? nil : lastInput)
                case .callPlatform(let call):
                    let answer: PlatformAnswer =
                        switch call {
                        case .settings(let app): .settings(app: app, fetch: .fetched(platform.defaultSettings))
                        case .evaluation(let device, let candidate):
                            .verdict(
                                device: device, crashID: candidate.crashID,
                                outcome: .verdict(platform.evaluator.verdict(for: candidate)))
                        case .commandSettings(let waiting, _):
                            .commandSettings(waiting: waiting, fetch: .fetched(platform.defaultSettings))
                        }
                    perform(core.platformAnswered(answer, at: time, evicted: &evicted))
                default:
                    break
                }
            }
        }
        perform(core.start(at: time, evicted: &evicted))
        perform(
            core.journalReplied(
                0, JournalAnswer(feed: journal.feedID, after: 0, to: 0, head: 0), chunks: [], at: time,
                evicted: &evicted))

        let batches = stride(from: 0, to: records.count, by: batchSize).map {
            Array(records[$0..<min(records.count, $0 + batchSize)])
        }
        let warmUp = max(1, batches.count / 10)
        var position: UInt64 = 0
        for (number, batch) in batches.enumerated() {
            let measured = number >= warmUp
            let watermark = GatewayBatchHeader(
                gateway: "counts", progress: .watermark(batch.map(\.t).min()! - 10))
            let message: [[UInt8]] = [
                Array("gateway-\(number % 7)".utf8), Array("batch-\(number)".utf8), contentType,
                RecordBatch.encodeBatch(batch, as: .msgpack), watermark.encode(as: .msgpack),
            ]
            var acknowledged = 0
            let ingest = {
                let now = journal.now
                let gatewayBatch = GatewayBatch(
                    message: message, applications: applications, maximumBatch: RecordBatch.maximumRecords,
                    identifiers: identifiers,
                    devices: ({ journal.admit(devicesOf: $0, at: now) }, journal.refusal(forNewDeviceOf:)))
                try journal.append([
                    Journal.Batch(
                        gatewayBatchID: gatewayBatch.batchID[...], records: gatewayBatch.records,
                        encoded: gatewayBatch.encoded, header: gatewayBatch.header, slots: gatewayBatch.slots)
                ])
                acknowledged += gatewayBatch.reply.count > 0 ? gatewayBatch.acknowledgement.accepted : 0
            }
            if measured { try regions.ingest.measure(ingest) } else { try ingest() }
            precondition(acknowledged == batch.count, "ingest refused records of batch \(number)")
            // What detection asks next (JournalReader: 256 items, 2 MiB), and what it does with the answer.
            let request = FeedRequest(
                id: UInt64(number + 1), feed: journal.feedID, after: position, maxItems: 256, maxBytes: 2 << 20,
                acknowledged: 0, consumer: "counts")
            let read = { try journal.read(request) }
            let reply = measured ? try regions.read.measure(read) : try read()
            let answer = JournalAnswer(feed: journal.feedID, after: position, to: reply.to, head: journal.head)
            // The items as frames of their own, as a reply a frame an item arrives (made outside the region: the
            // journal's items are slices of its statements' arrays, which a reply's frames never are).
            let frames = reply.items.map { Array($0) }
            let apply = {
                let chunks = decoder.chunks(FeedItems(frames: frames[...]))
                perform(core.journalReplied(0, answer, chunks: chunks, at: time, evicted: &evicted))
            }
            if measured { regions.detection.measure(apply) } else { apply() }
            position = reply.to
            if measured {
                regions.ingest.add(records: batch.count, batches: 1)
                regions.read.add(records: batch.count, batches: 1)
                regions.detection.add(records: batch.count, batches: 1)
            }
        }
        precondition(core.counts.recordsRead == records.count, "detection read \(core.counts.recordsRead) records")
        // A checkpoint of every device as the fleet stands at the end (the first ten once before: the rows'
        // dictionary is made from the first).
        if let checkpoint {
            var fleet = core.fleet
            let states = fleet.takeChangedDevices().compactMap { fleet.deviceState($0) }
            let encoder = CheckpointRowEncoder()
            // The shared state made outside the region: it sorts the journal's streams, named after its random
            // feed ID, and an unspecialized sort's allocations (debug builds) follow the order it is given.
            let shared = fleet.sharedState
            _ = try encoder.encode(shared, states: Array(states.prefix(10)))
            try checkpoint.measure { _ = try encoder.encode(shared, states: states) }
            checkpoint.add(records: states.count, batches: 1)
        }
    }
}

/// The heap allocation counter of scripts/alloc-counter, when it is preloaded: `roadsave_thread_allocations()`, the
/// calling thread's count (a region is this thread's work, whatever other threads do), looked up at run time (the
/// product never links it).
struct AllocationCounter {
    private let read: (@convention(c) () -> UInt64)?

    init() {
        read = dlsym(nil, "roadsave_thread_allocations").map {
            unsafeBitCast($0, to: (@convention(c) () -> UInt64).self)
        }
    }

    var isAvailable: Bool { read != nil }

    /// Allocations of the calling thread so far (0 when unavailable).
    func count() -> UInt64 { read?() ?? 0 }
}

/// One path's count, over one or more measured regions of it.
final class Region {
    let name: String
    private let counter: AllocationCounter
    private(set) var records = 0
    private(set) var batches = 0
    private var counted: UInt64 = 0
    /// The markers' paths, made before any region: a marker must not allocate.
    private let begin: [CChar]
    private let end: [CChar]

    init(_ name: String, counter: AllocationCounter) {
        self.name = name
        self.counter = counter
        let path = name.replacingOccurrences(of: " ", with: "-")
        begin = Array("roadsave-counts:begin:\(path)".utf8CString)
        end = Array("roadsave-counts:end:\(path)".utf8CString)
    }

    var allocations: UInt64? { counter.isAvailable ? counted : nil }

    func add(records: Int, batches: Int) {
        self.records += records
        self.batches += batches
    }

    func measure<T>(_ body: () throws -> T) rethrows -> T {
        Self.mark(begin)
        let before = counter.count()
        let result = try body()
        counted += counter.count() - before
        Self.mark(end)
        return result
    }

    func measureAsync<T>(_ body: () async -> T) async -> T {
        Self.mark(begin)
        let before = counter.count()
        let result = await body()
        counted += counter.count() - before
        Self.mark(end)
        return result
    }

    /// A system call strace shows with the marker's path (it fails: no such file).
    private static func mark(_ path: [CChar]) {
        path.withUnsafeBufferPointer { _ = access($0.baseAddress!, F_OK) }
    }

    var json: String {
        "  {\"path\": \"\(name.replacingOccurrences(of: " ", with: "-"))\", \"records\": \(records), "
            + "\"batches\": \(batches), \"allocations\": \(allocations.map(String.init) ?? "null")}"
    }
}
