import Feeds
import Foundation
import Logging
import Metrics
import RecordCodecs
import ServiceKit
import Storage
import SystemKit
import Wire
import ZeroMQ

/// What sensor-ingest does on its reactor thread (`IngestService` is the shell that runs it): the journal, the
/// sockets, the group commits, the acknowledgements and the figures. Not `Sendable`: it is reached only through the
/// service's `ReactorBound`, or from the reactor thread's own handlers and timers.
final class IngestServing {
    let configuration: IngestConfiguration
    private let log: Log
    private let reactor: Reactor
    private var journal: Journal?
    /// The apps' and users' strings of the gateways' records, made once (`MessagePack.decodeRecords`).
    private let identifiers = IdentifierCache()
    private var feedServer: FeedServer?
    /// The CurveZMQ authenticator of the gateway socket, when the service has keys.
    private var zap: ZAPHandler?
    private var statistics = Statistics()
    /// Per-gateway-key token buckets (`--rate-limit`); nil without a limit.
    private var rateLimiter: GatewayRateLimiter?
    /// The frames of the acknowledgement being sent (`send(_:on:)`).
    private var replyFrames: [[UInt8]] = []
    /// When a rate refusal was last logged (monotonic seconds): a flood is logged once every `rateLogInterval`.
    private var lastRateLog: Double?
    private var rateRefusedSinceLog = 0
    static let rateLogInterval = 10.0
    /// /metrics, /healthz and /readyz.
    private var metrics: ServiceMetrics?
    /// The gateway and records sockets are bound: with the journal open, the service is ready.
    private var listening = false

    /// Messages queued per gateway connection before ZeroMQ stops reading from it (the gateway then waits).
    static let gatewayQueueLimit: Int32 = 1000
    /// Most messages, and about the most records, in one group commit.
    static let groupBatches = 1000
    static let groupRecords = 200_000
    /// Seconds between rounds of retention.
    static let retentionInterval = 5.0

    struct Statistics {
        var batches = 0
        var accepted = 0
        var rejected = 0
        var unreadableBatches = 0
        /// Batches refused because the journal could not store them.
        var unstoredBatches = 0
        /// Batches refused whole, unread, for their gateway's rate limit.
        var rateLimitedBatches = 0
        /// Batches refused whole, unread, because their connection's key is no longer listed (removed or replaced).
        var keyRefusedBatches = 0
        var largestGroup = 0
        var rejections = RejectionTally()
        /// Records per readable batch.
        var batchSizes = Histogram.sizes()
    }

    init(configuration: IngestConfiguration, log: Log, reactor: Reactor) {
        self.configuration = configuration
        self.log = log
        self.reactor = reactor
        if configuration.rateLimit > 0 {
            rateLimiter = GatewayRateLimiter(rate: configuration.rateLimit, burst: configuration.rateBurst)
        }
    }

