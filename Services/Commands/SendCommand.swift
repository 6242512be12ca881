import Logging
import RoadSaveClient
import SystemKit
import TerminalProgress
import Wire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `roadsave send FILE.ndjson`: a device gateway on the command line (PROTOCOL §7, gateway batch).
///
/// The gateway is the client library's (`RoadSaveGateway`: batches per ingest, the window, acknowledgements,
/// re-sends, rate and store pauses, watermarks, pacing, on a thread of its own that polls every ingest's socket in
/// steps of at most 100 ms, so SIGINT/SIGTERM are noticed); this command reads and checks the file, hands the records
/// on, prints what the receipts say with the file's line numbers, the progress line and the summary.
public enum SendCommand {
    public static let usage = """
        Usage: roadsave send FILE [options]

        Acts as a device gateway: reads records (NDJSON, one JSON object a line, or MessagePack, one record map after
        another, as docs/PROTOCOL.md §2 has them; FILE - reads standard input), checks every record as sensor-ingest
        will, and sends the good ones in batches to sensor-ingest (ZeroMQ DEALER to its ROUTER; frames [batchID,
        contentType, body]). Up to --window batches are on their way at once, in file order; like a gateway it keeps
        each batch until its acknowledgement [batchID, ack] arrives: without one within --timeout it sends the same
        batch again (same batchID), up to --attempts times with a growing pause, then gives up naming the batch. A
        batch refused for the gateway's rate limit (field rate), or because the journal could not store it (field
        store: a full disk, a lock held too long), is sent again after the acknowledgement's retryAfterMs, as often
        as it takes: it slows the send down, it loses nothing and uses up no attempt.

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
        \(ClientLinkTimings.help)
          -h, --help          this text

        Output: records that fail validation here are reported on standard error as "line N: field: reason (not
        sent)"; records sensor-ingest rejects as "line N: field: reason (rejected by sensor-ingest)" ("record N"
        for MessagePack input). Standard output gets the summary "sent N, accepted A, rejected R, batches B".

        Exit status: 0 when every batch was acknowledged (even with rejected records), 1 when a batch got no
        acknowledgement after its attempts (or the send was interrupted), or when a MessagePack file cannot be read
        to its end (truncated, or bytes that start no record: what came before is still sent and acknowledged, and
        the error names the record and byte), 2 for bad options or an unreadable file.
        """

    public static func run(_ arguments: [String]) async -> Int32 {
        await ClientCommand.run("send", usage: usage, options: { try Options(arguments) }) {
            (options: Options, log: Log) async throws(CommandExit) -> Int32 in
            await send(options, log: log)
        }
    }

    /// Sends the file; a failure before the first connection is the exit status, after it the summary is printed too.
    static func send(_ options: Options, log: Log) async -> Int32 {
        var failure: CommandExit?
        var gateway: RoadSaveGateway?
        var sender: Sender?
        var progress = ProgressMeter.off()
        let notices = Notices(options: options, log: log)
        do throws(CommandExit) {
            // Opened before connecting, so an unreadable file is exit 2 without a socket.
            let input = try Input(options: options)
            progress = ProgressMeter.standardError(
                label: "send", total: input.reader.size, turnedOff: !options.progress,
                writesStandardOutput: false)
            let connected: RoadSaveGateway
            do {
                connected = try RoadSaveGateway(
                    options.configuration,
                    interruption: { SignalFlag.signal != 0 ? SignalFlag.signal : nil },
                    notices: { notices.log($0) })
            } catch {
                throw CommandExit(1, "cannot connect to \(options.endpoints[0]): \(error)")
            }
            gateway = connected
            var running = Sender(options: options, gateway: connected, log: log)
            defer { sender = running }
            let damage = try await running.send(input, progress: &progress)
            // What was read before damage in the file is still sent and acknowledged; then the damage is the error.
            try await running.finish()
            if let damage { throw CommandExit(1, "\(damage)") }
        } catch {
            if gateway == nil { return Console.fail("send", error) }
            failure = error
        }
        progress.finish()
        if let gateway, var last = sender {
            // Acknowledgements taken before a failure count too: what was acknowledged is in a journal.
            for receipt in await gateway.takeReceipts() { last.account(receipt) }
            sender = last
            gateway.close()
        }
        var totals = sender?.totals ?? Totals()
        let counts = gateway?.batchCounts ?? (total: 0, byIngest: [])
        totals.batches = counts.total
        totals.behindWatermark = notices.behindWatermark
        Console.out(
            "sent \(totals.sent), accepted \(totals.accepted), rejected \(totals.rejected), batches \(totals.batches)")
        if let sender, options.endpoints.count > 1 {
            for (index, endpoint) in options.endpoints.enumerated() {
                let own = sender.totalsByIngest[index]
                log.info(
                    "finished with ingest",
                    [
                        "endpoint": endpoint, "sent": String(own.sent),
                        "accepted": String(own.accepted), "rejected": String(own.rejected),
                        "batches": String(counts.byIngest.indices.contains(index) ? counts.byIngest[index] : 0),
                        "resent": String(own.resent), "rateLimited": String(notices.rateRefusals(endpoint)),
                    ])
            }
        }
        log.info(
            "finished",
            [
                "sent": String(totals.sent), "accepted": String(totals.accepted),
                "rejected": String(totals.rejected), "batches": String(totals.batches),
                "invalid": String(totals.invalid), "resent": String(totals.resent),
                "rateLimited": String(notices.rateRefusals(nil)),
            ])
        if totals.behindWatermark > Notices.behindWatermarkReports {
            Console.err(
                "roadsave send: \(totals.behindWatermark) \(options.numberName)s behind the watermark already sent (--max-disorder)"
            )
        }
        if totals.invalid > 0 {
            let noun = options.numberName
            Console.err("roadsave send: \(totals.invalid) \(noun)\(totals.invalid == 1 ? "" : "s") not sent (invalid)")
        }
        if let failure {
            return Console.fail("send", failure)
        }
        return 0
    }

    /// The records of FILE, NDJSON or MessagePack, each checked as sensor-ingest will check it.
    struct Input {
        let reader: RecordFileReader

        init(options: Options) throws(CommandExit) {
            do {
                reader = try RecordFileReader(path: options.path, format: options.inputFormat)
            } catch {
                throw CommandExit.usage("\(error)")
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
        /// Records read below a watermark already promised (the input more out of order than --max-disorder).
        var behindWatermark = 0
    }
}
