#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import RoadSaveModel
import ServiceKit
import Wire
import ZeroMQ

/// `roadsave send FILE.ndjson`: a device gateway on the command line (CONTRACT §7, gateway batch).
///
/// Fully synchronous on the calling thread: one DEALER socket, `zmq_poll` in steps of at most 100 ms while an
/// acknowledgement is awaited (so SIGINT/SIGTERM are noticed), `ZMQ_SNDTIMEO` so a dead or full ingest cannot
/// freeze a send, and `ZMQ_LINGER` 0 so the exit never waits for unsent batches (DESIGN-NOTES pitfalls 4 and 5).
public enum SendCommand {
    public static let usage = """
        Usage: roadsave send FILE.ndjson [options]

        Acts as a device gateway: reads records (NDJSON, one JSON object a line; FILE - reads standard input),
        checks every line as sensor-ingest will, and sends the good records in batches to sensor-ingest
        (ZeroMQ DEALER to its ROUTER; frames [batchID, contentType, body]). Like a gateway it keeps each batch until
        its acknowledgement [batchID, ack] arrives: without one within --timeout it sends the same batch again (same
        batchID), up to --attempts times with a growing pause, then gives up naming the batch. A batch refused for
        the gateway's rate limit (field rate) is sent again after the acknowledgement's retryAfterMs, as often as it
        takes: it slows the send down, it loses nothing and uses up no attempt.

        Options:
          --endpoint URL      sensor-ingest's gateway endpoint (default tcp://127.0.0.1:5550)
          --format F          body encoding: msgpack or json (default msgpack)
          --batch N           records per batch, 1 to 100000 (default 500)
          --timeout S         seconds to wait for each acknowledgement, 0.05 to 3600 (default 10)
          --attempts N        sends of one batch before giving up, 1 to 100 (default 5)
          --rate R            replay at R records a second (default: as fast as acknowledgements come)
          --realtime          replay at the pace of the records' t (the first record at once)
          --log-level L       debug, info, warning or error (default warning)
        \(ClientCurveKeys.help(service: "sensor-ingest"))
          -h, --help          this text

        Output: lines that fail validation here are reported on standard error as "line N: field: reason (not sent)";
        records sensor-ingest rejects as "line N: field: reason (rejected by sensor-ingest)". Standard output gets
        the summary "sent N, accepted A, rejected R, batches B".

        Exit status: 0 when every batch was acknowledged (even with rejected records), 1 when a batch got no
        acknowledgement after its attempts (or the send was interrupted), 2 for bad options or an unreadable file.
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
        var reader: NDJSONLineReader
        do {
            reader = try NDJSONLineReader(path: options.path)
        } catch {
            return Console.fail("send", .usage("\(error)"))
        }
        SignalFlag.install()
        // A reader that went away (`send … | head`) must not kill the summary's writer.
        signal(SIGPIPE, SIG_IGN)
        let log = Log(category: "send", minimumLevel: options.logLevel)
        let gateway: Gateway
        do {
            gateway = try Gateway(options: options, log: log)
        } catch {
            return Console.fail("send", CommandExit(1, "cannot connect to \(options.endpoint): \(error)"))
        }
        var sender = Sender(options: options, gateway: gateway, log: log)
        var failure: CommandExit?
        do {
            try reader.forEachLine { line, number in try sender.take(line, number: number) }
            try sender.finish()
        } catch let error as CommandExit {
            failure = error
        } catch {
            failure = CommandExit(1, "\(error)")
        }
        gateway.close()
        let totals = sender.totals
        Console.out("sent \(totals.sent), accepted \(totals.accepted), rejected \(totals.rejected), batches \(totals.batches)")
        log.info("finished", ["sent": String(totals.sent), "accepted": String(totals.accepted),
                              "rejected": String(totals.rejected), "batches": String(totals.batches),
                              "invalid": String(totals.invalid), "resent": String(totals.resent),
                              "rateLimited": String(gateway.rateRefusals)])
        if totals.invalid > 0 {
            Console.err("roadsave send: \(totals.invalid) line\(totals.invalid == 1 ? "" : "s") not sent (invalid)")
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
        var batch = 500
        var timeout = 10.0
        var timeoutMilliseconds: Int32 = 10_000
        var attempts = 5
        var rate: Double?
        var realtime = false
        var logLevel = Log.Level.warning
        var keys: ClientCurveKeys?

        init(_ arguments: [String]) throws(CommandExit) {
            do {
                let parsed = try CommandLineOptions(
                    arguments,
                    valued: Set(["--endpoint", "--format", "--batch", "--timeout", "--attempts", "--rate", "--log-level"])
                        .union(ClientCurveKeys.flags),
                    flags: ["--realtime", "--help", "-h"])
                if parsed.has("--help") || parsed.has("-h") {
                    help = true
                    return
                }
                guard let file = parsed.positional.first else {
                    throw CommandExit.usage("FILE.ndjson missing (- reads standard input)")
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
                batch = try parsed.integer("--batch", range: 1...RecordBatch.maximumRecords) ?? 500
                (timeout, timeoutMilliseconds) = try parsed.milliseconds("--timeout", default: 10, range: 0.05...3600)
                attempts = try parsed.integer("--attempts", range: 1...100) ?? 5
                rate = try parsed.double("--rate", range: 0.001...10_000_000)
                realtime = parsed.has("--realtime")
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

    struct Totals {
        var sent = 0
        var accepted = 0
        var rejected = 0
        var batches = 0
        var invalid = 0
        var resent = 0
    }

    /// A batch on its way: the records and the file line each came from (ack indexes map back to them).
    struct Batch {
        var records: [SensorRecord] = []
        var lines: [Int] = []
        /// Seconds after the start when its first / last record is due (pacing), nil when not paced.
        var firstDue: Double?
        var lastDue: Double?

        var isEmpty: Bool { records.isEmpty }

        var lineRange: String {
            guard let first = lines.first, let last = lines.last else { return "no lines" }
            return first == last ? "line \(first)" : "lines \(first)–\(last)"
        }
    }

    /// Reads lines into batches, paces them, and hands each to the gateway until it is acknowledged.
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
        }

        mutating func take(_ line: UnsafeBufferPointer<UInt8>, number: Int) throws(CommandExit) {
            let record: SensorRecord
            do {
                record = try RecordDecoding.record(fromJSON: line)
            } catch {
                totals.invalid += 1
                Console.err("line \(number): \(error.field): \(error.reason) (not sent)")
                return
            }
            let due = dueTime(of: record)
            validCount += 1
            if let due, let firstDue = batch.firstDue, due - firstDue > Self.paceGranularity {
                try flush()
            }
            if batch.isEmpty { batch.firstDue = due }
            batch.lastDue = due.map { max($0, batch.lastDue ?? $0) }
            batch.records.append(record)
            batch.lines.append(number)
            if batch.records.count >= options.batch { try flush() }
        }

        mutating func finish() throws(CommandExit) {
            try flush()
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
            batch = Batch()
            if let due = current.lastDue {
                let wait = start + due - MonotonicClock.now()
                if wait > 0 {
                    if wait > 5 { log.info("waiting for the records' time", ["seconds": JSONText.number((wait * 10).rounded() / 10)]) }
                    guard sleepUnlessSignalled(wait) else { throw interrupted(current) }
                }
            }
            totals.batches += 1
            let batchID = gateway.batchID(totals.batches)
            let outcome = try gateway.deliver(current, batchID: batchID)
            totals.sent += current.records.count
            totals.resent += outcome.attempts - 1
            account(outcome.acknowledgement, of: current, batchID: batchID)
        }

        private func interrupted(_ batch: Batch) -> CommandExit {
            CommandExit(1, "interrupted by \(SignalFlag.name(SignalFlag.signal)) before \(batch.lineRange) were acknowledged")
        }

        /// Counts an acknowledgement and reports its rejections with the file's line numbers.
        private mutating func account(_ ack: Acknowledgement, of batch: Batch, batchID: String) {
            totals.accepted += ack.accepted
            var rejectedIndexes = Set<Int>()
            for rejection in ack.rejected {
                if rejection.index == -1 {
                    // The batch could not be read at all: every record of it is refused.
                    Console.err("\(batch.lineRange): batch \(batchID) refused: \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)")
                    rejectedIndexes.formUnion(batch.records.indices)
                } else if batch.lines.indices.contains(rejection.index) {
                    Console.err("line \(batch.lines[rejection.index]): \(rejection.field): \(rejection.reason) (rejected by sensor-ingest)")
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

    /// The DEALER socket and the resend loop. Owned by the thread that created it.
    final class Gateway {
        let options: Options
        let log: Log
        private let context: ZMQContext
        private var socket: ZMQSocket?
        private let runID: String

        init(options: Options, log: Log) throws {
            self.options = options
            self.log = log
            context = try ZMQContext()
            // A send may wait this long for room (high-water mark) before the attempt counts as failed.
            let socket = try ZMQSocket(context, .dealer, linger: 0, sendTimeout: options.timeoutMilliseconds)
            try options.keys?.apply(to: socket)
            try socket.connect(options.endpoint)
            self.socket = socket
            runID = "gw-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            log.info("connecting", ["endpoint": options.endpoint, "format": options.format.rawValue,
                                    "batch": String(options.batch)])
        }

        func close() {
            socket?.close()
            socket = nil
            context.terminate()
        }

        func batchID(_ number: Int) -> String { "\(runID)-\(number)" }

        /// Pause before attempt `attempt` (2, 3, …): 0.25 s, 0.5 s, 1 s, … up to 5 s.
        static func backoff(before attempt: Int) -> Double {
            min(5, 0.25 * Double(1 << min(attempt - 2, 10)))
        }

        /// Longest pause before sending a batch again that sensor-ingest refused for its rate limit, whatever
        /// `retryAfterMs` says (a longer wait is then taken as several).
        static let longestRateWait = 60.0

        /// Rate refusals seen so far in this run (the first is logged as a warning, the others at debug level).
        private(set) var rateRefusals = 0

        /// Sends the batch until its acknowledgement arrives; throws (exit 1) after `--attempts` sends without one.
        /// A `rate` refusal is an answer, not a verdict: the same batch is sent again after its `retryAfterMs`, as
        /// often as needed, and that does not use up an attempt. Returns the sends that went unanswered plus one.
        func deliver(_ batch: Batch, batchID: String) throws(CommandExit) -> (acknowledgement: Acknowledgement, attempts: Int) {
            guard let socket else { throw CommandExit(1, "the gateway socket is closed") }
            let id = Array(batchID.utf8)
            let frames = [id, options.format.frame, RecordBatch.encodeBatch(batch.records, as: options.format)]
            var attempt = 1
            var pause = 0.0
            while attempt <= options.attempts {
                if pause > 0 {
                    guard sleepUnlessSignalled(pause) else { throw interrupted(batch) }
                }
                if let ack = try send(frames, id: id, batchID: batchID, batch: batch, socket: socket) {
                    guard let retryAfterMs = ack.rateLimitRetryAfterMs else { return (ack, attempt) }
                    pause = min(Self.longestRateWait, Double(retryAfterMs) / 1000)
                    noteRateRefusal(ack, batchID: batchID, pause: pause)
                    continue
                }
                attempt += 1
                guard attempt <= options.attempts else { break }
                pause = Self.backoff(before: attempt)
                log.warning("no acknowledgement, sending the batch again",
                            ["batch": batchID, "lines": batch.lineRange, "attempt": "\(attempt)/\(options.attempts)",
                             "pause": JSONText.number(pause)])
            }
            throw CommandExit(1, "batch \(batchID) (\(batch.lineRange), \(batch.records.count) record\(batch.records.count == 1 ? "" : "s")) not acknowledged by \(options.endpoint) after \(options.attempts) attempt\(options.attempts == 1 ? "" : "s") of \(JSONText.number(options.timeout)) s")
        }

        /// One send of the batch and the wait for its acknowledgement; nil when none came (or it could not be queued).
        private func send(_ frames: [[UInt8]], id: [UInt8], batchID: String, batch: Batch,
                          socket: ZMQSocket) throws(CommandExit) -> Acknowledgement? {
            do {
                guard try socket.send(frames) else {
                    log.warning("batch not queued within the timeout (sensor-ingest gone or full)",
                                ["batch": batchID, "endpoint": options.endpoint])
                    return nil
                }
            } catch {
                throw CommandExit(1, "batch \(batchID) (\(batch.lineRange)) not sent: \(error)")
            }
            return try awaitAcknowledgement(of: id, batchID: batchID, batch: batch, socket: socket)
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

        /// Waits up to the timeout for `[batchID, ack]`; acknowledgements of earlier sends (a late answer to a batch
        /// already resent and acknowledged) are skipped. Nil on timeout.
        private func awaitAcknowledgement(of id: [UInt8], batchID: String, batch: Batch,
                                          socket: ZMQSocket) throws(CommandExit) -> Acknowledgement? {
            let deadline = MonotonicClock.now() + options.timeout
            while true {
                if SignalFlag.signal != 0 { throw interrupted(batch) }
                let left = deadline - MonotonicClock.now()
                if left <= 0 { return nil }
                let ready: [ZMQPollEvents]
                do {
                    ready = try ZMQPoller.poll([ZMQPollItem(socket)], timeoutMilliseconds: Int(min(left, 0.1) * 1000) + 1)
                } catch {
                    throw CommandExit(1, "waiting for the acknowledgement of batch \(batchID): \(error)")
                }
                guard ready.first?.contains(.readable) == true else { continue }
                while true {
                    let message: [[UInt8]]
                    do {
                        guard let received = try socket.receive(dontWait: true) else { break }
                        message = received
                    } catch {
                        throw CommandExit(1, "receiving the acknowledgement of batch \(batchID): \(error)")
                    }
                    guard message.count == 2 else {
                        log.warning("reply that is not [batchID, ack] ignored", ["frames": String(message.count)])
                        continue
                    }
                    guard message[0] == id else {
                        log.debug("acknowledgement of an earlier send skipped",
                                  ["batch": String(decoding: message[0].prefix(64), as: UTF8.self)])
                        continue
                    }
                    do {
                        return try Acknowledgement.decode(message[1], contentType: options.format)
                    } catch {
                        throw CommandExit(1, "batch \(batchID) (\(batch.lineRange)): unreadable acknowledgement: \(error)")
                    }
                }
            }
        }

        private func interrupted(_ batch: Batch) -> CommandExit {
            CommandExit(1, "interrupted by \(SignalFlag.name(SignalFlag.signal)) before \(batch.lineRange) were acknowledged")
        }
    }
}