    /// The reactor's setup: opens the journal, binds the sockets, registers the handlers and timers; throws if the
    /// journal or a socket cannot be set up (another --shards than the journal's, a data directory that is not
    /// writable, a port in use).
    func setUp(_ loop: ReactorLoop, metrics: ServiceMetrics) throws {
        self.metrics = metrics
        let directory = try DataDirectory.prepare(configuration.dataDirectory)
        let journal = try Journal(
            directory: directory, shards: configuration.shards,
            retentionAge: configuration.retentionAge,
            maximumBytes: configuration.journalMaximumBytes,
            maximumDevicesPerApplication: configuration.maximumDevicesPerApplication,
            deviceIdleAge: configuration.deviceIdleAge, log: log)
        self.journal = journal
        loop.onStop { [self] in close() }

        let gateways = try loop.socket(.router)
        // With keys, the ZAP handler answers for the gateways; SIGHUP re-reads its allow-list.
        try ServiceZAP.secure(
            gateways, role: .gateway, keys: configuration.curve, handler: &zap, loop: loop,
            reactor: reactor, log: log, clients: "gateways",
            fields: ["gateways": configuration.gatewayEndpoint])
        // Gateways send batches as single frames, over uplinks that may be slow: one still arriving is no dead link.
        try gateways.setLinkTimings(configuration.linkTimings.receivingLargeFrames)
        try gateways.setReceiveHighWaterMark(Self.gatewayQueueLimit)
        try gateways.setSendTimeout(milliseconds: 1000)
        try gateways.setMaximumMessageSize(configuration.maximumMessageBytes)
        try OutsideSockets.watch(gateways, name: "gateway", loop: loop, log: log)
        try gateways.bind(configuration.gatewayEndpoint)
        // The journal feed is for detection only.
        let feedServer = try FeedServer.bound(
            to: configuration.recordsEndpoint, loop: loop, source: journal, zap: zap,
            secretKey: configuration.curve?.secretKey, sendTimeoutMilliseconds: 0, log: log)
        self.feedServer = feedServer
        loop.onReadable(gateways) { [self] socket in serveBatches(socket) }
        loop.every(Self.retentionInterval) { [self] in enforceRetention() }

        let summary = try journal.summary()
        listening = true
        // Posting starts once the journal is open (it may read many chunks): until then /healthz says "starting".
        self.metrics?.start(on: loop, service: "ingest") { [self] in (metricFamilies(), notReady()) }
        log.info(
            "journal opened",
            [
                "path": journal.path, "feed": journal.feedID, "shards": String(journal.shards),
                "chunks": String(summary.chunks), "records": String(summary.records),
                "oldest": summary.oldest.map(String.init) ?? "-", "head": String(summary.head),
                "bytes": String(summary.bytes),
            ])
        log.info(
            "listening",
            [
                "gateways": gateways.lastEndpoint, "records": feedServer.endpoint,
                "applications": String(configuration.applications.count),
                "maxMessageBytes": String(configuration.maximumMessageBytes),
                "maxDevicesPerApp": String(configuration.maximumDevicesPerApplication),
                "deviceIdleAge": String(Int(configuration.deviceIdleAge)),
                "rateLimit": rateLimiter.map { "\(Int($0.rate))/s burst \(Int($0.burst))" } ?? "none",
            ])
    }

    private func serveBatches(_ socket: ZMQSocket) {
        guard let journal else { return }
        // Take every batch there is now (up to a bound; the reactor calls again while more wait).
        var group: [GatewayBatch] = []
        var records = 0
        // The devices' admission, made once a round rather than once a batch (each closure that captures is an
        // allocation); the round's batches are admitted at the time it began.
        let now = journal.now
        let devices = ({ journal.admit(devicesOf: $0, at: now) }, journal.refusal(forNewDeviceOf:))
        socket.drain(limit: Self.groupBatches, failed: { log.error("gateway socket failed", ["error": "\($0)"]) }) {
            message in
            // The key's entry in force now: one removed or replaced since the handshake is refused from its next batch.
            let key = zap?.entry(for: socket.lastPeer, role: .gateway)
            let batch = GatewayBatch(
                message: message, applications: configuration.applications,
                maximumBatch: configuration.maximumBatch, key: key, identifiers: identifiers,
                devices: devices,
                rateLimit: rateLimiter == nil
                    ? nil
                    : { [self] count in
                        chargeRate(count, keyName: try? key?.get().name)
                    })
            record(batch)
            if batch.records.isEmpty && batch.header == nil {
                // Nothing to store: the answer can go now.
                send(batch, on: socket)
            } else {
                records += batch.records.count
                group.append(batch)
            }
            return records < Self.groupRecords
        }
        guard !group.isEmpty else { return }
        statistics.largestGroup = max(statistics.largestGroup, group.count)
        do {
            try journal.append(
                group.map {
                    Journal.Batch(
                        gatewayBatchID: $0.batchID[...], records: $0.records, encoded: $0.encoded, header: $0.header,
                        slots: $0.slots)
                })
        } catch {
            // Nothing of the group is stored (the transaction rolled back): every batch of it is refused.
            let reason = (error as? StorageError)?.message ?? "\(error)"
            log.error(
                "journal could not store a group of batches; they are refused",
                ["batches": String(group.count), "records": String(records), "error": "\(error)"])
            statistics.unstoredBatches += group.count
            statistics.accepted -= records
            for index in group.indices { group[index].storeFailed(reason) }
            for batch in group { send(batch, on: socket) }
            return
        }
        // Committed: now, and only now, the acknowledgements, and the news to held feed requests.
        for batch in group { send(batch, on: socket) }
        feedServer?.itemsAdded()
    }

