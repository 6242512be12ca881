import GatewayKit
import SystemKit
import Wire
import ZeroMQ

/// The link to one sensor-ingest of a gateway: its DEALER socket, the batches awaiting its acknowledgement (at most
/// the window), their re-sends and rate-limit pauses, and the watermark of its stream. Waits for nothing itself:
/// `GatewayLinks` polls every link's sockets at once, so no link stands still while another waits. Owned by the
/// engine's thread.
///
/// Each link is a stream of its own under the same gateway name: detection keeps a stream per journal (its name is
/// the journal's ID, the shard and the gateway's name: `DetectionCore.streamName`, a `FleetStreamState` each in
/// `DeviceFleet`), so a promise made to one ingest never speaks for the records sent to another.
final class IngestLink {
    let settings: GatewaySettings
    /// The sensor-ingest this link sends to, and its place in the endpoints (the route's index).
    let endpoint: String
    let index: Int
    private var socket: ZMQSocket?
    private let runID: String
    /// Batches sent and not acknowledged, by batchID bytes, and their batchIDs in the order sent.
    private var inFlight: [[UInt8]: InFlight] = [:]
    private var order: [[UInt8]] = []

    struct InFlight {
        var batch: GatewayBatch
        var batchID: String
        /// The engine's number for the batch (the watermark's name for it); nil for the header at the end.
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

    /// The watermark of the headers, nil without watermarks.
    private var watermark: GatewayWatermark?
    private let streamName: String
    /// The connection to sensor-ingest, ending and coming back.
    private var watch: ConnectionWatch?
    /// When something last went out (monotonic), for the headers sent alone while nothing else does.
    private var lastTransmit = 0.0
    private var headersAlone = 0
    /// A header alone goes out after this long without a transmission.
    static let headerInterval = 1.0

    init(endpoint: String, index: Int, context: ZMQContext, runID: String, settings: GatewaySettings) throws {
        self.settings = settings
        self.endpoint = endpoint
        self.index = index
        self.runID = runID
        if let watermarks = settings.watermarks {
            watermark = GatewayWatermark(maximumDisorder: watermarks.maximumDisorder)
        }
        // A send may wait this long for room (high-water mark) before the attempt counts as failed.
        let socket = try ZMQSocket(context, .dealer, linger: 0, sendTimeout: settings.timeoutMilliseconds)
        self.socket = socket
        if let keys = settings.keys { try socket.setCurveClient(keys) }
        // A batch is one frame, and may take long on a slow uplink: ingest is asked to wait for it.
        try socket.setLinkTimings(settings.link.sendingLargeFrames)
        watch = try ConnectionWatch(socket, context: context, name: "gateway")
        try socket.connect(endpoint)
        streamName = settings.watermarks?.streamName ?? runID
        lastTransmit = MonotonicClock.now()
        settings.notify(.connecting(endpoint: endpoint))
    }

    func close() {
        watch?.close()
        watch = nil
        socket?.close()
        socket = nil
    }

    /// A record was read into the batch being built for this ingest; false when it is behind a watermark already
    /// sent.
    func noteRead(_ t: Double) -> Bool { watermark?.read(t) ?? true }

    /// A record was read for another ingest: it moves this stream's newest time read (`GatewayWatermark.observe`).
    func noteReadElsewhere(_ t: Double) { watermark?.observe(t) }

    /// The records read for this ingest since the last seal are batch `number`.
    func seal(_ number: Int) { watermark?.seal(batch: number) }

    /// Whether the link sends headers: then its stream ends with one of its own.
    var sendsHeaders: Bool { watermark != nil }

    /// Batches awaiting acknowledgement.
    var waiting: Int { inFlight.count }

    /// The batch sent first of those awaiting acknowledgement (for the message of an interruption).
    var oldestWaiting: GatewayBatch? { order.first.flatMap { inFlight[$0]?.batch } }

