import DetectionEngine
import Feeds
import Foundation
import Logging
import Metrics
import RecordCodecs
import RoadSaveModel
import ServiceKit
import Storage
import SystemKit
import Wire
import ZeroMQ

/// What detection does on its reactor thread (`DetectionService` is the shell that runs it): the core, the store,
/// the journals' readers, the control and outbox sockets, the platform calls' answers, the checkpoints, the figures.
/// Not `Sendable`: it is reached only through the service's `ReactorBound`, or from the reactor thread's own
/// handlers and timers; answers from other threads come back through `Reactor.post` and a `ReactorBound`.
final class DetectionServing {
    let configuration: DetectionConfiguration
    // Internal, not private (but `metrics`, `tripsInProgress`): the DetectionServing+*.swift extensions use them.
    let log: Log
    let platform: any Platform
    let reactor: Reactor
    /// Made once the store is open (it starts from the store's checkpoint); mutated in place (a copy of it would
    /// copy the fleet).
    var core: DetectionCore!
    var store: DetectionStore?
    var journals: [JournalReader] = []
    var outbox: FeedServer?
    var control: ZMQSocket?
    /// The CurveZMQ authenticator of the control socket (operator keys), when the service has keys.
    var zap: ZAPHandler?
    /// Journals' replies decoded for the core.
    let replyDecoder: JournalReplyDecoder
    /// Devices that left memory (`--device-memory-idle`), and those leaving with the checkpoint in flight.
    var evicted = EvictedDevices()
    var evictionsInFlight: (generation: Int, devices: [DeviceID])?
    /// A store that failed takes nothing more: what is left of a batch of actions is dropped.
    var storeBroken = false
    /// /metrics, /healthz and /readyz, and the platform calls' latencies for them.
    private var metrics: ServiceMetrics?
    var counters = DetectionMetrics()
    /// Trips in progress counts every device in memory: taken at most every `tripsCountInterval` seconds.
    private var tripsInProgress: (count: Int, at: Double)?
    static let tripsCountInterval = 5.0
    weak var loop: ReactorLoop?

    /// The largest frame accepted on the control socket (ZMQ_MAXMSGSIZE): a command is a small JSON object; a client
    /// sending a larger frame is disconnected unanswered.
    static let maximumCommandBytes: Int64 = 64 << 10
    /// How often the core is told that time passed.
    static let tickInterval = 0.1

    init(configuration: DetectionConfiguration, log: Log, platform: any Platform, reactor: Reactor) {
        self.configuration = configuration
        self.log = log
        self.platform = platform
        self.reactor = reactor
        replyDecoder = JournalReplyDecoder(log: log)
    }

    /// The clocks of an input now.
    var time: DetectionTime {
        DetectionTime(wall: Date().timeIntervalSince1970, monotonic: loop?.now ?? MonotonicClock.now())
    }

    /// The reactor's setup: opens the store, binds the sockets, connects the journals, restores the core from the
    /// store and starts it.
    func setUp(_ loop: ReactorLoop, metrics: ServiceMetrics) throws {
        self.metrics = metrics
        self.loop = loop
        let store = try DetectionStore(
            directory: try DataDirectory.prepare(configuration.dataDirectory),
            shard: configuration.shardDescription)
        self.store = store
        // A checkpoint being written is finished before the data directory is given up (the store is closed
        // as the loop ends, on the thread that used it; not if it failed, `failStore`).
        loop.onStop { [unowned self] in self.store?.close() }
        let control = try loop.socket(.router)
        // With keys, the ZAP handler answers for operators; SIGHUP re-reads its allow-list.
        try ServiceZAP.secure(
            control, role: .operator, keys: configuration.curve, handler: &zap, loop: loop,
            reactor: reactor, log: log, clients: "control clients",
            fields: ["control": configuration.controlEndpoint])
        // The outbox feed is for the notifier only.
        let outbox = try FeedServer.bound(
            to: configuration.eventsEndpoint, loop: loop, source: store, zap: zap,
            secretKey: configuration.curve?.secretKey, sendTimeoutMilliseconds: 1000, log: log)
        self.outbox = outbox
        try control.setSendTimeout(milliseconds: 1000)
        try control.setMaximumMessageSize(Self.maximumCommandBytes)
        try OutsideSockets.watch(control, name: "control", loop: loop, log: log)
        try control.bind(configuration.controlEndpoint)
        self.control = control
        loop.onReadable(control) { [self] socket in receiveCommands(socket) }
        for (index, endpoint) in configuration.recordsEndpoints.enumerated() {
            let reader = try JournalReader(
                loop: loop, endpoint: endpoint, consumer: configuration.consumerName,
                shard: configuration.shard, curve: configuration.recordsCurve?[index],
                log: log
            ) { [self] header, items in
                journalReplied(index, header, items)
            }
            journals.append(reader)
        }
        self.core = try restore(from: store)
        loop.every(Self.tickInterval) { [self] in perform(core.tick(at: time, evicted: &evicted)) }
        log.info(
            "running",
            [
                "records": configuration.recordsEndpoints.joined(separator: ","),
                "control": control.lastEndpoint, "events": outbox.endpoint,
                "dataDir": configuration.dataDirectory,
                "platform": configuration.platformURL?.absoluteString ?? "embedded",
                "autoMonitor": String(configuration.autoMonitor),
                "recovering": String(core.recoveryQueueCount),
            ])
        let actions = core.start(at: time, evicted: &evicted)
        // Posting starts once the store is loaded: until then /healthz says "starting", so a long load of many
        // devices is not taken for a stuck loop.
        self.metrics?.start(on: loop, service: "detection") { [self] in
            (metricFamilies(now: loop.now), notReady(now: loop.now))
        }
        perform(actions)
    }