    /// Takes `records` from the gateway's bucket (by its key's name in the allow-list); the refusal's acknowledgement
    /// when it is over its limit. Without keys the name is nil and every plaintext gateway shares one bucket.
    private func chargeRate(_ records: Int, keyName: String?) -> Acknowledgement? {
        guard var limiter = rateLimiter else { return nil }
        let key = GatewayRateLimiter.key(forGateway: zap == nil ? nil : (keyName ?? "?"))
        let decision = limiter.admit(records, key: key, now: MonotonicClock.now())
        rateLimiter = limiter
        guard let retryAfterMs = decision.retryAfterMilliseconds else { return nil }
        return limiter.refusal(key: key, records: records, retryAfterMs: retryAfterMs)
    }

    private func record(_ batch: GatewayBatch) {
        statistics.batches += 1
        statistics.accepted += batch.acknowledgement.accepted
        if let refusal = batch.keyRefused {
            statistics.keyRefusedBatches += 1
            log.warning(
                "batch refused: gateway key no longer listed",
                [
                    "key": refusal.name, "batch": batch.batchText,
                    "reason": refusal.message,
                ])
            return
        }
        if batch.rateLimited {
            // A flooding gateway must not flood the log too: one line per interval, with the count.
            statistics.rateLimitedBatches += 1
            rateRefusedSinceLog += 1
            let now = MonotonicClock.now()
            if lastRateLog.map({ now - $0 >= Self.rateLogInterval }) ?? true {
                log.warning(
                    "batches refused for the gateway rate limit",
                    [
                        "batches": String(rateRefusedSinceLog),
                        "last": batch.acknowledgement.rejected.first?.reason ?? "",
                    ])
                lastRateLog = now
                rateRefusedSinceLog = 0
            }
            return
        }
        if let reason = batch.unreadable {
            statistics.unreadableBatches += 1
            log.warning("unreadable batch", ["batch": batch.batchText, "reason": reason])
            return
        }
        statistics.rejected += batch.acknowledgement.rejected.count
        statistics.batchSizes.observe(Double(batch.acknowledgement.accepted + batch.acknowledgement.rejected.count))
        for rejection in batch.acknowledgement.rejected { statistics.rejections.count(rejection) }
        if let first = batch.acknowledgement.rejected.first {
            log.info(
                "batch with rejected records",
                [
                    "batch": String(batch.batchText.prefix(64)),
                    "accepted": String(batch.acknowledgement.accepted),
                    "rejected": String(batch.acknowledgement.rejected.count),
                    "first": "\(first.index) \(first.field): \(first.reason)",
                ])
        }
    }

    private func send(_ batch: GatewayBatch, on socket: ZMQSocket) {
        // The frames go into one array kept for every acknowledgement, emptied (keeping its room) once sent.
        defer { replyFrames.removeAll(keepingCapacity: true) }
        batch.appendReply(to: &replyFrames)
        guard !replyFrames.isEmpty else { return }
        do {
            if try !socket.send(replyFrames, dontWait: true) {
                log.warning("gateway gone before its acknowledgement", ["batch": batch.batchText])
            }
        } catch {
            log.warning("acknowledgement not sent", ["batch": batch.batchText, "error": "\(error)"])
        }
    }

    private func enforceRetention() {
        guard let journal else { return }
        do {
            let outcome = try journal.enforceRetention()
            if outcome.expiredChunks + outcome.trimmedChunks > 0 {
                log.debug(
                    "retention", ["expired": String(outcome.expiredChunks), "trimmed": String(outcome.trimmedChunks)])
            }
        } catch {
            log.error("journal retention failed", ["error": "\(error)"])
        }
    }

