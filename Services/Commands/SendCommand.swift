#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import GatewayKit
import RoadSaveModel
import ServiceKit
import SystemKit
import TerminalProgress
import Wire
import ZeroMQ

/// `roadsave send FILE.ndjson`: a device gateway on the command line (PROTOCOL §7, gateway batch).
///
/// Fully synchronous on the calling thread: one DEALER socket per ingest of --endpoint, all polled at once
/// (`zmq_poll` in steps of at most 100 ms while an acknowledgement is awaited, so SIGINT/SIGTERM are noticed),
/// `ZMQ_SNDTIMEO` so a dead or full ingest cannot freeze a send, and `ZMQ_LINGER` 0 so the exit never waits for
/// unsent batches (DESIGN-NOTES pitfalls 4 and 5).
public enum SendCommand {
    public static let usage = """
        Usage: roadsave send FILE [options]

        Acts as a device gateway: reads records (NDJSON, one JSON object a line, or MessagePack, one record map after
        another, as docs/PROTOCOL.md §2 has them; FILE - reads standard input), checks every record as sensor-ingest
        will, and sends the good ones in batches to sensor-ingest (ZeroMQ DEALER to its ROUTER; frames [batchID,
        contentType, body]). Up to --window batches are on their way at once, in file order; like a gateway it keeps
        each batch until its acknowledgement [batchID, ack] arrives: without one within --timeout it sends the same
        batch again (same batchID), up to --attempts times with a growing pause, then gives up naming the batch. A
        batch refused for the gateway's rate limit (field rate) is sent again after the acknowledgement's
        retryAfterMs, as often as it takes: it slows the send down, it loses nothing and uses up no attempt.

        Order through outages: every batch carries a header with this gateway's watermark (GatewayBatchHeader: no
        record older than it follows), the oldest time of everything not yet acknowledged besides the batch itself,
        and of what may still be read (the newest time read less --max-disorder). Detection applies a device's
        records, and takes its clock-driven decisions, only below it: a batch lost with an ingest and sent again
        after newer ones is not late, and a pause of this gateway, the link or ingest is no device's silence. When
        the connection to sensor-ingest ends, the batches sent on it and unanswered are sent again as soon as a new
        one is up, and no new batch with any of their devices goes before them. While nothing else goes out, a
        header alone says how far the gateway has come (every second); at the end of the input a last header says
        the stream is over (--no-end: not), so the devices' last records are decided at once, as a replay decides
        them at the end of its input.

        Several ingests (--endpoint given more than once): each device's records all go to one of them, the one at
        index FNV-1a-64(app, 0xFF, user) mod (number of endpoints) in the order given, the hash by which ingest
        shards its journal (DeviceShard, docs/PROTOCOL.md §1), so its records stay in order in one journal. Every
        gateway must list the same ingests in the same order; a changed list moves devices to other ingests, so
        change it only when the gateways have drained. Each ingest gets its own connection, window, resends and
        watermark stream (the same --gateway name on each), and the last header; one that is down holds up the
        others only once its window is full. The summary counts over all of them (--log-level info: each too).

        Options:
          --endpoint URL      sensor-ingest's gateway endpoint (default tcp://127.0.0.1:5550); given several times,
                              the ingests the devices are spread over, by the rule above (the same list, in the
                              same order, in every gateway; each endpoint once; with --key, every ingest has the
                              one --server-key)
          --format F          body encoding: msgpack or json (default msgpack)
          --input-format F    ndjson or msgpack (default: msgpack for a FILE ending in .msgpack or .mpk, else
                              ndjson); MessagePack records go out as they are in the file, not encoded again
          --batch N           records per batch, 1 to 100000 (default 500)
          --window N          batches awaiting their acknowledgement at once, 1 to 1000 (default 8)
          --timeout S         seconds to wait for each acknowledgement, 0.05 to 3600 (default 10)
          --attempts N        sends of one batch before giving up, 1 to 100 (default 5)
          --max-disorder S    how far out of time order the input may be, 0 to 3600 seconds (default 10, the
                              reorder window of detection): the watermark stays this far behind the newest time
                              read; a record further behind is reported ("behind the watermark") and may be late
          --gateway NAME      the stream's name in the headers, 1 to 200 bytes (default gw-<pid>-<random>, new
                              each run: a stream is one run's promises)
          --no-end            do not say at the end that the stream is over (more of the same devices' records
                              follow from elsewhere): their last records then wait for the hold of detection
          --no-watermark      send no header (three frames, as a gateway without watermarks): detection then
                              orders the records by its reorder window and its clock
          --rate R            replay at R records a second (default: as fast as acknowledgements come)
          --realtime          replay at the pace of the records' t (the first record at once)
          --log-level L       debug, info, warning or error (default warning)
          --no-progress       no progress line on standard error (records read, records/s, percent and time
                              left of a file); it is shown only when standard error is a terminal
        \(ClientCurveKeys.help(service: "sensor-ingest"))
          -h, --help          this text

        Output: records that fail validation here are reported on standard error as "line N: field: reason (not
        sent)"; records sensor-ingest rejects as "line N: field: reason (rejected by sensor-ingest)" ("record N"
        for MessagePack input). Standard output gets the summary "sent N, accepted A, rejected R, batches B".

        Exit status: 0 when every batch was acknowledged (even with rejected records), 1 when a batch got no
        acknowledgement after its attempts (or the send was interrupted), or when a MessagePack file cannot be read
        to its end (truncated, or bytes that start no record: what came before is still sent and acknowledged, and
        the error names the record and byte), 2 for bad options or an unreadable file.
        """

