import DetectionEngine
import Feeds
import Foundation
import Metrics
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
    private let log: Log
    private let platform: any Platform
    private let reactor: Reactor
    /// Made once the store is open (it starts from the store's checkpoint); mutated in place (a copy of it would
    /// copy the fleet).
    private var core: DetectionCore!
    private var store: DetectionStore?
    private var journals: [JournalReader] = []
    private var outbox: FeedServer?
    private var control: ZMQSocket?
    /// The CurveZMQ authenticator of the control socket (operator keys), when the service has keys.
    private var zap: ZAPHandler?
    /// The apps' and users' strings of the journals' records, made once (`MessagePack.decodeRecords`).
    private let identifiers = IdentifierCache()
    /// Devices that left memory (`--device-memory-idle`), and those leaving with the checkpoint in flight.
    private var evicted = EvictedDevices()
    private var evictionsInFlight: (generation: Int, devices: [DeviceID])?
    /// A store that failed takes nothing more: what is left of a batch of actions is dropped.
    private var storeBroken = false
    /// /metrics, /healthz and /readyz, and the platform calls' latencies for them.
    private var metrics: ServiceMetrics?
    private var counters = DetectionMetrics()
    /// Trips in progress counts every device in memory: taken at most every `tripsCountInterval` seconds.
    private var tripsInProgress: (count: Int, at: Double)?
    static let tripsCountInterval = 5.0
    private weak var loop: ReactorLoop?

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
    }

    /// The clocks of an input now.
    private var time: DetectionTime {
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
        self.metrics?.start(on: loop) { [self] in (metricFamilies(now: loop.now), notReady(now: loop.now)) }
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

    // MARK: Inputs to the core

    private func journalReplied(_ index: Int, _ header: FeedReplyHeader, _ items: ArraySlice<[UInt8]>) {
        guard core != nil else { return }
        let chunks = decode(items)
        perform(core.journalReplied(index, JournalAnswer(header), chunks: chunks, at: time, evicted: &evicted))
    }

    /// A reply's chunks, decoded; what cannot be read is logged and skipped (it was validated when it was stored).
    private func decode(_ items: ArraySlice<[UInt8]>) -> [JournalChunkRecords] {
        var chunks: [JournalChunkRecords] = []
        chunks.reserveCapacity(items.count)
        for item in items {
            let chunk: JournalChunk
            let decoded: DecodedBatch
            do {
                chunk = try JournalChunk(item: item)
                decoded = try RecordBatch.decodeBatch(chunk.records, contentType: .msgpack, identifiers: identifiers)
            } catch {
                log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
                continue
            }
            var records: [SensorRecord] = []
            records.reserveCapacity(decoded.records.count)
            for (index, result) in decoded.records {
                switch result {
                case .success(let record): records.append(record)
                case .failure(let error):
                    log.error(
                        "invalid record in the journal: skipped",
                        [
                            "index": String(index), "field": error.field,
                            "reason": error.reason,
                        ])
                }
            }
            chunks.append(
                JournalChunkRecords(
                    records: records, gateway: chunk.header?.gateway, shard: chunk.shard,
                    watermark: chunk.header?.watermark))
        }
        return chunks
    }

    private func receiveCommands(_ socket: ZMQSocket) {
        socket.drain(limit: 1000, failed: { log.error("control socket failed", ["error": "\($0)"]) }) { frames in
            // [identity, (empty delimiter from REQ,) body]
            guard frames.count >= 2, let body = frames.last else { return true }
            // The key's entry in force now: one removed or replaced since the handshake is refused from its next
            // command. The audit names the key as the allow-list in force does; a key it refuses, as it was admitted.
            let peer = socket.lastPeer
            let entry = zap?.entry(for: peer, role: .operator)
            let key = (try? entry?.get())?.name ?? peer?.name
            let target = ControlTarget(frames: Array(frames.dropLast()), key: zap == nil ? nil : key ?? "?")
            let request: ControlRequest
            do throws(ControlRequest.Invalid) {
                if let command = try OperatorCommand.parse(body) {
                    operatorCommandArrived(command, target: target, key: entry)
                    return true
                }
                request = try ControlRequest(json: body)
            } catch {
                refuse(target, nil, code: "badRequest", message: error.message)
                return true
            }
            if let refusal = ControlAccess.refusal(of: request, key: entry) {
                refuse(target, request, code: refusal.code, message: refusal.message)
                return true
            }
            guard core != nil else { return true }
            let command = DetectionCore.ControlCommand(
                target: target, request: request,
                text: String(decoding: body, as: UTF8.self))
            perform(core.commandArrived(command, at: time, evicted: &evicted))
            return true
        }
    }

    /// An operator command (`OperatorCommand`): only for a key listed for every application.
    private func operatorCommandArrived(
        _ command: OperatorCommand, target: ControlTarget,
        key: Result<CurveAllowList.Entry, CurveKeyRefusal>?
    ) {
        if let refusal = ControlAccess.refusal(of: command, key: key) {
            log.write(
                .warning, "control command refused",
                pairs: [
                    ("key", target.key ?? "-"), ("command", command.rawValue), ("app", "*"), ("user", "*"),
                    ("result", refusal.code),
                ])
            send(target.frames, ControlReply.failure(refusal.code, refusal.message))
            return
        }
        guard core != nil else { return }
        perform(core.operatorCommandArrived(command, from: target, at: time))
    }

    /// A command refused before the core sees it (unreadable, or not this operator key's), with its audit line.
    private func refuse(_ target: ControlTarget, _ request: ControlRequest?, code: String, message: String) {
        log.write(
            .warning, "control command refused", pairs: DetectionCore.audit(request, key: target.key, result: code))
        send(target.frames, ControlReply.failure(code, message))
    }

    /// Runs a platform call off the reactor; its answer is given to the core back on the reactor.
    private func callPlatform(_ call: PlatformCall) {
        let platform = self.platform
        let kind: DetectionMetrics.PlatformCall = if case .evaluation = call { .evaluation } else { .settings }
        let bound = ReactorBound(self, on: reactor)
        Task { [reactor] in
            let started = MonotonicClock.now()
            let answer: PlatformAnswer =
                switch call {
                case .settings(let app): .settings(app: app, fetch: await platform.fetchSettings(applicationID: app))
                case .evaluation(let device, let candidate):
                    .verdict(
                        device: device, crashID: candidate.crashID, outcome: await platform.evaluation(of: candidate))
                case .commandSettings(let waiting, let app):
                    .commandSettings(waiting: waiting, fetch: await platform.fetchSettings(applicationID: app))
                }
            let seconds = MonotonicClock.now() - started
            reactor.post { _ in bound.value.platformAnswered(answer, kind: kind, seconds: seconds) }
        }
    }

    private func platformAnswered(_ answer: PlatformAnswer, kind: DetectionMetrics.PlatformCall, seconds: Double) {
        counters.called(kind, seconds: seconds, failed: answer.isFailure)
        guard core != nil else { return }
        perform(core.platformAnswered(answer, at: time, evicted: &evicted))
    }

    // MARK: The core's actions

    private func perform(_ actions: [DetectionCoreAction]) {
        for action in actions {
            // A store that failed: only the log lines of what is left go out.
            if storeBroken, !action.isLog { continue }
            switch action {
            case .fetch(let index, let fetch):
                if journals.indices.contains(index) { journals[index].fetch(fetch) }
            case .callPlatform(let call):
                callPlatform(call)
            case .commit(let commit):
                store(commit)
            case .reply(let target, let bytes):
                send(target.frames, bytes)
            case .writeCheckpoint(let order):
                write(order)
            case .forgetInputs(let input):
                do {
                    try store?.forgetInputs(through: input)
                    try store?.trimUnapplied()
                } catch {
                    // They are skipped at a restart (the checkpoint holds them) and deleted with the next checkpoint.
                    log.warning("inputs held by the checkpoint not deleted", ["error": "\(error)"])
                }
            case .journalGap(let gap):
                log.write(.error, JournalGap.message, pairs: gap.logFields)
                do {
                    try store?.saveJournalGap(gap, at: time.wall)
                } catch {
                    // What is left of the actions: only their log lines (`storeBroken`).
                    failStore(error)
                    continue
                }
            case .journalGapsAcknowledged(let gaps):
                do {
                    try store?.acknowledgeJournalGaps(gaps, at: time.wall)
                } catch {
                    // What is left of the actions: only their log lines (`storeBroken`).
                    failStore(error)
                    continue
                }
                log.info("journal gaps acknowledged", ["gaps": String(gaps.count)])
            case .log(let level, let message, let fields):
                log.write(level, message, pairs: fields)
            case .stop:
                logStop()
                loop?.stop()
            }
        }
    }

    /// Stores a commit, then lets its replies and events go. A commit that cannot be stored stops the service
    /// rather than let out events or replies that a restart could not give again.
    private func store(_ commit: DetectionCommit) {
        guard let store else { return }
        do {
            let last = try store.commit(
                inputs: commit.inputs, events: commit.events, unapplied: commit.unapplied,
                at: commit.at)
            core.committed(lastInput: last)
        } catch {
            failStore(error)
            return
        }
        for (target, bytes) in commit.replies { send(target.frames, bytes) }
        if !commit.events.isEmpty { outbox?.itemsAdded() }
    }

    /// The store failed: nothing more is stored or let out, and the service stops (a restart re-runs from what is
    /// stored).
    private func failStore(_ error: any Error) {
        storeBroken = true
        store = nil
        perform(core.storeFailed("\(error)"))
        reactor.stop()
    }

    private func send(_ prefix: [[UInt8]], _ bytes: [UInt8]) {
        do {
            if try control?.send(prefix + [bytes], dontWait: true) == false {
                log.warning("control client gone before its reply")
            }
        } catch {
            log.warning("control reply not sent", ["error": "\(error)"])
        }
    }

    private func logStop() {
        guard core != nil else { return }
        log.info(
            "stopping",
            [
                "records": String(core.counts.recordsRead),
                "events": String(core.counts.eventsByKind.values.reduce(0, +)),
                "devices": String(core.fleet.deviceCount), "evictions": String(evicted.evictions),
                "restores": String(evicted.restores),
                "devicesTickedAhead": String(core.counts.devicesTickedAhead),
                "outbox": String((try? store?.outboxCount()) ?? -1),
            ])
    }

    // MARK: Checkpoints

    /// Writes the core's checkpoint: encoded and written by the checkpoint writer (`CheckpointWriter`, a thread and
    /// a connection of its own) while this thread goes on, or at once for a stop's last one. The devices leaving
    /// memory are kept here until it is written (and given back from here if named meanwhile).
    private func write(_ order: CheckpointOrder) {
        guard let store else { return }
        evicted.left(order.leaving, storedAlready: order.leavingUnchanged)
        let leavingAll = evicted.unsaved.values.sorted { $0.device < $1.device }
        evictionsInFlight = (order.generation, leavingAll.map(\.device))
        // A device back in memory since it left is written as it is now (with `changed`), not as it left. Those whose
        // stored row is current are only marked out of memory; the others are encoded and written.
        let leaving = leavingAll.filter { !core.fleet.isResident($0.device) }
        let leavingNow = leaving.filter { !evicted.storedAlready.contains($0.device) }
        let markedNow = leaving.filter { evicted.storedAlready.contains($0.device) }
        let (shared, states, input, positions, time) = (
            order.shared, order.changed, order.input, order.positions, order.at
        )
        let generation = order.generation
        store.checkpoints.started(generation)
        let rows = store.rows
        let make: @Sendable () throws -> CheckpointWriter.Checkpoint = {
            let encoded = try Self.encode(
                shared, states: states, leaving: leavingNow, markedOnly: markedNow, rows: rows)
            return CheckpointWriter.Checkpoint(
                input: input, shared: encoded.shared, changedDevices: encoded.devices,
                evictedDevices: encoded.evicted, markedEvicted: encoded.markedOnly,
                positions: positions, time: time)
        }
        // Counts, not the lists: `done` below must not keep the states alive (`make` lets go of them once run).
        let (changedCount, encodedCount, markedCount) = (states.count, leavingNow.count, markedNow.count)
        let bound = ReactorBound(self, on: reactor)
        let log = log
        let done: @Sendable (Result<CheckpointWriter.Timing, any Error>?) -> Void = { result in
            bound.value.checkpointEnded(generation: generation, result)
            if case .success(let timing) = result {
                // What sizes a checkpoint (and detection's memory between two), for tuning at scale.
                log.debug(
                    "checkpoint",
                    [
                        "resident": String(bound.value.core?.fleet.residentCount ?? 0),
                        "changed": String(changedCount), "leavingEncoded": String(encodedCount),
                        "leavingMarked": String(markedCount),
                        "encodeSeconds": String(format: "%.3f", timing.encoding),
                        "writeSeconds": String(format: "%.3f", timing.writing),
                    ])
            }
        }
        guard !order.wait else {
            done(store.checkpoints.writeAndWait(generation, make))
            return
        }
        store.checkpoints.write(generation, make) { [reactor] result in
            reactor.post { _ in done(result) }
        }
    }

    private func checkpointEnded(generation: Int, _ result: Result<CheckpointWriter.Timing, any Error>?) {
        let outcome: CheckpointOutcome
        switch result {
        case .success(let timing)?: outcome = .written(cost: timing.encoding + timing.writing)
        case .failure(let error)?: outcome = .failed("\(error)")
        case nil: outcome = .superseded
        }
        if case .written = outcome, let (written, leaving) = evictionsInFlight, written == generation {
            evicted.written(leaving)
            if leaving.count >= 1000 { returnFreedMemorySoon() }
        }
        if evictionsInFlight?.generation == generation { evictionsInFlight = nil }
        guard core != nil else { return }
        perform(core.checkpointWritten(generation: generation, outcome: outcome, at: time))
    }

    /// The states of a large eviction are freed only once the checkpoint writer's closures have let go of them: the
    /// heap is trimmed a moment after the write is taken into account. Trimmed at once, nothing was free yet, and the
    /// heap kept the pages of every state that left until the next large eviction (664 MiB settled with 327 devices
    /// in memory, 400,000 known).
    private func returnFreedMemorySoon() {
        _ = loop?.schedule(after: 0.2) { EvictedDevices.returnFreedMemory() }
    }

    typealias Encoded = (
        shared: [UInt8], devices: [(DeviceID, [UInt8])], evicted: [(DeviceID, [UInt8])],
        markedOnly: [DetectionStore.MarkedEviction]
    )

    /// Encodes a checkpoint (off the reactor thread). `markedOnly`: devices leaving memory whose stored row is
    /// current; each carries a way to encode its state, for a row that turns out to be missing.
    private static func encode(
        _ shared: FleetSharedState, states: [FleetDeviceState], leaving: [EvictedState],
        markedOnly: [EvictedState], rows: DeviceRowCodec
    ) throws -> Encoded {
        // One encoder for the whole checkpoint: the devices of an application repeat its settings.
        let encoder = StreamingJSONEncoder(reusing: DetectionSettings.self)
        // Those leaving first: each state (~4 KB) goes as soon as its row (~200 bytes) is made.
        let evictedStates = try leaving.map { evicted in
            (evicted.device, try evicted.encodedRow { rows.compress(try checkpointJSON($0, encoder)) })
        }
        let devices = try states.map { ($0.device, rows.compress(try checkpointJSON($0, encoder))) }
        let marked = markedOnly.map { evicted in
            DetectionStore.MarkedEviction(device: evicted.device) {
                try evicted.encodedRow { rows.compress(try checkpointJSON($0)) }
            }
        }
        return (try checkpointJSON(shared, encoder), devices, evictedStates, marked)
    }

    /// A checkpoint row's JSON: written directly (`StreamingJSONEncoder`, about a quarter of JSONEncoder's time), or
    /// by JSONEncoder for a value that encoder does not follow. Members in the order the types encode them (stable;
    /// JSONEncoder's unsorted order was its tables' hash order), not sorted: sorting took about 4 % of detection's
    /// samples while many devices left memory, and JSONDecoder does not need it.
    static func checkpointJSON<Value: Encodable>(
        _ value: Value,
        _ encoder: StreamingJSONEncoder = StreamingJSONEncoder()
    ) throws -> [UInt8] {
        if let bytes = try? encoder.encode(value) { return bytes }
        return Array(try JSONEncoder().encode(value))
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
            + FeedLinkMetrics.families(service: "detection", links: journals.map { ($0.endpoint, $0.linkStatistics) })
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
            silentJournalGrace: silentJournalGrace, dataDirectory: dataDirectory, shard: shardDescription)
    }
}