    /// What /metrics shows of ingest (posted by `ServiceMetrics` from the loop).
    private func metricFamilies() -> [MetricFamily] {
        var families: [MetricFamily] = [
            .labelled(
                "roadsave_ingest_batches_total", .counter, "Gateway batches answered, by outcome.", label: "outcome",
                [
                    "acknowledged": statistics.batches - statistics.unreadableBatches - statistics.rateLimitedBatches
                        - statistics.unstoredBatches - statistics.keyRefusedBatches,
                    "unreadable": statistics.unreadableBatches, "rate_limited": statistics.rateLimitedBatches,
                    "unstored": statistics.unstoredBatches, "key_refused": statistics.keyRefusedBatches,
                ]),
            statistics.batchSizes.family("roadsave_ingest_batch_records", help: "Records per readable gateway batch."),
            .single(
                "roadsave_ingest_records_accepted_total", .counter, "Records stored in the journal and acknowledged.",
                statistics.accepted),
            statistics.rejections.family,
        ]
        if let journal {
            let stored = journal.statistics
            families += [
                .single(
                    "roadsave_ingest_journal_commits_total", .counter, "Journal transactions (one fsync each).",
                    stored.commits),
                .single(
                    "roadsave_ingest_journal_head_position", .gauge, "Position of the newest chunk in the journal.",
                    Double(journal.head)),
                .single(
                    "roadsave_ingest_journal_dropped_unread_records_total", .counter,
                    "Records deleted by --journal-max-bytes before detection read them.",
                    stored.droppedUnreadRecordsTotal),
                .single(
                    "roadsave_ingest_devices_freed_total", .counter, "Device slots freed after --device-idle-age.",
                    stored.freedDevices),
                .labelled(
                    "roadsave_ingest_journal_deleted_through_position", .gauge,
                    "Highest position retention has deleted, by shard (0: none): a detection shard starting from "
                        + "an earlier position has lost records.", label: "shard",
                    Dictionary(
                        uniqueKeysWithValues: journal.deletedThrough.enumerated().map {
                            (String($0.offset), Int($0.element))
                        })),
            ]
        }
        if let (oldest, bytes) = try? journal?.oldestChunkAndBytes() {
            families += [
                .single(
                    "roadsave_ingest_journal_bytes", .gauge, "Bytes of the journal's database in use.", Double(bytes)),
                .single(
                    "roadsave_ingest_journal_oldest_position", .gauge, "Position of the oldest chunk kept (0: empty).",
                    Double(oldest?.position ?? 0)),
                .single(
                    "roadsave_ingest_journal_oldest_age_seconds", .gauge,
                    "Age of the oldest chunk kept, from when it was stored (0: empty).",
                    oldest.map { max(0, Date().timeIntervalSince1970 - $0.receivedAt) } ?? 0),
            ]
        }
        return families
    }

    /// Why ingest cannot take batches yet (nothing when it can).
    private func notReady() -> [String] {
        var reasons: [String] = []
        if journal == nil { reasons.append("journal not open") }
        if !listening { reasons.append("sockets not bound") }
        return reasons
    }

    private func close() {
        guard let journal else { return }
        let summary = try? journal.summary()
        let stored = journal.statistics
        log.info(
            "stopping",
            [
                "batches": String(statistics.batches), "accepted": String(statistics.accepted),
                "rejected": String(statistics.rejected), "unreadable": String(statistics.unreadableBatches),
                "unstored": String(statistics.unstoredBatches),
                "rateLimited": String(statistics.rateLimitedBatches),
                "keyRefused": String(statistics.keyRefusedBatches),
                "freedDevices": String(stored.freedDevices), "commits": String(stored.commits),
                "largestGroup": String(statistics.largestGroup),
                "droppedUnread": String(stored.droppedUnreadRecordsTotal),
                "journalChunks": summary.map { String($0.chunks) } ?? "?",
                "journalBytes": summary.map { String($0.bytes) } ?? "?",
                "oldest": summary?.oldest.map(String.init) ?? "-", "head": String(journal.head),
            ])
        journal.close()
        self.journal = nil
        feedServer = nil
    }
}
