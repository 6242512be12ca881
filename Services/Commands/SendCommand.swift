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
import TerminalProgress
import Wire
import ZeroMQ

/// `roadsave send FILE.ndjson`: a device gateway on the command line (CONTRACT §7, gateway batch).
///
/// Fully synchronous on the calling thread: one DEALER socket, `zmq_poll` in steps of at most 100 ms while an
/// acknowledgement is awaited (so SIGINT/SIGTERM are noticed), `ZMQ_SNDTIMEO` so a dead or full ingest cannot
/// freeze a send, and `ZMQ_LINGER` 0 so the exit never waits for unsent batches (DESIGN-NOTES pitfalls 4 and 5).
public enum SendCommand {
    public static let usage = """
        Usage: roadsave send FILE [options]

        Acts as a device gateway: reads records (NDJSON, one JSON object a line, or MessagePack, one CONTRACT §2 map
        after another; FILE - reads standard input), checks every record as sensor-ingest will, and sends the good
        ones in batches to sensor-ingest (ZeroMQ DEALER to its ROUTER; frames [batchID, contentType, body]). Up to
        --window batches are on their way at once, in file order; like a gateway it keeps each batch until its
        acknowledgement [batchID, ack] arrives: without one within --timeout it sends the same batch again (same
        batchID), up to --attempts times with a growing pause, then gives up naming the batch. A batch refused for
        the gateway's rate limit (field rate) is sent again after the acknowledgement's retryAfterMs, as often as it
        takes: it slows the send down, it loses nothing and uses up no attempt.

        Order through outages: every batch carries a header with this gateway's watermark (GatewayBatchHeader: no
        record older than it follows), the oldest time of everything not yet acknowledged besides the batch itself,
        and of what may still be read (the newest time read less --max-disorder). Detection applies a device's
        records, and takes its clock-driven decisions, only below it: a batch lost with an ingest and sent again
        after newer ones is not late, and a pause of this gateway, the link or ingest is no device's silence. When
        the connection to sensor-ingest ends, the batches sent on it and unanswered are sent again as soon as a new
        one is up, and no new batch with any of their devices goes before them. While nothing else goes out, a header alone says how far the gateway has
        come (every second); at the end of the input a last header says the stream is over (--no-end: not), so
        the devices' last records are decided at once, as a replay decides them at the end of its input.

        Options:
          --endpoint URL      sensor-ingest's gateway endpoint (default tcp://127.0.0.1:5550)
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
            let connected: Gateway
            do {
                connected = try Gateway(options: options, log: log)
            } catch {
                throw CommandExit(1, "cannot connect to \(options.endpoint): \(error)")
            }
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
        var endpoint = "tcp://127.0.0.1:5550"
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
                if let text = parsed.string("--endpoint") {
                    endpoint = try validateConnectEndpoint(text, flag: "--endpoint")
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
    }

    /// Reads records into batches, paces them, and hands each to the gateway, which keeps up to --window of them
    /// awaiting acknowledgement.
    struct Sender {
        let options: Options
        let gateway: Gateway
        let log: Log
        private(set) var totals = Totals()
        private var batch = Batch()
        private var validCount = 0
        private var firstTime: Double?
        private let start = MonotonicClock.now()
        /// Paced batches are cut when their records span more than this (seconds of pace).
        static let paceGranularity = 0.25

        init(options: Options, gateway: Gateway, log: Log) {
            self.options = options
            self.gateway = gateway
            self.log = log
            batch = newBatch()
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
            if let due, let firstDue = batch.firstDue, due - firstDue > Self.paceGranularity {
                try flush()
            }
            if batch.isEmpty {
                batch.firstDue = due
                if raw != nil { batch.raw.reserveCapacity(options.batch * 128) }
            }
            batch.lastDue = due.map { max($0, batch.lastDue ?? $0) }
            if !gateway.noteRead(record.t) {
                totals.behindWatermark += 1
                if totals.behindWatermark <= Self.behindWatermarkReports {
                    Console.err("\(options.numberName) \(number): t: \(ISO8601.string(fromSeconds: record.t)) is behind the watermark already sent (the input is more out of order than --max-disorder \(JSONText.number(options.maximumDisorder)) s): detection may find it too late")
                }
            }
            batch.devices.insert(record.device)
            batch.records.append(record)
            batch.lines.append(number)
            if let raw { batch.raw.append(contentsOf: raw) }
            if batch.records.count >= options.batch { try flush() }
        }

        /// Records behind the watermark reported one by one; the rest are counted in the summary.
        static let behindWatermarkReports = 20

        /// Sends what is left and waits for every acknowledgement.
        mutating func finish() throws(CommandExit) {
            try flush()
            for completion in try gateway.finish() { account(completion) }
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

        private mutating func flush() throws(CommandExit) {
            guard !batch.isEmpty else { return }
            let current = batch
            batch = newBatch()
            let number = totals.batches + 1
            // From now on the batch is one the watermark waits for, also while it waits for its time.
            gateway.seal(number)
            if let due = current.lastDue {
                let wait = start + due - MonotonicClock.now()
                if wait > 5 { log.info("waiting for the records' time", ["seconds": JSONText.number((wait * 10).rounded() / 10)]) }
                // Acknowledgements are taken while waiting.
                for completion in try gateway.wait(until: start + due, before: current) { account(completion) }
            }
            totals.batches = number
            for completion in try gateway.submit(current, number: number) { account(completion) }
        }

        /// Counts an acknowledgement and reports its rejections with the file's line numbers.
        private mutating func account(_ completion: Completion) {
            let (ack, batch, batchID) = (completion.acknowledgement, completion.batch, completion.batchID)
            totals.sent += batch.records.count
            totals.resent += completion.attempts - 1
            totals.accepted += ack.accepted
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
            if ack.accepted + rejectedIndexes.count != batch.records.count {
                log.warning("acknowledgement does not add up",
                            ["batch": batchID, "records": String(batch.records.count), "accepted": String(ack.accepted),
                             "rejected": String(rejectedIndexes.count)])
            }
            log.debug("batch acknowledged", ["batch": batchID, "lines": batch.lineRange, "accepted": String(ack.accepted),
                                             "rejected": String(rejectedIndexes.count)])
        }
    }

    /// The DEALER socket, the batches awaiting acknowledgement (at most --window) and their resends. Owned by the
    /// thread that created it.
    final class Gateway {
        let options: Options
        let log: Log
        private let context: ZMQContext
        private var socket: ZMQSocket?
        private let runID: String
        /// Batches sent and not acknowledged, by batchID bytes, and their batchIDs in the order sent.
        private var inFlight: [[UInt8]: InFlight] = [:]
        private var order: [[UInt8]] = []

        struct InFlight {
            var batch: Batch
            var batchID: String
            /// The sender's number for the batch (the watermark's name for it); nil for the header at the end.
            var number: Int?
            var body: [UInt8]
            /// Sends so far that went unanswered, plus one.
            var attempt = 1
            /// Sent on a connection that has since ended, unanswered: sent again once a new connection is up.
            var lost = false
            /// When the current send times out (monotonic), or nil while waiting to be sent again.
            var answerDue: Double?
            /// When to send it again (after a backoff or a rate refusal's pause).
            var resendAt: Double?
        }

        /// The watermark of the headers, nil with --no-watermark.
        private var watermark: GatewayWatermark?
        private let gatewayName: String
        /// The connection to sensor-ingest, ending and coming back.
        private var watch: ConnectionWatch?
        /// When something last went out (monotonic), for the headers sent alone while nothing else does.
        private var lastTransmit = 0.0
        private var headersAlone = 0
        /// A header alone goes out after this long without a transmission.
        static let headerInterval = 1.0

        init(options: Options, log: Log) throws {
            self.options = options
            self.log = log
            if options.watermarks { watermark = GatewayWatermark(maximumDisorder: options.maximumDisorder) }
            context = try ZMQContext()
            // A send may wait this long for room (high-water mark) before the attempt counts as failed.
            let socket = try ZMQSocket(context, .dealer, linger: 0, sendTimeout: options.timeoutMilliseconds)
            try options.keys?.apply(to: socket)
            watch = try ConnectionWatch(socket, context: context, name: "send")
            try socket.connect(options.endpoint)
            self.socket = socket
            runID = "gw-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            gatewayName = options.gatewayName ?? runID
            lastTransmit = MonotonicClock.now()
            log.info("connecting", ["endpoint": options.endpoint, "format": options.format.rawValue,
                                    "batch": String(options.batch), "window": String(options.window)])
        }

        func close() {
            watch?.close()
            watch = nil
            socket?.close()
            socket = nil
            context.terminate()
        }

        func batchID(_ number: Int) -> String { "\(runID)-\(number)" }

        /// A record was read into the batch being built; false when it is behind a watermark already sent.
        func noteRead(_ t: Double) -> Bool { watermark?.read(t) ?? true }

        /// The records read since the last seal are batch `number`.
        func seal(_ number: Int) { watermark?.seal(batch: number) }

        /// Batches awaiting acknowledgement.
        var waiting: Int { inFlight.count }

        /// Pause before attempt `attempt` (2, 3, …): 0.25 s, 0.5 s, 1 s, … up to 5 s.
        static func backoff(before attempt: Int) -> Double {
            min(5, 0.25 * Double(1 << min(attempt - 2, 10)))
        }

        /// Longest pause before sending a batch again that sensor-ingest refused for its rate limit, whatever
        /// `retryAfterMs` says (a longer wait is then taken as several).
        static let longestRateWait = 60.0

        /// Rate refusals seen so far in this run (the first is logged as a warning, the others at debug level).
        private(set) var rateRefusals = 0

        /// Sends `batch` once the window has room, and returns the acknowledgements that came meanwhile. Throws
        /// (exit 1) when a batch got no acknowledgement after `--attempts` sends, or on a signal.
        func submit(_ batch: Batch, number: Int?) throws(CommandExit) -> [Completion] {
            var completed: [Completion] = []
            // Re-send first: a batch found lost, or waiting to be sent again, of one of this batch's devices goes
            // before it, so that no device's newer records reach the journal ahead of its older ones.
            while inFlight.count >= options.window || waitsForResend(batch) { try service(until: nil, into: &completed) }
            let batchID = number.map(batchID) ?? "\(runID)-end"
            let id = Array(batchID.utf8)
            var entry = InFlight(batch: batch, batchID: batchID, number: number, body: batch.body(options.format))
            try transmit(&entry)
            inFlight[id] = entry
            order.append(id)
            // Acknowledgements already there are taken without waiting.
            try service(until: MonotonicClock.now(), into: &completed)
            return completed
        }

        /// Whether a batch of one of `batch`'s devices waits to be sent again.
        private func waitsForResend(_ batch: Batch) -> Bool {
            inFlight.values.contains {
                ($0.resendAt != nil || $0.lost) && !$0.batch.devices.isDisjoint(with: batch.devices)
            }
        }

        /// The connection to sensor-ingest ended (its batches unanswered will not be answered on it) or a new one
        /// is up (they go again, in the order they were first sent).
        private func connectionChanged(_ change: ConnectionWatch.Change) throws(CommandExit) {
            let now = MonotonicClock.now()
            for id in order {
                guard var entry = inFlight[id] else { continue }
                switch change {
                case .lost:
                    guard entry.answerDue != nil else { continue }
                    entry.lost = true
                case .established:
                    guard entry.lost else { continue }
                    entry.lost = false
                    entry.attempt += 1
                    entry.answerDue = nil
                    guard entry.attempt <= options.attempts else { throw outOfAttempts(entry) }
                    entry.resendAt = now
                    log.warning("the connection to sensor-ingest ended before the batch was acknowledged: sending it again",
                                ["batch": entry.batchID, "lines": entry.batch.lineRange,
                                 "attempt": "\(entry.attempt)/\(options.attempts)"])
                }
                inFlight[id] = entry
            }
        }

        /// Waits until the monotonic time `deadline` (pacing), taking acknowledgements meanwhile.
        func wait(until deadline: Double, before batch: Batch) throws(CommandExit) -> [Completion] {
            var completed: [Completion] = []
            while MonotonicClock.now() < deadline {
                if SignalFlag.signal != 0 { throw interrupted(batch) }
                try service(until: deadline, into: &completed)
            }
            return completed
        }

        /// Waits for every batch's acknowledgement; then, with watermarks, a last header says how far the stream
        /// has come (that it is over, unless --no-end), and waits for its acknowledgement too.
        func finish() throws(CommandExit) -> [Completion] {
            var completed: [Completion] = []
            while !inFlight.isEmpty { try service(until: nil, into: &completed) }
            guard watermark != nil else { return completed }
            var last = Batch()
            last.noun = options.numberName
            completed += try submit(last, number: nil)
            while !inFlight.isEmpty { try service(until: nil, into: &completed) }
            return completed
        }

        /// The header of a transmission of the batch numbered `number` (nil: the header at the end, or one sent
        /// alone): the watermark over everything else, or the end of the stream.
        private func header(for number: Int?, last: Bool) -> [UInt8]? {
            guard var watermark else { return nil }
            defer { self.watermark = watermark }
            if last, options.end {
                return GatewayBatchHeader(gateway: gatewayName, progress: .end).encode(as: options.format)
            }
            guard let time = watermark.promise(excluding: number) else { return nil }
            return GatewayBatchHeader(gateway: gatewayName, progress: .watermark(time)).encode(as: options.format)
        }

        /// While nothing else goes out, a header alone (an empty batch, not waited for: the next one supersedes it)
        /// tells detection how far the stream has come, so devices that fell silent are decided.
        private func sendHeaderAloneIfDue(now: Double) {
            guard let socket, watermark != nil, now - lastTransmit >= Self.headerInterval,
                  let header = header(for: nil, last: false) else { return }
            headersAlone += 1
            let frames = [Array("\(runID)-h\(headersAlone)".utf8), options.format.frame,
                          RecordBatch.encodeBatch([], as: options.format), header]
            // Never blocks: an ingest that takes nothing now gets the next one.
            _ = try? socket.send(frames, dontWait: true)
            lastTransmit = now
        }

        /// One round: sends what is due again, waits for acknowledgements (until `deadline`, or at most 100 ms and
        /// the next resend or timeout when nil), takes every one that came, and counts the sends that timed out.
        private func service(until deadline: Double?, into completed: inout [Completion]) throws(CommandExit) {
            guard let socket else { throw CommandExit(1, "the gateway socket is closed") }
            if SignalFlag.signal != 0, let first = order.first, let entry = inFlight[first] { throw interrupted(entry.batch) }
            var now = MonotonicClock.now()
            // Resends that are due, in send order.
            for id in order {
                guard var entry = inFlight[id], let resendAt = entry.resendAt, resendAt <= now else { continue }
                try transmit(&entry)
                inFlight[id] = entry
            }
            now = MonotonicClock.now()
            sendHeaderAloneIfDue(now: now)
            var wake = deadline ?? now + 0.1
            for entry in inFlight.values {
                if let due = entry.answerDue { wake = min(wake, due) }
                if let resendAt = entry.resendAt { wake = min(wake, resendAt) }
            }
            let milliseconds = max(0, Int(((wake - now) * 1000).rounded(.up)))
            let ready: [ZMQPollEvents]
            var items = [ZMQPollItem(socket)]
            if let watch { items.append(ZMQPollItem(watch.reader)) }
            do {
                ready = try ZMQPoller.poll(items, timeoutMilliseconds: min(milliseconds, 100))
            } catch {
                throw CommandExit(1, "waiting for acknowledgements: \(error)")
            }
            if ready.first?.contains(.readable) == true { try receive(socket, into: &completed) }
            if ready.count > 1, ready[1].contains(.readable), let watch {
                for change in watch.changes() { try connectionChanged(change) }
            }
            try expire(now: MonotonicClock.now())
        }

        /// Takes every acknowledgement waiting on the socket.
        private func receive(_ socket: ZMQSocket, into completed: inout [Completion]) throws(CommandExit) {
            while true {
                let message: [[UInt8]]
                do {
                    guard let received = try socket.receive(dontWait: true) else { return }
                    message = received
                } catch {
                    throw CommandExit(1, "receiving acknowledgements: \(error)")
                }
                guard message.count == 2 else {
                    log.warning("reply that is not [batchID, ack] ignored", ["frames": String(message.count)])
                    continue
                }
                guard var entry = inFlight[message[0]] else {
                    // A late answer to a send already answered (the batch was sent again meanwhile).
                    log.debug("acknowledgement of an earlier send skipped",
                              ["batch": String(decoding: message[0].prefix(64), as: UTF8.self)])
                    continue
                }
                let ack: Acknowledgement
                do {
                    ack = try Acknowledgement.decode(message[1], contentType: options.format)
                } catch {
                    throw CommandExit(1, "batch \(entry.batchID) (\(entry.batch.lineRange)): unreadable acknowledgement: \(error)")
                }
                if let retryAfterMs = ack.rateLimitRetryAfterMs {
                    // An answer, not a verdict: the same batch goes again after the pause, using up no attempt.
                    let pause = min(Self.longestRateWait, Double(retryAfterMs) / 1000)
                    noteRateRefusal(ack, batchID: entry.batchID, pause: pause)
                    entry.answerDue = nil
                    entry.resendAt = MonotonicClock.now() + pause
                    inFlight[message[0]] = entry
                    continue
                }
                inFlight[message[0]] = nil
                order.removeAll { $0 == message[0] }
                // Answered: stored, or given up on (what was refused is not sent again), so not still to come.
                if let number = entry.number { watermark?.acknowledged(batch: number) }
                completed.append(Completion(batch: entry.batch, batchID: entry.batchID, acknowledgement: ack,
                                            attempts: entry.attempt))
            }
        }

        /// Sends whose answer is overdue count as attempts; a batch out of attempts ends the send.
        private func expire(now: Double) throws(CommandExit) {
            for id in order {
                guard var entry = inFlight[id], let due = entry.answerDue, due <= now else { continue }
                try failedAttempt(&entry, now: now)
                inFlight[id] = entry
            }
        }

        private func failedAttempt(_ entry: inout InFlight, now: Double) throws(CommandExit) {
            entry.attempt += 1
            entry.answerDue = nil
            guard entry.attempt <= options.attempts else { throw outOfAttempts(entry) }
            let pause = Self.backoff(before: entry.attempt)
            entry.resendAt = now + pause
            log.warning("no acknowledgement, sending the batch again",
                        ["batch": entry.batchID, "lines": entry.batch.lineRange,
                         "attempt": "\(entry.attempt)/\(options.attempts)", "pause": JSONText.number(pause)])
        }

        private func outOfAttempts(_ entry: InFlight) -> CommandExit {
            let batch = entry.batch
            return CommandExit(1, "batch \(entry.batchID) (\(batch.lineRange), \(batch.records.count) record\(batch.records.count == 1 ? "" : "s")) not acknowledged by \(options.endpoint) after \(options.attempts) attempt\(options.attempts == 1 ? "" : "s") of \(JSONText.number(options.timeout)) s")
        }

        /// One send of the batch, with a header of the watermark as it is now; a send that cannot be queued within
        /// the timeout is an unanswered attempt.
        private func transmit(_ entry: inout InFlight) throws(CommandExit) {
            guard let socket else { throw CommandExit(1, "the gateway socket is closed") }
            entry.resendAt = nil
            var frames = [Array(entry.batchID.utf8), options.format.frame, entry.body]
            if let header = header(for: entry.number, last: entry.number == nil) { frames.append(header) }
            entry.lost = false
            lastTransmit = MonotonicClock.now()
            let queued: Bool
            do {
                queued = try socket.send(frames)
            } catch {
                throw CommandExit(1, "batch \(entry.batchID) (\(entry.batch.lineRange)) not sent: \(error)")
            }
            let now = MonotonicClock.now()
            guard queued else {
                log.warning("batch not queued within the timeout (sensor-ingest gone or full)",
                            ["batch": entry.batchID, "endpoint": options.endpoint])
                try failedAttempt(&entry, now: now)
                return
            }
            entry.answerDue = now + options.timeout
        }

        private func noteRateRefusal(_ ack: Acknowledgement, batchID: String, pause: Double) {
            rateRefusals += 1
            let reason = ack.rejected.first?.reason ?? ""
            if rateRefusals == 1 {
                log.warning("sensor-ingest limits this gateway's rate: batches wait and are sent again as it asks",
                            ["batch": batchID, "pause": JSONText.number(pause), "reason": reason])
            } else {
                log.debug("rate limited, sending the batch again after the pause",
                          ["batch": batchID, "pause": JSONText.number(pause)])
            }
        }

        private func interrupted(_ batch: Batch) -> CommandExit {
            CommandExit(1, "interrupted by \(SignalFlag.name(SignalFlag.signal)) before \(batch.lineRange) were acknowledged")
        }
    }
}