    /// Pause before attempt `attempt` (2, 3, …): 0.25 s, 0.5 s, 1 s, … up to 5 s.
    static func backoff(before attempt: Int) -> Double {
        min(5, 0.25 * Double(1 << min(attempt - 2, 10)))
    }

    /// Longest pause before sending a batch again that sensor-ingest refused for its rate limit, whatever
    /// `retryAfterMs` says (a longer wait is then taken as several).
    static let longestRateWait = 60.0

    /// Rate refusals seen so far.
    private(set) var rateRefusals = 0

    /// Whether `batch` may go now: the window has room, and no batch of one of its devices, found lost or waiting to
    /// be sent again, must go before it (so that no device's newer records reach the journal ahead of its older ones).
    func hasRoom(for batch: GatewayBatch) -> Bool {
        inFlight.count < settings.window && !waitsForResend(batch)
    }

    /// Sends `batch` (once `hasRoom(for:)`); its acknowledgement comes through `take`.
    func send(_ batch: GatewayBatch, number: Int?) throws(RoadSaveClientError) {
        let batchID = number.map { "\(runID)-\($0)" } ?? "\(runID)-end"
        let id = Array(batchID.utf8)
        var entry = InFlight(batch: batch, batchID: batchID, number: number, body: batch.body(settings.format))
        try transmit(&entry)
        inFlight[id] = entry
        order.append(id)
    }

    /// Whether a batch of one of `batch`'s devices waits to be sent again.
    private func waitsForResend(_ batch: GatewayBatch) -> Bool {
        func waiting(_ entry: InFlight) -> Bool { entry.resendAt != nil || entry.lost }
        // The devices' sets are made only when a batch waits, and the new batch's once.
        guard inFlight.values.contains(where: waiting) else { return false }
        let devices = batch.devices
        return inFlight.values.contains { waiting($0) && !$0.batch.devices.isDisjoint(with: devices) }
    }