    public static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        do {
            options = try Options(arguments)
        } catch {
            return Console.fail("send", error)
        }
        if options.help {
            print(usage)
            return 0
        }
        SignalFlag.install()
        // A reader that went away (`send … | head`) must not kill the summary's writer.
        signal(SIGPIPE, SIG_IGN)
        let log = Log(category: "send", minimumLevel: options.logLevel)
        var failure: CommandExit?
        var gateway: Gateway?
        var sender: Sender?
        var progress = ProgressMeter.off()
        do {
            // Opened before connecting, so an unreadable file is exit 2 without a socket.
            let input = try Input(options: options)
            progress = ProgressMeter.standardError(label: "send", total: input.size, turnedOff: !options.progress,
                                                   writesStandardOutput: false)
            let connected = try Gateway(options: options, log: log)
            gateway = connected
            var running = Sender(options: options, gateway: connected, log: log)
            defer { sender = running }
            let damage = try input.forEach(progress: &progress) { record, raw, number throws(CommandExit) in
                try running.take(record, raw: raw, number: number)
            } invalid: { error, number in
                running.invalid(error, number: number)
            }
            // What was read before damage in the file is still sent and acknowledged; then the damage is the error.
            try running.finish()
            if let damage { throw CommandExit(1, "\(damage)") }
        } catch let error as CommandExit {
            if gateway == nil { return Console.fail("send", error) }
            failure = error
        } catch {
            failure = CommandExit(1, "\(error)")
        }
        progress.finish()
        gateway?.close()
        let totals = sender?.totals ?? Totals()
        Console.out("sent \(totals.sent), accepted \(totals.accepted), rejected \(totals.rejected), batches \(totals.batches)")
        if let gateway, let sender, gateway.links.count > 1 {
            for link in gateway.links {
                let own = sender.totalsByIngest[link.index]
                log.info("finished with ingest", ["endpoint": link.endpoint, "sent": String(own.sent),
                                                  "accepted": String(own.accepted), "rejected": String(own.rejected),
                                                  "batches": String(own.batches), "resent": String(own.resent),
                                                  "rateLimited": String(link.rateRefusals)])
            }
        }
        log.info("finished", ["sent": String(totals.sent), "accepted": String(totals.accepted),
                              "rejected": String(totals.rejected), "batches": String(totals.batches),
                              "invalid": String(totals.invalid), "resent": String(totals.resent),
                              "rateLimited": String(gateway?.rateRefusals ?? 0)])
        if totals.invalid > 0 {
            let noun = options.numberName
            Console.err("roadsave send: \(totals.invalid) \(noun)\(totals.invalid == 1 ? "" : "s") not sent (invalid)")
        }
        if let failure {
            return Console.fail("send", failure)
        }
        return 0
    }

    struct Options {
        var help = false
        var path = ""
        /// The ingests, in the order given: a device's records go to `route.index(of:)` (one endpoint: all of them).
        var endpoints = ["tcp://127.0.0.1:5550"]
        var route = IngestRoute(endpoint: "tcp://127.0.0.1:5550")
        var format = ContentType.msgpack
        var inputFormat = RecordFileFormat.ndjson
        /// What a record's number counts in messages: a line of NDJSON, a record of MessagePack.
        var numberName: String { inputFormat == .msgpack ? "record" : "line" }
        var batch = 500
        var window = 8
        var timeout = 10.0
        var timeoutMilliseconds: Int32 = 10_000
        var attempts = 5
        var rate: Double?
        var realtime = false
        var logLevel = Log.Level.warning
        var keys: ClientCurveKeys?
        /// Off with --no-progress.
        var progress = true
        /// Headers with watermarks (off with --no-watermark), their disorder bound, stream name and end.
        var watermarks = true
        var maximumDisorder = 10.0
        var gatewayName: String?
        var end = true

        init(_ arguments: [String]) throws(CommandExit) {
            do {
                let parsed = try CommandLineOptions(
                    arguments,
                    valued: Set(["--endpoint", "--format", "--input-format", "--batch", "--window", "--timeout",
                                 "--attempts", "--rate", "--log-level", "--max-disorder", "--gateway"])
                        .union(ClientCurveKeys.flags),
                    flags: ["--realtime", ProgressMeter.flag, "--no-end", "--no-watermark", "--help", "-h"])
                if parsed.has("--help") || parsed.has("-h") {
                    help = true
                    return
                }
                guard let file = parsed.positional.first else {
                    throw CommandExit.usage("FILE missing (- reads standard input)")
                }
                guard parsed.positional.count == 1 else {
                    throw CommandExit.usage("unexpected argument \"\(parsed.positional[1])\" (one file at a time)")
                }
                path = file
                let given = parsed.strings("--endpoint")
                if !given.isEmpty {
                    endpoints = try given.map { text throws(CommandExit) in try validateConnectEndpoint(text, flag: "--endpoint") }
                    do {
                        route = try IngestRoute(endpoints: endpoints)
                    } catch {
                        throw CommandExit.usage("--endpoint: \(error)")
                    }
                }
                if let text = parsed.string("--format") {
                    switch text.lowercased() {
                    case "msgpack", "application/msgpack": format = .msgpack
                    case "json", "application/json": format = .json
                    default: throw CommandExit.usage("--format must be msgpack or json, got \"\(text)\"")
                    }
                }
                do {
                    inputFormat = try RecordFileFormat(option: parsed.string("--input-format"), path: file)
                } catch {
                    throw CommandExit.usage("--input-format: \(error)")
                }
                batch = try parsed.integer("--batch", range: 1...RecordBatch.maximumRecords) ?? 500
                window = try parsed.integer("--window", range: 1...1000) ?? 8
                (timeout, timeoutMilliseconds) = try parsed.milliseconds("--timeout", default: 10, range: 0.05...3600)
                attempts = try parsed.integer("--attempts", range: 1...100) ?? 5
                rate = try parsed.double("--rate", range: 0.001...10_000_000)
                realtime = parsed.has("--realtime")
                progress = !parsed.has(ProgressMeter.flag)
                watermarks = !parsed.has("--no-watermark")
                end = !parsed.has("--no-end")
                maximumDisorder = try parsed.double("--max-disorder", range: 0...3600) ?? 10
                if let name = parsed.string("--gateway") {
                    guard !name.isEmpty, name.utf8.count <= GatewayBatchHeader.maximumGatewayBytes else {
                        throw CommandExit.usage("--gateway must be 1 to \(GatewayBatchHeader.maximumGatewayBytes) bytes")
                    }
                    gatewayName = name
                }
                if !watermarks, parsed.has("--no-end") || parsed.string("--max-disorder") != nil || gatewayName != nil {
                    throw CommandExit.usage("--no-watermark sends no header: --no-end, --max-disorder and --gateway need one")
                }
                if rate != nil, realtime {
                    throw CommandExit.usage("--rate and --realtime exclude each other: pick one pace")
                }
                if let text = parsed.string("--log-level") { logLevel = try LogLevelSetting.parse(text) }
                keys = try ClientCurveKeys.parse(parsed)
            } catch let error as CommandLineOptions.UsageError {
                throw .usage(error.message)
            } catch let error as CommandExit {
                throw error
            } catch {
                throw .usage("\(error)")
            }
        }
    }

    /// The records of FILE, NDJSON or MessagePack, each checked as sensor-ingest will check it.
    struct Input {
        private let reader: RecordFileReader

        init(options: Options) throws(CommandExit) {
            do {
                reader = try RecordFileReader(path: options.path, format: options.inputFormat)
            } catch {
                throw CommandExit.usage("\(error)")
            }
        }

        /// The file's size in bytes, when it is a regular file.
        var size: Int? { reader.size }

        /// Each valid record with its MessagePack bytes when the input was MessagePack (nil for NDJSON), and its
        /// line or record number; each invalid one's error. Returns why the file could not be read to its end, if
        /// so (a MessagePack file truncated, or with bytes that start no record: the reason names record and byte).
        /// Each record read is counted on `progress`, with the bytes of the file it has reached.
        func forEach(progress: inout ProgressMeter,
                     _ body: (SensorRecord, UnsafeBufferPointer<UInt8>?, Int) throws(CommandExit) -> Void,
                     invalid: (RecordError, Int) -> Void) throws(CommandExit) -> RecordFileReader.Failure? {
            while let (number, item) = reader.next() {
                progress.advance(at: reader.position)
                switch item {
                case let .record(record): try body(record, reader.lastRecordBytes, number)
                case let .invalid(error): invalid(error, number)
                }
            }
            return reader.failure
        }
    }

    struct Totals {
        var sent = 0
        var accepted = 0
        var rejected = 0
        var batches = 0
        var invalid = 0
        var resent = 0
        /// Records read below a watermark already promised (the input more out of order than --max-disorder).
        var behindWatermark = 0
    }

    /// A batch on its way: the records and the file line each came from (ack indexes map back to them).
    struct Batch {
        var records: [SensorRecord] = []
        var lines: [Int] = []
        /// What `lines` count: "line" (NDJSON) or "record" (MessagePack).
        var noun = "line"
        /// The records' MessagePack bytes as read (MessagePack input), concatenated: the body is these under an
        /// array header, not an encoding of `records`.
        var raw: [UInt8] = []
        /// Seconds after the start when its first / last record is due (pacing), nil when not paced.
        var firstDue: Double?
        var lastDue: Double?
        /// The devices it has records of: a batch found lost goes before any new batch of one of them.
        var devices: Set<DeviceID> = []

        var isEmpty: Bool { records.isEmpty }

        var lineRange: String {
            guard let first = lines.first, let last = lines.last else { return "no \(noun)s" }
            return first == last ? "\(noun) \(first)" : "\(noun)s \(first)–\(last)"
        }

        /// The batch's body in `format`.
        func body(_ format: ContentType) -> [UInt8] {
            guard format == .msgpack, !raw.isEmpty else { return RecordBatch.encodeBatch(records, as: format) }
            return MessagePackFraming.arrayHeader(records.count) + raw
        }
    }

    /// What came back for a batch: its acknowledgement, and the sends it took.
    struct Completion {
        var batch: Batch
        var batchID: String
        var acknowledgement: Acknowledgement
        var attempts: Int
        /// The index in --endpoint of the ingest that answered.
        var ingest: Int
    }

    /// Reads records into batches, one being built for each ingest (a record goes to its device's, `IngestRoute`),
    /// paces them, and hands each to the gateway, which keeps up to --window of them awaiting acknowledgement on
    /// each link.
    struct Sender {
        let options: Options
        let gateway: Gateway
        let log: Log
        private(set) var totals = Totals()
        /// The same counts for each ingest, by its index in --endpoint (`invalid` and `behindWatermark` stay 0).
        private(set) var totalsByIngest: [Totals]
        /// The batch being built for each ingest.
        private var batches: [Batch] = []
        private var validCount = 0
        private var firstTime: Double?
        private let start = MonotonicClock.now()
        /// Paced batches are cut when their records span more than this (seconds of pace).
        static let paceGranularity = 0.25

        init(options: Options, gateway: Gateway, log: Log) {
            self.options = options
            self.gateway = gateway
            self.log = log
            totalsByIngest = Array(repeating: Totals(), count: options.endpoints.count)
            batches = (0..<options.endpoints.count).map { _ in newBatch() }
        }

        private func newBatch() -> Batch {
            var batch = Batch()
            batch.noun = options.numberName
            return batch
        }

        mutating func invalid(_ error: RecordError, number: Int) {
            totals.invalid += 1
            Console.err("\(options.numberName) \(number): \(error.field): \(error.reason) (not sent)")
        }

        mutating func take(_ record: SensorRecord, raw: UnsafeBufferPointer<UInt8>?, number: Int) throws(CommandExit) {
            let due = dueTime(of: record)
            validCount += 1
            // A paced batch of any ingest is cut once it spans the granularity, so that no ingest's records wait for
            // the next record of one of its own devices.
            if let due { try flush(where: { due - ($0.firstDue ?? due) > Self.paceGranularity }) }
            let ingest = options.route.index(of: record.device)
            if batches[ingest].isEmpty {
                batches[ingest].firstDue = due
                if raw != nil { batches[ingest].raw.reserveCapacity(options.batch * 128) }
            }
            batches[ingest].lastDue = due.map { max($0, batches[ingest].lastDue ?? $0) }
            if !gateway.noteRead(record.t, for: ingest) {
                totals.behindWatermark += 1
                if totals.behindWatermark <= Self.behindWatermarkReports {
                    Console.err("\(options.numberName) \(number): t: \(ISO8601.string(fromSeconds: record.t)) is behind the watermark already sent (the input is more out of order than --max-disorder \(JSONText.number(options.maximumDisorder)) s): detection may find it too late")
                }
            }
            batches[ingest].devices.insert(record.device)
            batches[ingest].records.append(record)
            batches[ingest].lines.append(number)
            if let raw { batches[ingest].raw.append(contentsOf: raw) }
            if batches[ingest].records.count >= options.batch { try flush(ingest) }
        }

        /// Records behind the watermark reported one by one; the rest are counted in the summary.
        static let behindWatermarkReports = 20

        /// Sends what is left and waits for every acknowledgement.
        mutating func finish() throws(CommandExit) {
            try flush(where: { _ in true })
            do {
                try gateway.finish()
            } catch {
                countCompleted()
                throw error
            }
            countCompleted()
            if totals.behindWatermark > Self.behindWatermarkReports {
                Console.err("roadsave send: \(totals.behindWatermark) \(options.numberName)s behind the watermark already sent (--max-disorder)")
            }
        }

        /// Seconds after the start at which the record is due, for --rate and --realtime.
        private mutating func dueTime(of record: SensorRecord) -> Double? {
            if let rate = options.rate { return Double(validCount) / rate }
            if options.realtime {
                let first = firstTime ?? record.t
                firstTime = first
                return max(0, record.t - first)
            }
            return nil
        }

        /// Sends the batches being built for which `cut` holds, the one due first first (in the order of the
        /// ingests when not paced).
        private mutating func flush(where cut: (Batch) -> Bool) throws(CommandExit) {
            let chosen = batches.indices.filter { !batches[$0].isEmpty && cut(batches[$0]) }
            let byDue = chosen.sorted { (batches[$0].firstDue ?? 0, $0) < (batches[$1].firstDue ?? 0, $1) }
            for ingest in byDue { try flush(ingest) }
        }

        private mutating func flush(_ ingest: Int) throws(CommandExit) {
            guard !batches[ingest].isEmpty else { return }
            let current = batches[ingest]
            batches[ingest] = newBatch()
            let number = totals.batches + 1
            // From now on the batch is one the watermark waits for, also while it waits for its time.
            gateway.seal(number, for: ingest)
            if let due = current.lastDue {
                let wait = start + due - MonotonicClock.now()
                if wait > 5 { log.info("waiting for the records' time", ["seconds": JSONText.number((wait * 10).rounded() / 10)]) }
                // Acknowledgements are taken while waiting.
                do {
                    try gateway.wait(until: start + due, before: current)
                } catch {
                    countCompleted()
                    throw error
                }
            }
            totals.batches = number
            totalsByIngest[ingest].batches += 1
            do {
                try gateway.submit(current, number: number, to: ingest)
            } catch {
                countCompleted()
                throw error
            }
            countCompleted()
        }

        /// Counts the acknowledgements the gateway took: after each call, and also when the call threw (what was
        /// acknowledged is in a journal, and the summary says so).
        private mutating func countCompleted() {
            for completion in gateway.takeCompleted() { account(completion) }
        }

        /// Counts an acknowledgement and reports its rejections with the file's line numbers.
        private mutating func account(_ completion: Completion) {
            let (ack, batch, batchID) = (completion.acknowledgement, completion.batch, completion.batchID)
            totals.sent += batch.records.count
            totals.resent += completion.attempts - 1
            totals.accepted += ack.accepted
            totalsByIngest[completion.ingest].sent += batch.records.count
            totalsByIngest[completion.ingest].resent += completion.attempts - 1
            totalsByIngest[completion.ingest].accepted += ack.accepted
            var rejectedIndexes = Set<Int>()
            for rejection in ack.rejected {
                if rejection.index == -1 {
                    // The batch could not be read at all: every record of it is refused.
                    Console.err("\(batch.lineRange): batch \(batchID) refused: \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)")
                    rejectedIndexes.formUnion(batch.records.indices)
                } else if batch.lines.indices.contains(rejection.index) {
                    Console.err("\(batch.noun) \(batch.lines[rejection.index]): \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)")
                    rejectedIndexes.insert(rejection.index)
                } else {
                    log.warning("acknowledgement names a record the batch does not have",
                                ["batch": batchID, "index": String(rejection.index), "records": String(batch.records.count)])
                }
            }
            totals.rejected += rejectedIndexes.count
            totalsByIngest[completion.ingest].rejected += rejectedIndexes.count
            if ack.accepted + rejectedIndexes.count != batch.records.count {
                log.warning("acknowledgement does not add up",
                            ["batch": batchID, "records": String(batch.records.count), "accepted": String(ack.accepted),
                             "rejected": String(rejectedIndexes.count)])
            }
            log.debug("batch acknowledged", ["batch": batchID, "lines": batch.lineRange, "accepted": String(ack.accepted),
                                             "rejected": String(rejectedIndexes.count)])
        }
    }

    /// The gateway's links to the ingests of --endpoint (one with a single endpoint), and the batches on their way.
    ///
    /// One thread serves every link: each round polls all the sockets at once (`zmq_poll`, at most 100 ms), so a link
    /// whose ingest is down, or whose window is full, never keeps the others from taking their acknowledgements,
    /// sending again and sending their headers. That is simpler than a thread per link (no queues between threads,
    /// every socket stays on the thread that made it, nothing to make Sendable). The reader still waits for a link
    /// whose window is full before it reads on (memory stays bounded, as with one ingest): the other links then
    /// finish what they have on their way, and go on once the full one has room again.
    final class Gateway {
        let options: Options
        let log: Log
        private let context: ZMQContext
        let links: [IngestLink]

        init(options: Options, log: Log) throws(CommandExit) {
            self.options = options
            self.log = log
            let runID = "gw-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            var links: [IngestLink] = []
            do {
                context = try ZMQContext()
            } catch {
                throw CommandExit(1, "cannot connect to \(options.endpoints[0]): \(error)")
            }
            for (index, endpoint) in options.endpoints.enumerated() {
                do {
                    links.append(try IngestLink(endpoint: endpoint, index: index, context: context, runID: runID,
                                                options: options, log: log))
                } catch {
                    for link in links { link.close() }
                    throw CommandExit(1, "cannot connect to \(endpoint): \(error)")
                }
            }
            self.links = links
        }

        func close() {
            for link in links { link.close() }
            context.terminate()
        }

        /// A record was read into the batch being built for ingest `ingest`; false when it is behind a watermark
        /// already sent to it. Every other link's stream moves on with it too (`GatewayWatermark.observe`).
        func noteRead(_ t: Double, for ingest: Int) -> Bool {
            for link in links where link.index != ingest { link.noteReadElsewhere(t) }
            return links[ingest].noteRead(t)
        }

        /// The records read for ingest `ingest` since its last seal are batch `number`.
        func seal(_ number: Int, for ingest: Int) { links[ingest].seal(number) }

        /// Rate refusals seen so far over every link.
        var rateRefusals: Int { links.reduce(0) { $0 + $1.rateRefusals } }

        /// The acknowledgements taken and not yet handed out (`takeCompleted`). Kept here rather than returned, so
        /// that those taken in the round that then fails (another link's batch out of attempts) still count.
        private var completed: [Completion] = []

        /// The acknowledgements that came since the last call, from every link.
        func takeCompleted() -> [Completion] {
            defer { completed = [] }
            return completed
        }

        /// Sends `batch` to ingest `ingest` once its link has room, taking the acknowledgements that come meanwhile
        /// (from every link). Throws (exit 1) when a batch got no acknowledgement after `--attempts` sends, or on
        /// a signal.
        func submit(_ batch: Batch, number: Int?, to ingest: Int) throws(CommandExit) {
            let link = links[ingest]
            while !link.hasRoom(for: batch) { try service(until: nil) }
            try link.send(batch, number: number)
            // Acknowledgements already there are taken without waiting.
            try service(until: MonotonicClock.now())
        }

        /// Waits until the monotonic time `deadline` (pacing), taking acknowledgements meanwhile.
        func wait(until deadline: Double, before batch: Batch) throws(CommandExit) {
            while MonotonicClock.now() < deadline {
                if SignalFlag.signal != 0 { throw interrupted(batch) }
                try service(until: deadline)
            }
        }

        /// Waits for every batch's acknowledgement; then, with watermarks, a last header to each ingest says how far
        /// its stream has come (that it is over, unless --no-end), and waits for its acknowledgement too. A link
        /// sends its last header as soon as its own batches are acknowledged, whatever the others still wait for.
        func finish() throws(CommandExit) {
            var ended = links.map { !$0.sendsHeaders }
            while true {
                for link in links where !ended[link.index] && link.waiting == 0 {
                    ended[link.index] = true
                    var last = Batch()
                    last.noun = options.numberName
                    try link.send(last, number: nil)
                }
                if !ended.contains(false) && links.allSatisfy({ $0.waiting == 0 }) { return }
                try service(until: nil)
            }
        }

        /// One round over every link: sends what is due again, waits for acknowledgements (until `deadline`, or at
        /// most 100 ms and the next resend or timeout when nil), takes every one that came, and counts the sends
        /// that timed out.
        private func service(until deadline: Double?) throws(CommandExit) {
            if SignalFlag.signal != 0, let batch = links.lazy.compactMap(\.oldestWaiting).first {
                throw interrupted(batch)
            }
            for link in links { try link.sendDue() }
            let now = MonotonicClock.now()
            var wake = deadline ?? now + 0.1
            for link in links { if let due = link.nextDue { wake = min(wake, due) } }
            let milliseconds = max(0, Int(((wake - now) * 1000).rounded(.up)))
            var items: [ZMQPollItem] = []
            var ranges: [Range<Int>] = []
            for link in links {
                let own = try link.pollItems()
                ranges.append(items.count..<(items.count + own.count))
                items += own
            }
            let ready: [ZMQPollEvents]
            do {
                ready = try ZMQPoller.poll(items, timeoutMilliseconds: min(milliseconds, 100))
            } catch {
                throw CommandExit(1, "waiting for acknowledgements: \(error)")
            }
            for (link, range) in zip(links, ranges) { try link.take(ready[range], into: &completed) }
        }

        private func interrupted(_ batch: Batch) -> CommandExit {
            CommandExit(1, "interrupted by \(SignalFlag.name(SignalFlag.signal)) before \(batch.lineRange) were acknowledged")
        }
    }
}
