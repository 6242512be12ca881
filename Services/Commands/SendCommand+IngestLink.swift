import GatewayKit
import Logging
import ServiceKit
import SystemKit
import Wire
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension SendCommand {
    /// The link to one sensor-ingest of --endpoint: its DEALER socket, the batches awaiting its acknowledgement (at
    /// most --window), their resends and rate-limit pauses, and the watermark of its stream. Waits for nothing
    /// itself: `Gateway` polls every link's sockets at once, so no link stands still while another waits. Owned by
    /// the thread that created it.
    ///
    /// Each link is a stream of its own under the same --gateway name: detection keeps a stream per journal (its
    /// name is the journal's ID, the shard and the gateway's name: `DetectionCore.streamName`, a `FleetStreamState`
    /// each in `DeviceFleet`), so a promise made to one ingest never speaks for the records sent to another.
    final class IngestLink {
        let options: Options
        let log: Log
        /// The sensor-ingest this link sends to, and its place in --endpoint (the route's index).
        let endpoint: String
        let index: Int
        private var socket: ZMQSocket?
        private let runID: String
        /// Batches sent and not acknowledged, by batchID bytes, and their batchIDs in the order sent.
        private var inFlight: [[UInt8]: InFlight] = [:]
        private var order: [[UInt8]] = []
        /// With several ingests, log lines name the endpoint (with one they stay as they were).
        private let namesEndpoint: Bool

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

        init(endpoint: String, index: Int, context: ZMQContext, runID: String, options: Options, log: Log) throws {
            self.options = options
            self.log = log
            self.endpoint = endpoint
            self.index = index
            self.runID = runID
            namesEndpoint = options.endpoints.count > 1
            if options.watermarks { watermark = GatewayWatermark(maximumDisorder: options.maximumDisorder) }
            // A send may wait this long for room (high-water mark) before the attempt counts as failed.
            let socket = try ZMQSocket(context, .dealer, linger: 0, sendTimeout: options.timeoutMilliseconds)
            self.socket = socket
            try options.keys?.apply(to: socket)
            // A batch is one frame, and may take long on a slow uplink: ingest is asked to wait for it.
            try socket.setLinkTimings(options.link.sendingLargeFrames)
            watch = try ConnectionWatch(socket, context: context, name: "send")
            try socket.connect(endpoint)
            gatewayName = options.gatewayName ?? runID
            lastTransmit = MonotonicClock.now()
            log.info(
                "connecting",
                [
                    "endpoint": endpoint, "format": options.format.rawValue,
                    "batch": String(options.batch), "window": String(options.window),
                ])
        }

        func close() {
            watch?.close()
            watch = nil
            socket?.close()
            socket = nil
        }

        /// A record was read into the batch being built for this ingest; false when it is behind a watermark
        /// already sent.
        func noteRead(_ t: Double) -> Bool { watermark?.read(t) ?? true }

        /// A record was read for another ingest: it moves this stream's newest time read (`GatewayWatermark.observe`).
        func noteReadElsewhere(_ t: Double) { watermark?.observe(t) }

        /// The records read for this ingest since the last seal are batch `number`.
        func seal(_ number: Int) { watermark?.seal(batch: number) }

        /// Whether the link sends headers (not with --no-watermark): then its stream ends with one of its own.
        var sendsHeaders: Bool { watermark != nil }

        /// Batches awaiting acknowledgement.
        var waiting: Int { inFlight.count }

        /// The batch sent first of those awaiting acknowledgement (for the message of an interruption).
        var oldestWaiting: Batch? { order.first.flatMap { inFlight[$0]?.batch } }

        /// Pause before attempt `attempt` (2, 3, …): 0.25 s, 0.5 s, 1 s, … up to 5 s.
        static func backoff(before attempt: Int) -> Double {
            min(5, 0.25 * Double(1 << min(attempt - 2, 10)))
        }

        /// Longest pause before sending a batch again that sensor-ingest refused for its rate limit, whatever
        /// `retryAfterMs` says (a longer wait is then taken as several).
        static let longestRateWait = 60.0

        /// Rate refusals seen so far in this run (the first is logged as a warning, the others at debug level).
        private(set) var rateRefusals = 0

        /// Whether `batch` may go now: the window has room, and no batch of one of its devices, found lost or
        /// waiting to be sent again, must go before it (so that no device's newer records reach the journal ahead
        /// of its older ones).
        func hasRoom(for batch: Batch) -> Bool {
            inFlight.count < options.window && !waitsForResend(batch)
        }

        /// Sends `batch` (once `hasRoom(for:)`); its acknowledgement comes through `take`.
        func send(_ batch: Batch, number: Int?) throws(CommandExit) {
            let batchID = number.map { "\(runID)-\($0)" } ?? "\(runID)-end"
            let id = Array(batchID.utf8)
            var entry = InFlight(batch: batch, batchID: batchID, number: number, body: batch.body(options.format))
            try transmit(&entry)
            inFlight[id] = entry
            order.append(id)
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
                    note(
                        .warning,
                        "the connection to sensor-ingest ended before the batch was acknowledged: sending it again",
                        [
                            "batch": entry.batchID, "lines": entry.batch.lineRange,
                            "attempt": "\(entry.attempt)/\(options.attempts)",
                        ])
                }
                inFlight[id] = entry
            }
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
                let header = header(for: nil, last: false)
            else { return }
            headersAlone += 1
            let frames = [
                Array("\(runID)-h\(headersAlone)".utf8), options.format.frame,
                RecordBatch.encodeBatch([], as: options.format), header,
            ]
            // Never blocks: an ingest that takes nothing now gets the next one.
            _ = try? socket.send(frames, dontWait: true)
            lastTransmit = now
        }

        /// The first part of a round of `Gateway`: sends what is due again, in send order, and a header alone when
        /// nothing else went out for a while.
        func sendDue() throws(CommandExit) {
            guard socket != nil else { throw CommandExit(1, "the gateway socket is closed") }
            let now = MonotonicClock.now()
            for id in order {
                guard var entry = inFlight[id], let resendAt = entry.resendAt, resendAt <= now else { continue }
                try transmit(&entry)
                inFlight[id] = entry
            }
            sendHeaderAloneIfDue(now: MonotonicClock.now())
        }

        /// The earliest time something is due (an answer's timeout, a resend), if anything is.
        var nextDue: Double? {
            var due: Double?
            for entry in inFlight.values {
                if let answerDue = entry.answerDue { due = min(due ?? answerDue, answerDue) }
                if let resendAt = entry.resendAt { due = min(due ?? resendAt, resendAt) }
            }
            return due
        }

        /// What to poll: the socket (acknowledgements), then the connection watch.
        func pollItems() throws(CommandExit) -> [ZMQPollItem] {
            guard let socket else { throw CommandExit(1, "the gateway socket is closed") }
            var items = [ZMQPollItem(socket)]
            if let watch { items.append(ZMQPollItem(watch.reader)) }
            return items
        }

        /// The rest of the round, with the poll's answer for `pollItems()`: takes every acknowledgement that came
        /// and the connection's changes, and counts the sends that timed out.
        func take(_ ready: ArraySlice<ZMQPollEvents>, into completed: inout [Completion]) throws(CommandExit) {
            guard let socket else { throw CommandExit(1, "the gateway socket is closed") }
            let events = Array(ready)
            if events.first?.contains(.readable) == true { try receive(socket, into: &completed) }
            if events.count > 1, events[1].contains(.readable), let watch {
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
                    note(.warning, "reply that is not [batchID, ack] ignored", ["frames": String(message.count)])
                    continue
                }
                guard var entry = inFlight[message[0]] else {
                    // A late answer to a send already answered (the batch was sent again meanwhile).
                    note(
                        .debug, "acknowledgement of an earlier send skipped",
                        ["batch": String(decoding: message[0].prefix(64), as: UTF8.self)])
                    continue
                }
                let ack: Acknowledgement
                do {
                    ack = try Acknowledgement.decode(message[1], contentType: options.format)
                } catch {
                    throw CommandExit(
                        1, "batch \(entry.batchID) (\(entry.batch.lineRange)): unreadable acknowledgement: \(error)")
                }
                if let retryAfterMs = ack.resendAfterMs {
                    // An answer, not a verdict (the rate limit, or a journal that could not store the batch): the
                    // same batch goes again after the pause, using up no attempt.
                    let pause = min(Self.longestRateWait, Double(retryAfterMs) / 1000)
                    if ack.rateLimitRetryAfterMs != nil {
                        noteRateRefusal(ack, batchID: entry.batchID, pause: pause)
                    } else {
                        note(
                            .warning, "sensor-ingest could not store the batch: sending it again after the pause",
                            [
                                "batch": entry.batchID, "pause": JSONText.number(pause),
                                "reason": ack.rejected.first?.reason ?? "",
                            ])
                    }
                    entry.answerDue = nil
                    entry.resendAt = MonotonicClock.now() + pause
                    inFlight[message[0]] = entry
                    continue
                }
                inFlight[message[0]] = nil
                order.removeAll { $0 == message[0] }
                // Answered: stored, or given up on (what was refused is not sent again), so not still to come.
                if let number = entry.number { watermark?.acknowledged(batch: number) }
                completed.append(
                    Completion(
                        batch: entry.batch, batchID: entry.batchID, acknowledgement: ack,
                        attempts: entry.attempt, ingest: index))
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
            note(
                .warning, "no acknowledgement, sending the batch again",
                [
                    "batch": entry.batchID, "lines": entry.batch.lineRange,
                    "attempt": "\(entry.attempt)/\(options.attempts)", "pause": JSONText.number(pause),
                ])
        }

        private func outOfAttempts(_ entry: InFlight) -> CommandExit {
            let batch = entry.batch
            return CommandExit(
                1,
                "batch \(entry.batchID) (\(batch.lineRange), \(batch.records.count) record\(batch.records.count == 1 ? "" : "s")) not acknowledged by \(endpoint) after \(options.attempts) attempt\(options.attempts == 1 ? "" : "s") of \(JSONText.number(options.timeout)) s"
            )
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
                log.warning(
                    "batch not queued within the timeout (sensor-ingest gone or full)",
                    ["batch": entry.batchID, "endpoint": endpoint])
                try failedAttempt(&entry, now: now)
                return
            }
            entry.answerDue = now + options.timeout
        }

        private func noteRateRefusal(_ ack: Acknowledgement, batchID: String, pause: Double) {
            rateRefusals += 1
            let reason = ack.rejected.first?.reason ?? ""
            if rateRefusals == 1 {
                note(
                    .warning, "sensor-ingest limits this gateway's rate: batches wait and are sent again as it asks",
                    ["batch": batchID, "pause": JSONText.number(pause), "reason": reason])
            } else {
                note(
                    .debug, "rate limited, sending the batch again after the pause",
                    ["batch": batchID, "pause": JSONText.number(pause)])
            }
        }

        /// A log line of this link, naming its endpoint when there are several.
        private func note(_ level: Log.Level, _ message: String, _ fields: KeyValuePairs<String, String>) {
            var pairs = fields.map { ($0.key, $0.value) }
            if namesEndpoint { pairs.append(("endpoint", endpoint)) }
            log.write(level, message, pairs: pairs)
        }
    }
}