    /// The connection to sensor-ingest ended (its batches unanswered will not be answered on it), a new one is up
    /// (they go again, in the order they were first sent), or the ingest refused this gateway's key.
    private func connectionChanged(_ change: ConnectionWatch.Change) throws(RoadSaveClientError) {
        if case .refused(let status) = change {
            throw .keyRefused(endpoint: endpoint, reason: "the CurveZMQ handshake was refused (ZAP status \(status))")
        }
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
                guard entry.attempt <= settings.attempts else { throw outOfAttempts(entry) }
                entry.resendAt = now
                settings.notify(
                    .connectionEnded(
                        endpoint: endpoint, batch: entry.batch.summary(id: entry.batchID), attempt: entry.attempt,
                        attempts: settings.attempts))
            case .refused:
                continue
            }
            inFlight[id] = entry
        }
    }

    /// The header of a transmission of the batch numbered `number` (nil: the header at the end, or one sent alone):
    /// the watermark over everything else, or the end of the stream.
    private func header(for number: Int?, last: Bool) -> [UInt8]? {
        guard var watermark else { return nil }
        defer { self.watermark = watermark }
        if last, settings.watermarks?.endsStream == true {
            return GatewayBatchHeader(gateway: streamName, progress: .end).encode(as: settings.format)
        }
        guard let time = watermark.promise(excluding: number) else { return nil }
        return GatewayBatchHeader(gateway: streamName, progress: .watermark(time)).encode(as: settings.format)
    }

    /// While nothing else goes out, a header alone (an empty batch, not waited for: the next one supersedes it) tells
    /// detection how far the stream has come, so devices that fell silent are decided.
    private func sendHeaderAloneIfDue(now: Double) {
        guard let socket, watermark != nil, now - lastTransmit >= Self.headerInterval,
            let header = header(for: nil, last: false)
        else { return }
        headersAlone += 1
        let frames = [
            Array("\(runID)-h\(headersAlone)".utf8), settings.format.frame,
            RecordBatch.encodeBatch([], as: settings.format), header,
        ]
        // Never blocks: an ingest that takes nothing now gets the next one.
        _ = try? socket.send(frames, dontWait: true)
        lastTransmit = now
    }

    /// The first part of a round of `GatewayLinks`: sends what is due again, in send order, and a header alone when
    /// nothing else went out for a while.
    func sendDue() throws(RoadSaveClientError) {
        guard socket != nil else { throw .closed }
        let now = MonotonicClock.now()
        for id in order {
            guard var entry = inFlight[id], let resendAt = entry.resendAt, resendAt <= now else { continue }
            try transmit(&entry)
            inFlight[id] = entry
        }
        sendHeaderAloneIfDue(now: MonotonicClock.now())
    }

    /// The earliest time something is due (an answer's timeout, a re-send), if anything is.
    var nextDue: Double? {
        var due: Double?
        for entry in inFlight.values {
            if let answerDue = entry.answerDue { due = min(due ?? answerDue, answerDue) }
            if let resendAt = entry.resendAt { due = min(due ?? resendAt, resendAt) }
        }
        return due
    }

    /// What to poll: the socket (acknowledgements), then the connection watch.
    func pollItems() throws(RoadSaveClientError) -> [ZMQPollItem] {
        guard let socket else { throw .closed }
        var items = [ZMQPollItem(socket)]
        if let watch { items.append(ZMQPollItem(watch.reader)) }
        return items
    }

    /// The rest of the round, with the poll's answer for `pollItems()`: takes every acknowledgement that came and the
    /// connection's changes, and counts the sends that timed out.
    func take(
        _ ready: ArraySlice<ZMQPollEvents>, into completed: inout [RoadSaveGateway.Receipt]
    ) throws(RoadSaveClientError) {
        guard let socket else { throw .closed }
        let events = Array(ready)
        if events.first?.contains(.readable) == true { try receive(socket, into: &completed) }
        if events.count > 1, events[1].contains(.readable), let watch {
            for change in watch.changes() { try connectionChanged(change) }
        }
        try expire(now: MonotonicClock.now())
    }

    /// Takes every acknowledgement waiting on the socket.
    private func receive(
        _ socket: ZMQSocket, into completed: inout [RoadSaveGateway.Receipt]
    ) throws(RoadSaveClientError) {
        while true {
            let message: [[UInt8]]
            do {
                guard let received = try socket.receive(dontWait: true) else { return }
                message = received
            } catch {
                throw .connectionFailed(endpoint: endpoint, reason: "receiving acknowledgements: \(error)")
            }
            guard message.count == 2 else {
                settings.notify(.unexpectedReply(endpoint: endpoint, frames: message.count))
                continue
            }
            guard var entry = inFlight[message[0]] else {
                // A late answer to a send already answered (the batch was sent again meanwhile).
                settings.notify(
                    .lateAcknowledgement(
                        endpoint: endpoint, batch: String(decoding: message[0].prefix(64), as: UTF8.self)))
                continue
            }
            let ack: Acknowledgement
            do {
                ack = try Acknowledgement.decode(message[1], contentType: settings.format)
            } catch {
                throw .connectionFailed(
                    endpoint: endpoint, reason: "batch \(entry.batchID): unreadable acknowledgement: \(error)")
            }
            if let retryAfterMs = ack.resendAfterMs {
                // An answer, not a verdict (the rate limit, or a journal that could not store the batch): the same
                // batch goes again after the pause, using up no attempt.
                let pause = min(Self.longestRateWait, Double(retryAfterMs) / 1000)
                let reason = ack.rejected.first?.reason ?? ""
                if ack.rateLimitRetryAfterMs != nil {
                    rateRefusals += 1
                    settings.notify(
                        .rateLimited(
                            endpoint: endpoint, batch: entry.batchID, pause: pause, reason: reason,
                            count: rateRefusals))
                } else {
                    settings.notify(
                        .storeRefused(endpoint: endpoint, batch: entry.batchID, pause: pause, reason: reason))
                }
                entry.answerDue = nil
                entry.resendAt = MonotonicClock.now() + pause
                inFlight[message[0]] = entry
                continue
            }
            if let refusal = ack.rejected.first(where: { $0.index == -1 && $0.field == "key" }) {
                // The key was removed or replaced since this connection's handshake: nothing was stored.
                throw .keyRefused(endpoint: endpoint, reason: refusal.reason)
            }
            inFlight[message[0]] = nil
            order.removeAll { $0 == message[0] }
            // Answered: stored, or given up on (what was refused is not sent again), so not still to come.
            // The header that ends the stream carries no records: no receipt.
            guard let number = entry.number else { continue }
            watermark?.acknowledged(batch: number)
            completed.append(receipt(of: entry, ack: ack))
        }
    }

    /// What the caller learns of an acknowledged batch.
    private func receipt(of entry: InFlight, ack: Acknowledgement) -> RoadSaveGateway.Receipt {
        let batch = entry.batch
        let rejections = ack.rejected.map { rejection in
            let known = batch.records.indices.contains(rejection.index)
            return RoadSaveGateway.Rejection(
                index: rejection.index, number: known ? batch.numbers[rejection.index] : nil,
                record: known ? batch.records[rejection.index] : nil, field: rejection.field,
                reason: rejection.reason,
                kind: RoadSaveGateway.Rejection.kind(
                    index: rejection.index, field: rejection.field, reason: rejection.reason))
        }
        return RoadSaveGateway.Receipt(
            batchID: entry.batchID, endpoint: endpoint, records: batch.records.count, accepted: ack.accepted,
            rejections: rejections, attempts: entry.attempt, numbers: batch.numbers, ingest: index)
    }

    /// Sends whose answer is overdue count as attempts; a batch out of attempts ends the gateway.
    private func expire(now: Double) throws(RoadSaveClientError) {
        for id in order {
            guard var entry = inFlight[id], let due = entry.answerDue, due <= now else { continue }
            try failedAttempt(&entry, now: now)
            inFlight[id] = entry
        }
    }

    private func failedAttempt(_ entry: inout InFlight, now: Double) throws(RoadSaveClientError) {
        entry.attempt += 1
        entry.answerDue = nil
        guard entry.attempt <= settings.attempts else { throw outOfAttempts(entry) }
        let pause = Self.backoff(before: entry.attempt)
        entry.resendAt = now + pause
        settings.notify(
            .noAcknowledgement(
                endpoint: endpoint, batch: entry.batch.summary(id: entry.batchID), attempt: entry.attempt,
                attempts: settings.attempts, pause: pause))
    }

    private func outOfAttempts(_ entry: InFlight) -> RoadSaveClientError {
        let numbers = entry.batch.numbers
        return .notAcknowledged(
            endpoint: endpoint, batch: entry.batchID,
            records: numbers.first.flatMap { first in numbers.last.map { first...max(first, $0) } },
            count: numbers.count, attempts: settings.attempts, timeout: settings.timeout)
    }

    /// One send of the batch, with a header of the watermark as it is now; a send that cannot be queued within the
    /// timeout is an unanswered attempt.
    private func transmit(_ entry: inout InFlight) throws(RoadSaveClientError) {
        guard let socket else { throw .closed }
        entry.resendAt = nil
        var frames = [Array(entry.batchID.utf8), settings.format.frame, entry.body]
        if let header = header(for: entry.number, last: entry.number == nil) { frames.append(header) }
        entry.lost = false
        lastTransmit = MonotonicClock.now()
        let queued: Bool
        do {
            queued = try socket.send(frames)
        } catch {
            throw .connectionFailed(endpoint: endpoint, reason: "batch \(entry.batchID) not sent: \(error)")
        }
        let now = MonotonicClock.now()
        guard queued else {
            settings.notify(.notQueued(endpoint: endpoint, batch: entry.batchID))
            try failedAttempt(&entry, now: now)
            return
        }
        entry.answerDue = now + settings.timeout
    }
}