    /// The graceful stop's start (see `DetectionService.stop()`).
    func stop(_ loop: ReactorLoop) {
        for journal in journals { journal.close() }
        journals.removeAll()
        guard core != nil else {
            loop.stop()
            return
        }
        perform(core.stopRequested(at: time))
    }

    // MARK: Start

    /// Loads the last checkpoint and the inputs stored after it: the core that re-runs them.
    private func restore(from store: DetectionStore) throws -> DetectionCore {
        let decoder = JSONDecoder()
        var fleet = DeviceFleet(options: configuration.fleetOptions)
        var checkpointInput: Int64 = 0
        var positions: [String: UInt64] = [:]
        if let checkpoint = try store.loadCheckpoint() {
            let shared = try decoder.decode(FleetSharedState.self, from: Data(checkpoint.shared))
            var devices: [(DeviceID, FleetDeviceState)] = []
            devices.reserveCapacity(checkpoint.devices.count)
            for (id, state) in checkpoint.devices {
                devices.append((id, try decoder.decode(FleetDeviceState.self, from: Data(state))))
            }
            fleet = DeviceFleet(options: configuration.fleetOptions, shared: shared, devices: devices)
            _ = fleet.takeChangedDevices()
            checkpointInput = checkpoint.input
            positions = checkpoint.positions
            log.info("checkpoint loaded", ["devices": String(devices.count), "input": String(checkpoint.input)])
        }
        try evicted.load(from: store)
        let inputs = try store.inputs(after: checkpointInput)
        let gaps = try store.journalGaps()
        // Said again at every start until acknowledged: a restart must not make a loss quiet.
        for gap in gaps where !gap.acknowledged {
            log.write(.error, "journal gap not acknowledged yet: " + JournalGap.message, pairs: gap.logFields)
        }
        return DetectionCore(
            options: configuration.coreOptions, fleet: fleet, checkpointInput: checkpointInput,
            checkpointPositions: positions, recovery: inputs.map(\.input),
            lastInput: try store.lastInput(), journalGaps: gaps,
            journalEndpoints: configuration.recordsEndpoints, at: time)
    }

    // MARK: Metrics

    /// What /metrics shows of detection (posted by `ServiceMetrics` from the loop).
    private func metricFamilies(now: Double) -> [MetricFamily] {
        guard core != nil else { return [] }
        if tripsInProgress.map({ now - $0.at >= Self.tripsCountInterval }) ?? true {
            tripsInProgress = (core.tripsInProgress, now)
        }
        let gauges = DetectionMetrics.Gauges(
            positionsBehind: core.journals.reduce(0) { $0 + ($1.head > $1.position ? $1.head - $1.position : 0) },
            lagSeconds: core.lagSeconds(now: now),
            devicesInMemory: core.fleet.deviceCount, devicesOutOfMemory: evicted.outOfMemory,
            tripsInProgress: tripsInProgress?.count ?? 0, outbox: try? store?.outboxCount(),
            platformCallsInFlight: core.platformCallsInFlight, checkpoints: core.counts.checkpoints,
            streams: core.fleet.streamCount, journalGapsUnacknowledged: core.unacknowledgedGaps.count)
        return counters.families(fleet: core.fleet.statistics, counts: core.counts, gauges: gauges)
            + FeedLinkMetrics.families(
                service: "detection",
                links: zip(journals, core.journals).map { reader, link in
                    FeedLinkMetrics.Link(
                        endpoint: reader.endpoint, statistics: reader.linkStatistics,
                        unanswered: link.hearing.unanswered(at: now))
                })
    }

    /// Why detection is not ready (nothing when it is): its store and sockets, re-running its inputs after a
    /// restart, the journals read to their heads within `DetectionMetrics.readyLag` seconds, and no journal gap
    /// an operator has not acknowledged (the shard goes on reading: readiness is how the loss stays loud).
    private func notReady(now: Double) -> [String] {
        var reasons: [String] = []
        if store == nil { reasons.append("store not open") }
        if control == nil || outbox == nil { reasons.append("sockets not bound") }
        guard core != nil else { return reasons + ["starting"] }
        reasons += core.unacknowledgedGaps.map(\.readinessReason)
        reasons += core.silentJournals(now: now).map {
            "no answer from the journal at \($0.endpoint) for \(Int($0.unanswered)) s"
        }
        switch core.phase {
        case .recovering: reasons.append("re-running the inputs stored after the last checkpoint")
        case .stopping, .stopped: reasons.append("stopping")
        case .live:
            if let lag = core.lagSeconds(now: now) {
                if lag > DetectionMetrics.readyLag { reasons.append("behind the journals by \(Int(lag)) s") }
            } else {
                reasons.append("not caught up with the journals since the start")
            }
        }
        return reasons
    }
}

extension DetectionConfiguration {
    /// The core's options from these settings.
    var coreOptions: DetectionCore.Options {
        DetectionCore.Options(
            fleet: fleetOptions, checkpointInterval: checkpointInterval, deviceMemoryIdle: deviceMemoryIdle,
            silentJournalGrace: silentJournalGrace, journalSilenceLimit: journalSilenceLimit,
            journalSilentAfter: JournalReader.waitSeconds + linkTimings.heartbeatTimeout,
            dataDirectory: dataDirectory, shard: shardDescription)
    }
}
