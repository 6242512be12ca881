import DetectionEngine
import Feeds
import Foundation
import Metrics
import RoadSaveModel
import ServiceKit
import Storage
import Wire
import ZeroMQ

/// detection: reads sensor-ingest's journals at its own pace, runs the `DeviceFleet` (a session per device, records
/// in event-time order), answers control commands, and keeps every event in its outbox until the notifier has
/// stored it. The sockets, the fleet and the store live on one reactor thread; platform calls run as async tasks and
/// post their answers back, so a slow platform holds up only the device waiting for it.
///
/// Durability: every input the fleet takes that is not in a journal (platform answers, control commands, clock
/// ticks) and every range of journal records is written to the store, with the events they gave, before those
/// events can leave. A checkpoint of the whole fleet is taken every few seconds. A restart loads the checkpoint and
/// re-runs the inputs after it: the fleet is deterministic and event IDs derive from content, so the re-run gives the
/// same events with the same IDs, and the notifier drops those it already has.
public final class DetectionService: @unchecked Sendable {
    // @unchecked: every mutable property below is used only on the reactor thread.
    public let configuration: DetectionConfiguration
    private let log: Log
    private let platform: any Platform
    private let context: ZMQContext
    private let reactor: Reactor
    private var fleet: DeviceFleet
    private var store: DetectionStore?
    private var journals: [JournalReader] = []
    private var outbox: FeedServer?
    private var control: ZMQSocket?
    private var phase = Phase.starting
    /// Inputs and events of the work in hand, stored together by `commit()`.
    private var pendingInputs: [DetectionInput] = []
    /// The apps' and users' strings of the journals' records, made once (`MessagePack.decodeRecords`).
    private let identifiers = IdentifierCache()
    private var pendingEvents: [RoadSaveEvent] = []
    /// Control replies that may leave once the command is stored.
    private var pendingReplies: [(frames: [[UInt8]], bytes: [UInt8])] = []
    /// The last input stored, and the one the last checkpoint reflects.
    private var lastInput: Int64 = 0
    private var checkpointInput: Int64 = 0
    /// Journal positions of the last checkpoint, by journal ID (kept for journals not connected now).
    private var checkpointPositions: [String: UInt64] = [:]
    private var platformCallsInFlight = 0
    /// Control commands that came before the service went live ([routing frames], body).
    private var commandsWhileStarting: [([[UInt8]], [UInt8], CurvePeer?)] = []
    static let maximumCommandsWhileStarting = 1000
    /// Control commands waiting for the settings fetch they need.
    private var waitingCommands: [Int: (request: ControlRequest, text: String, prefix: [[UInt8]], key: String?)] = [:]
    /// The CurveZMQ authenticator of the control socket (operator keys), when the service has keys.
    private var zap: ZAPHandler?
    private var nextCommandID = 0
    /// A checkpoint is being encoded off the reactor, with the devices it took from the fleet's changed set.
    private var checkpointInFlight = false
    /// Checkpoints started (a later one supersedes one still being encoded), and the devices of the one in flight.
    private var checkpointGeneration = 0
    private var devicesInFlight: [DeviceID] = []
    /// Journal positions read when the stop closed the readers (the last checkpoint's positions).
    private var positionsAtStop: [String: UInt64] = [:]
    /// Devices changed before a checkpoint that could not be written: written with the next one.
    private var unsavedDevices: [DeviceID] = []
    /// Devices that left memory (`--device-memory-idle`), and those leaving with the checkpoint in flight.
    private var evicted = EvictedDevices()
    private var evictionsInFlight: [DeviceID] = []
    private var statistics = Statistics()
    /// When the service started (monotonic), and whether it has said it caught up with the journals since.
    private var startedAt = 0.0
    private var reportedCaughtUp = false
    /// /metrics, /healthz and /readyz, and what detection counts for them.
    private var metrics: ServiceMetrics?
    private var counters = DetectionMetrics()
    /// Trips in progress counts every device in memory: taken at most every `tripsCountInterval` seconds.
    private var tripsInProgress: (count: Int, at: Double)?
    static let tripsCountInterval = 5.0

    enum Phase {
        case starting
        /// Re-running the inputs stored after the checkpoint; `waiting` while the records of the first are fetched.
        case recovering(queue: [DetectionInput], waiting: Bool)
        case live
        case stopping
    }

    struct Statistics {
        var recordsRead = 0
        var checkpoints = 0
        var recoveredInputs = 0
        /// Devices ticked while a journal was behind, their records all read (`tickDevicesRead`).
        var devicesTickedAhead = 0
    }

    /// The largest frame accepted on the control socket (ZMQ_MAXMSGSIZE): a command is a small JSON object; a client
    /// sending a larger frame is disconnected unanswered.
    static let maximumCommandBytes: Int64 = 64 << 10
    /// A checkpoint that took `cost` seconds (encoding and writing) is followed by the next no sooner than
    /// `cost × checkpointCostShare` after it started, whatever --checkpoint-interval says (see `checkpointSpacing`).
    static let checkpointCostShare = 20.0
    private var nextCheckpointAllowed = 0.0
    /// Devices in memory after the last checkpoint's evictions (see `checkpointDue`).
    private var residentAtLastCheckpoint = 0
    /// Most inputs kept unstored while they give nothing to send, and longest they wait (see `commit`).
    static let deferredInputs = 256
    static let deferredCommitDelay = 0.05
    /// The commit of inputs that wait (`commit`), and the loop it runs on.
    private var deferredCommit: TimerID?
    private weak var loop: ReactorLoop?
    /// Longest a graceful stop waits for platform calls in flight.
    static let stopGrace = 10.0
    /// A journal answers at least every `JournalReader.waitMilliseconds` while detection is there to ask: one that
    /// has not answered for this long is not being heard (ingest down, or the link), and that time is not the
    /// devices' silence.
    static let journalHeardWithin = 1.5

    /// `platform` replaces the one the configuration describes (tests use a scripted one).
    public init(configuration: DetectionConfiguration, platform: (any Platform)? = nil) throws {
        self.configuration = configuration
        log = Log(category: "detection", minimumLevel: configuration.logLevel)
        self.platform = try platform ?? configuration.makePlatform()
        fleet = DeviceFleet(options: configuration.fleetOptions)
        context = try ZMQContext()
        reactor = Reactor(name: "detection", context: context)
    }

    public func run() throws {
        let metrics = try ServiceMetrics(endpoint: configuration.metricsEndpoint, log: log)
        self.metrics = metrics
        defer { metrics.stop() }
        reactor.start { [self] loop in
            self.loop = loop
            startedAt = loop.now
            let store = try DetectionStore(directory: try DataDirectory.prepare(configuration.dataDirectory),
                                           shard: configuration.shardDescription)
            self.store = store
            let recovery = try restore(from: store)
            let control = try loop.socket(.router)
            // With keys, the ZAP handler answers for operators; SIGHUP re-reads its allow-list.
            try ServiceZAP.secure(control, role: .operator, keys: configuration.curve, handler: &zap, loop: loop,
                                  reactor: reactor, log: log, clients: "control clients",
                                  fields: ["control": configuration.controlEndpoint])
            let outboxSocket = try loop.socket(.router)
            // The outbox feed is for the notifier only: with keys, a CURVE server for service keys.
            if let zap, let curve = configuration.curve { try zap.secure(outboxSocket, role: .service, secretKey: curve.secretKey) }
            try outboxSocket.setSendTimeout(milliseconds: 1000)
            try outboxSocket.setMaximumMessageSize(FeedServer.maximumRequestBytes)
            try outboxSocket.bind(configuration.eventsEndpoint)
            outbox = FeedServer(socket: outboxSocket, loop: loop, source: store, log: log, zap: zap)
            try control.setSendTimeout(milliseconds: 1000)
            try control.setMaximumMessageSize(Self.maximumCommandBytes)
            try OutsideSockets.watch(control, name: "control", loop: loop, log: log)
            try control.bind(configuration.controlEndpoint)
            self.control = control
            loop.onReadable(control) { [self] socket in receiveCommands(socket, loop: loop) }
            for (index, endpoint) in configuration.recordsEndpoints.enumerated() {
                let reader = try JournalReader(loop: loop, endpoint: endpoint, consumer: configuration.consumerName,
                                               shard: configuration.shard, curve: configuration.recordsCurve?[index],
                                               log: log) { [self] reader, header, items in
                    journalReplied(reader, header, items, loop: loop)
                }
                journals.append(reader)
                reader.greet()
            }
            phase = .recovering(queue: recovery, waiting: false)
            loop.every(0.1) { [self] in tick(loop: loop) }
            loop.every(configuration.checkpointInterval) { [self] in checkpoint() }
            log.info("running", ["records": configuration.recordsEndpoints.joined(separator: ","),
                                 "control": control.lastEndpoint, "events": outboxSocket.lastEndpoint,
                                 "dataDir": configuration.dataDirectory,
                                 "platform": configuration.platformURL?.absoluteString ?? "embedded",
                                 "autoMonitor": String(configuration.autoMonitor),
                                 "recovering": String(recovery.count)])
            // Posting starts once the store is loaded: until then /healthz says "starting", so a long load of many
            // devices is not taken for a stuck loop.
            self.metrics?.start(on: loop) { [self] in (metricFamilies(now: loop.now), notReady(now: loop.now)) }
            continueRecovery(loop: loop)
        }
        let failure = reactor.wait()
        // A checkpoint being written is finished before the data directory is given up.
        store?.close()
        // Returns only once libzmq has closed the sockets: a listener closed later would unlink the ipc file a new
        // instance bound meanwhile.
        context.terminate()
        if let failure { throw failure }
    }

    /// Graceful stop: no more records are read, platform calls in flight get up to `stopGrace` seconds and their
    /// answers are stored, a last checkpoint is taken, then the sockets close. Nothing buffered is lost: reorder
    /// buffers are part of the checkpoint.
    public func stop() {
        reactor.post { [self] loop in
            if case .stopping = phase { return }
            // Only a live fleet is checkpointed: one stopped while re-running its inputs holds part of them, and the
            // inputs not re-run yet must stay in the store.
            let wasLive = if case .live = phase { true } else { false }
            phase = .stopping
            for (prefix, _, _) in commandsWhileStarting {
                send(prefix, ControlReply.failure("stopping", "the detection service is shutting down"))
            }
            commandsWhileStarting.removeAll()
            for journal in journals {
                if let feed = journal.feed { positionsAtStop[feed] = journal.position }
                journal.close()
            }
            journals.removeAll()
            let deadline = loop.now + Self.stopGrace
            func finishWhenIdle() {
                // A periodic checkpoint being encoded took its devices from the changed set: it is waited for too.
                if (platformCallsInFlight == 0 && !checkpointInFlight) || loop.now >= deadline {
                    if platformCallsInFlight > 0 {
                        log.warning("stopping with platform calls unanswered (asked again at the next start)",
                                    ["calls": String(platformCallsInFlight)])
                    }
                    if checkpointInFlight {
                        // Still encoding: superseded by this one, which takes its devices.
                        unsavedDevices += devicesInFlight
                        checkpointInFlight = false
                    }
                    if wasLive { checkpoint(now: true) }
                    log.info("stopping", ["records": String(statistics.recordsRead), "events": String(counters.eventsByKind.values.reduce(0, +)),
                                          "devices": String(fleet.deviceCount), "evictions": String(evicted.evictions),
                                          "restores": String(evicted.restores),
                                          "devicesTickedAhead": String(statistics.devicesTickedAhead),
                                          "outbox": String((try? store?.outboxCount()) ?? -1)])
                    loop.stop()
                } else {
                    loop.schedule(after: 0.05) { finishWhenIdle() }
                }
            }
            finishWhenIdle()
        }
    }

    /// For tests of recovery: stops the loop as a crash would leave things, without the graceful stop's wait for
    /// platform calls or its last checkpoint (what is stored stays; work posted to the loop already still runs).
    func abandonForTest() {
        reactor.stop()
    }

    // MARK: Start and recovery

    /// Loads the last checkpoint and returns the inputs stored after it, to re-run.
    private func restore(from store: DetectionStore) throws -> [DetectionInput] {
        let decoder = JSONDecoder()
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
            checkpointPositions = checkpoint.positions
            log.info("checkpoint loaded", ["devices": String(devices.count), "input": String(checkpoint.input)])
        }
        try evicted.load(from: store)
        let inputs = try store.inputs(after: checkpointInput)
        lastInput = try store.lastInput()
        return inputs.map(\.input)
    }

    /// Re-runs stored inputs one by one; records are fetched again from their journal by exact range. When the
    /// queue is empty the service goes live: reading journals from where the re-run ended, and asking the platform
    /// again for whatever the fleet still waits for.
    private func continueRecovery(loop: ReactorLoop) {
        guard case .recovering(var queue, let waiting) = phase, !waiting else { return }
        while let input = queue.first {
            if case let .records(feed, after, to, _) = input {
                // Records are asked of the journal that holds them: wait until every journal has named itself.
                guard journals.allSatisfy({ $0.feed != nil }) else {
                    phase = .recovering(queue: queue, waiting: false)
                    return
                }
                guard let reader = journals.first(where: { $0.feed == feed }) else {
                    log.error("records of a journal no longer configured cannot be re-read: skipped",
                              ["journal": feed, "after": String(after), "to": String(to)])
                    queue.removeFirst()
                    continue
                }
                phase = .recovering(queue: queue, waiting: true)
                reader.fetchRange(after: after, through: to)
                return
            }
            queue.removeFirst()
            statistics.recoveredInputs += 1
            apply(input, loop: loop)
        }
        commitEvents()
        phase = .live
        resumeClock("started")
        log.info("live", ["recoveredInputs": String(statistics.recoveredInputs), "devices": String(fleet.deviceCount),
                          "seconds": String(format: "%.3f", loop.now - startedAt)])
        perform(fleet.pendingPlatformCalls, loop: loop)
        // A journal still to name itself is read once it has (its first reply).
        for journal in journals where journal.feed != nil { journal.fetchNext() }
        let held = commandsWhileStarting
        commandsWhileStarting.removeAll()
        for (prefix, body, peer) in held { handleCommand(prefix: prefix, body: body, peer: peer, loop: loop) }
    }

    // MARK: Journals

    private func journalReplied(_ reader: JournalReader, _ header: FeedReplyHeader, _ items: ArraySlice<[UInt8]>,
                                loop: ReactorLoop) {
        if let error = header.error {
            log.warning("journal refused a request", ["endpoint": reader.endpoint, "error": error])
            loop.schedule(after: 1) { [self] in
                if case .stopping = phase { return }
                if reader.feed == nil { reader.greet() } else { resume(reader, loop: loop) }
            }
            return
        }
        guard reader.feed == header.feed else {
            // First contact (or the endpoint now serves another journal): continue from what the checkpoint says.
            if let previous = reader.feed {
                log.warning("the journal at an endpoint changed", ["endpoint": reader.endpoint, "was": previous, "now": header.feed])
            }
            let position = positionAfterRecovery(of: header.feed)
            reader.adopt(feed: header.feed, position: position, checkpointed: checkpointPositions[header.feed] ?? 0)
            if case .recovering = phase {
                continueRecovery(loop: loop)
            } else {
                resume(reader, loop: loop)
            }
            return
        }
        if case .recovering(var queue, true) = phase, case let .records(feed, _, to, now) = queue.first, feed == header.feed {
            queue.removeFirst()
            phase = .recovering(queue: queue, waiting: false)
            statistics.recoveredInputs += 1
            applyRecords(items, now: now, loop: loop)
            reader.position = to
            continueRecovery(loop: loop)
            return
        }
        guard case .live = phase else { return }
        reader.noteReply(header, items: items.count)
        if reader.unansweredBeforeReply > Self.journalHeardWithin {
            let seconds = String(format: "%.1f", reader.unansweredBeforeReply)
            resumeClock("the journal at \(reader.endpoint) answered after \(seconds) s")
        }
        if journalsCaughtUp { counters.caughtUp(at: loop.now) }
        if !reportedCaughtUp, journalsCaughtUp {
            reportedCaughtUp = true
            log.info("caught up with the journals", ["seconds": String(format: "%.3f", loop.now - startedAt),
                                                     "records": String(statistics.recordsRead)])
        }
        let after = reader.position
        reader.position = header.to
        // The next request goes out before this reply is worked through, so the journal's answer overlaps the work.
        reader.fetchNext()
        guard !items.isEmpty else { return }
        let now = Date().timeIntervalSince1970
        let recordsBefore = statistics.recordsRead
        defer { counters.read(positions: header.to - after, records: statistics.recordsRead - recordsBefore) }
        pendingInputs.append(.records(feed: header.feed, after: after, to: header.to, now: now))
        applyRecords(items, now: now, loop: loop)
        commit()
    }

    /// Detection hears its journals again (it started, or a journal answers after an outage): the time it could
    /// not is not the devices' silence (`DeviceFleet.resumeClock`). Stored like any input, so that a re-run measures
    /// silence as this run did.
    private func resumeClock(_ reason: String) {
        guard fleet.deviceCount > 0 else { return }
        log.info("devices' quiet time counts from now", ["reason": reason])
        let now = Date().timeIntervalSince1970
        fleet.resumeClock(now: now)
        pendingInputs.append(.resumed(now: now))
        commit()
    }

    private func resume(_ reader: JournalReader, loop: ReactorLoop) {
        guard case .live = phase else { return }
        reader.fetchNext()
    }

    /// Where reading of `feed` goes on after the re-run: its last records input, else its checkpoint position.
    private func positionAfterRecovery(of feed: String) -> UInt64 {
        var position = checkpointPositions[feed] ?? 0
        if case let .recovering(queue, _) = phase {
            for case let .records(inputFeed, _, to, _) in queue where inputFeed == feed { position = max(position, to) }
        }
        return position
    }

    private func applyRecords(_ chunks: ArraySlice<[UInt8]>, now: Double, loop: ReactorLoop) {
        for chunk in chunks {
            let decoded: DecodedBatch
            do {
                decoded = try RecordBatch.decodeBatch(chunk, contentType: .msgpack, identifiers: identifiers)
            } catch {
                log.error("unreadable chunk in the journal: skipped", ["error": "\(error)"])
                continue
            }
            for (index, result) in decoded.records {
                switch result {
                case let .success(record):
                    statistics.recordsRead += 1
                    if !evicted.isEmpty { bringBack(record.device) }
                    perform(fleet.receive(record, now: now), loop: loop)
                case let .failure(error):
                    log.error("invalid record in the journal: skipped", ["index": String(index), "field": error.field,
                                                                         "reason": error.reason])
                }
            }
        }
    }

    // MARK: Inputs that are not records

    /// Applies a stored input again (recovery); records are handled where their fetch is answered.
    private func apply(_ input: DetectionInput, loop: ReactorLoop) {
        switch input {
        case .records:
            break
        case let .settings(app, fetch, now):
            perform(fleet.settingsFetched(app: app, fetch, now: now), loop: loop)
        case let .verdict(device, crashID, outcome):
            perform(fleet.crashEvaluated(device: device, crashID: crashID, outcome: outcome), loop: loop)
        case let .control(text, fetch, now):
            guard let request = try? ControlRequest(json: Array(text.utf8)) else { return }
            bringBack(for: request)
            perform(fleet.control(request, now: now, fetch: fetch).actions, loop: loop)
        case let .tick(now):
            perform(fleet.tick(now: now), loop: loop)
        case let .deviceTick(now, devices):
            for device in devices where !evicted.isEmpty { bringBack(device) }
            perform(fleet.tick(now: now, only: devices), loop: loop)
        case let .resumed(now):
            fleet.resumeClock(now: now)
        }
    }

    /// Clock-driven decisions, only while every journal has been read to its end and still answers: while records
    /// wait unread, or cannot reach detection, a device is not silent. A journal that stopped answering is waited
    /// for `DetectionConfiguration.silentJournalGrace` seconds, then the clock runs on without it (a dead ingest
    /// must not hold a crash decision for ever); when it answers again, quiet time counts from then (`resumeClock`).
    ///
    /// While a journal is behind, devices due (a crash to decide, a trip to end) are not kept waiting for the whole
    /// backlog: each request asks the journals where those devices' records end (`FeedRequest.watch`), and the devices
    /// every journal has already given all of are ticked alone (`deviceTick`).
    private func tick(loop: ReactorLoop) {
        guard case .live = phase else { return }
        func heard(_ journal: JournalReader) -> Bool { loop.now - journal.lastReply < Self.journalHeardWithin }
        func given(_ journal: JournalReader) -> Bool {
            loop.now - journal.lastReply > configuration.silentJournalGrace
        }
        let now = Date().timeIntervalSince1970
        let readAll = journals.allSatisfy { ($0.caughtUp && heard($0)) || given($0) }
        guard readAll else {
            tickDevicesRead(now: now, loop: loop, heard: heard, given: given)
            return
        }
        for journal in journals { journal.watch = [] }
        let actions = fleet.tick(now: now)
        // A tick that changed nothing need not be stored: the re-run would do nothing with it either.
        guard fleet.lastTickChangedState || !actions.isEmpty else { return }
        pendingInputs.append(.tick(now: now))
        perform(actions, loop: loop)
        commit()
    }

    /// The tick while a journal is behind: devices due whose records every journal has given are ticked; the
    /// devices due now are what the next requests ask about.
    private func tickDevicesRead(now: Double, loop: ReactorLoop, heard: (JournalReader) -> Bool,
                                 given: (JournalReader) -> Bool) {
        let due = fleet.dueDevices(now: now, limit: FeedRequest.maximumWatched)
        let read = due.filter { device in
            journals.allSatisfy { journal in
                (journal.caughtUp && heard(journal)) || given(journal) || (heard(journal) && journal.hasGivenAll(of: device))
            }
        }
        for journal in journals { journal.watch = due }
        guard !read.isEmpty else { return }
        let actions = fleet.tick(now: now, only: read)
        guard fleet.lastTickChangedState || !actions.isEmpty else { return }
        statistics.devicesTickedAhead += read.count
        pendingInputs.append(.deviceTick(now: now, devices: read))
        perform(actions, loop: loop)
        commit()
    }

    // MARK: Actions

    private func perform(_ actions: [FleetAction], loop: ReactorLoop) {
        for action in actions {
            switch action {
            case let .emit(event):
                counters.emitted(event.name)
                pendingEvents.append(event)
                log.info("event", ["event": event.name, "device": event.device.description, "eventID": event.eventID])
            case let .fetchSettings(app):
                guard case .live = phase else { continue }
                callPlatform(.settings) { platform in
                    .settings(app: app, fetch: await platform.fetchSettings(applicationID: app))
                }
            case let .evaluateCrash(device, candidate):
                guard case .live = phase else { continue }
                callPlatform(.evaluation) { platform in
                    .verdict(device: device, crashID: candidate.crashID, outcome: await platform.evaluation(of: candidate))
                }
            case let .crashDismissed(device, candidate, reason):
                counters.dismissed(reason)
                log.info("suspected crash dismissed", ["device": device.description, "crashID": candidate.crashID,
                                                       "at": ISO8601.string(fromSeconds: candidate.time),
                                                       "reason": reason.rawValue,
                                                       "peakG": JSONObjectWriter.number(candidate.peakG, decimals: 1)])
            case let .recordRejected(record, reason):
                if case .duplicate = reason { continue }
                log.warning("record not applied", ["device": record.device.description,
                                                    "t": ISO8601.string(fromSeconds: record.t), "reason": reason.description])
            case let .deviceNotMonitored(device, error):
                log.error("device not monitored", ["device": device.description, "error": error.code,
                                                   "reason": error.description])
            }
        }
    }

    /// What the platform answered, brought back to the reactor thread.
    private enum PlatformAnswer: Sendable {
        case settings(app: String, fetch: SettingsFetch)
        case verdict(device: DeviceID, crashID: String, outcome: CrashEvaluationOutcome)
        /// The settings fetch a control command needed (the command waits in `waitingCommands`).
        case command(id: Int, fetch: SettingsFetch)

        /// The platform could not be reached (after the platform client's retries).
        var isFailure: Bool {
            switch self {
            case let .settings(_, fetch), let .command(_, fetch): fetch == .unreachable
            case let .verdict(_, _, outcome): outcome == .unreachable
            }
        }
    }

    /// Runs a platform call off the reactor; its answer is applied back on the reactor and stored.
    private func callPlatform(_ kind: DetectionMetrics.PlatformCall,
                              _ call: @escaping @Sendable (any Platform) async -> PlatformAnswer) {
        platformCallsInFlight += 1
        let platform = self.platform
        Task { [reactor] in
            let started = MonotonicClock.now()
            let answer = await call(platform)
            let seconds = MonotonicClock.now() - started
            reactor.post { [self] loop in
                platformCallsInFlight -= 1
                counters.called(kind, seconds: seconds, failed: answer.isFailure)
                platformAnswered(answer, loop: loop)
                commit()
            }
        }
    }

    private func platformAnswered(_ answer: PlatformAnswer, loop: ReactorLoop) {
        let now = Date().timeIntervalSince1970
        switch answer {
        case let .settings(app, fetch):
            pendingInputs.append(.settings(app: app, fetch: fetch, now: now))
            perform(fleet.settingsFetched(app: app, fetch, now: now), loop: loop)
        case let .verdict(device, crashID, outcome):
            if outcome == .unreachable {
                log.warning("platform unreachable: crash reported with confidence unknown",
                            ["device": device.description, "crashID": crashID])
            }
            pendingInputs.append(.verdict(device: device, crashID: crashID, outcome: outcome))
            perform(fleet.crashEvaluated(device: device, crashID: crashID, outcome: outcome), loop: loop)
        case let .command(id, fetch):
            guard let waiting = waitingCommands.removeValue(forKey: id) else { return }
            execute(waiting.request, text: waiting.text, fetch: fetch, reply: waiting.prefix, key: waiting.key, loop: loop)
        }
    }

    // MARK: Metrics

    /// Every journal's last reply reached its head.
    private var journalsCaughtUp: Bool { !journals.isEmpty && journals.allSatisfy(\.caughtUp) }

    /// What /metrics shows of detection (posted by `ServiceMetrics` from the loop).
    private func metricFamilies(now: Double) -> [MetricFamily] {
        if tripsInProgress.map({ now - $0.at >= Self.tripsCountInterval }) ?? true {
            tripsInProgress = (fleet.tripsInProgress, now)
        }
        let gauges = DetectionMetrics.Gauges(
            positionsBehind: journals.reduce(0) { $0 + ($1.head > $1.position ? $1.head - $1.position : 0) },
            lagSeconds: counters.lagSeconds(now: now, caughtUp: journalsCaughtUp),
            devicesInMemory: fleet.deviceCount, devicesOutOfMemory: evicted.outOfMemory,
            tripsInProgress: tripsInProgress?.count ?? 0, outbox: try? store?.outboxCount(),
            platformCallsInFlight: platformCallsInFlight, checkpoints: statistics.checkpoints)
        return counters.families(fleet: fleet.statistics, recordsRead: statistics.recordsRead, gauges: gauges)
            + FeedLinkMetrics.families(service: "detection", links: journals.map { ($0.endpoint, $0.linkStatistics) })
    }

    /// Why detection is not ready (nothing when it is): its store and sockets, re-running its inputs after a
    /// restart, and the journals read to their heads within `DetectionMetrics.readyLag` seconds.
    private func notReady(now: Double) -> [String] {
        var reasons: [String] = []
        if store == nil { reasons.append("store not open") }
        if control == nil || outbox == nil { reasons.append("sockets not bound") }
        switch phase {
        case .starting: reasons.append("starting")
        case .recovering: reasons.append("re-running the inputs stored after the last checkpoint")
        case .stopping: reasons.append("stopping")
        case .live:
            if let lag = counters.lagSeconds(now: now, caughtUp: journalsCaughtUp) {
                if lag > DetectionMetrics.readyLag { reasons.append("behind the journals by \(Int(lag)) s") }
            } else {
                reasons.append("not caught up with the journals since the start")
            }
        }
        return reasons
    }

    // MARK: Storing

    /// Stores the inputs and events in hand in one transaction (one fsync), then lets the events and replies go.
    /// Inputs that gave nothing to send wait for the next commit (one with events or replies, a checkpoint's, or
    /// `force`): until something leaves the process nothing depends on them, and a restart that lost them re-reads
    /// their records from the journal, so records that only moved devices along cost no fsync (and a crash's
    /// verdict is stored in the same transaction as the records that raised it). At most `deferredInputs` wait.
    private func commit(force: Bool = false) {
        guard force || !pendingEvents.isEmpty || !pendingReplies.isEmpty || pendingInputs.count >= Self.deferredInputs
        else {
            // Stored soon anyway, so the store shows how far detection has read within `deferredCommitDelay`.
            if deferredCommit == nil, !pendingInputs.isEmpty, let loop {
                deferredCommit = loop.schedule(after: Self.deferredCommitDelay) { [self] in
                    deferredCommit = nil
                    commit(force: true)
                }
            }
            return
        }
        if let deferredCommit {
            loop?.cancel(deferredCommit)
            self.deferredCommit = nil
        }
        guard let store, !pendingInputs.isEmpty || !pendingEvents.isEmpty || !pendingReplies.isEmpty else { return }
        do {
            if let last = try store.commit(inputs: pendingInputs, events: pendingEvents, at: Date().timeIntervalSince1970) {
                lastInput = last
            }
        } catch {
            // The work cannot be made durable: stop rather than let events or replies out that a restart could not
            // give again. The store's last state is consistent; a restart re-reads the journals from it.
            log.error("detection store failed: stopping", ["error": "\(error)"])
            reactor.stop()
            return
        }
        let hadEvents = !pendingEvents.isEmpty
        pendingInputs.removeAll(keepingCapacity: true)
        pendingEvents.removeAll(keepingCapacity: true)
        for reply in pendingReplies { send(reply.frames, reply.bytes) }
        pendingReplies.removeAll()
        if hadEvents { outbox?.itemsAdded() }
    }

    /// During recovery only events are stored: the inputs giving them are already in the store.
    private func commitEvents() {
        guard let store, !pendingEvents.isEmpty else { return }
        do {
            try store.commit(inputs: [], events: pendingEvents, at: Date().timeIntervalSince1970)
            pendingEvents.removeAll()
            outbox?.itemsAdded()
        } catch {
            log.error("detection store failed: stopping", ["error": "\(error)"])
            reactor.stop()
        }
    }

    /// Takes a checkpoint: the fleet's changed devices and shared state with the journal positions, after which the
    /// inputs before it are forgotten. The states are values, so copies are encoded and written by the checkpoint
    /// writer (`CheckpointWriter`, a thread and a connection of its own) while this thread goes on; what is written
    /// is taken into account here (`checkpointWritten`). `now` waits for the write (at stop).
    private func checkpoint(now: Bool = false) {
        guard store != nil, !checkpointInFlight else { return }
        // Under load, every device changes between checkpoints and encoding them all is real work on a machine whose
        // cores the pipeline needs: checkpoints are spaced so that they take at most 1/`checkpointCostShare` of the
        // time (a restart then re-reads a little more of the journals).
        if !now, let loop, loop.now < nextCheckpointAllowed,
           !Self.checkpointDue(resident: fleet.residentCount, residentAtLast: residentAtLastCheckpoint) { return }
        switch phase {
        case .live, .stopping: break
        default: return
        }
        commit(force: true)
        // Devices whose last checkpoint write failed: written with this one.
        let unsaved = Set(unsavedDevices)
        // Idle devices leave memory with this checkpoint (their states are written in its transaction).
        if configuration.deviceMemoryIdle > 0 {
            let states = fleet.evictIdle(idle: configuration.deviceMemoryIdle, now: Date().timeIntervalSince1970)
            // Unchanged since a checkpoint wrote them, unless that write failed.
            evicted.left(states, storedAlready: fleet.lastEvictedUnchanged.filter { !unsaved.contains($0) })
        }
        residentAtLastCheckpoint = fleet.residentCount
        guard lastInput > checkpointInput || fleet.hasChangedDevices || !unsavedDevices.isEmpty
                || !evicted.unsaved.isEmpty else { return }
        let changed = unsavedDevices + fleet.takeChangedDevices().filter { !unsaved.contains($0) }
        unsavedDevices.removeAll()
        let leavingAll = evicted.unsaved.values.sorted { $0.device < $1.device }
        evictionsInFlight = leavingAll.map(\.device)
        // What the checkpoint holds, taken now: the changed devices' states, not a copy of the whole fleet (which
        // the next record would make the fleet duplicate in memory while the copy is being encoded).
        let shared = fleet.sharedState
        let states = changed.compactMap { fleet.deviceState($0) }
        // A device back in memory since it left is written as it is now (with `states`), not as it left. Those whose
        // stored row is current are only marked out of memory; the others are encoded and written.
        let leaving = leavingAll.filter { !fleet.isResident($0.device) }
        let leavingNow = leaving.filter { !evicted.storedAlready.contains($0.device) }
        let markedNow = leaving.filter { evicted.storedAlready.contains($0.device) }
        let input = lastInput
        var current = checkpointPositions.merging(positionsAtStop) { _, atStop in atStop }
        for journal in journals { if let feed = journal.feed { current[feed] = journal.position } }
        let positions = current
        guard let store else { return }
        checkpointInFlight = true
        checkpointGeneration += 1
        let generation = checkpointGeneration
        devicesInFlight = changed
        store.checkpoints.started(generation)
        let time = Date().timeIntervalSince1970
        let rows = store.rows
        let make: @Sendable () throws -> CheckpointWriter.Checkpoint = {
            let encoded = try Self.encode(shared, states: states, leaving: leavingNow, markedOnly: markedNow, rows: rows)
            return CheckpointWriter.Checkpoint(input: input, shared: encoded.shared, changedDevices: encoded.devices,
                                               evictedDevices: encoded.evicted, markedEvicted: encoded.markedOnly,
                                               positions: positions, time: time)
        }
        let startedAt = MonotonicClock.now()
        // Counts, not the lists: `done` below must not keep the states alive (`make` lets go of them once run).
        let devicesLeft = !leavingAll.isEmpty
        let (changedCount, encodedCount, markedCount) = (states.count, leavingNow.count, markedNow.count)
        let done: @Sendable (Result<CheckpointWriter.Timing, any Error>?) -> Void = { [self] outcome in
            checkpointWritten(outcome, generation: generation, input: input, positions: positions, devices: changed)
            // What sizes a checkpoint (and detection's memory between two), for tuning at scale.
            if case let .success(timing) = outcome {
                nextCheckpointAllowed = startedAt + Self.checkpointSpacing(cost: timing.encoding + timing.writing,
                                                                           devicesLeft: devicesLeft)
                log.debug("checkpoint", ["resident": String(fleet.residentCount), "changed": String(changedCount),
                                         "leavingEncoded": String(encodedCount), "leavingMarked": String(markedCount),
                                         "encodeSeconds": String(format: "%.3f", timing.encoding),
                                         "writeSeconds": String(format: "%.3f", timing.writing)])
            }
        }
        guard !now else {
            done(store.checkpoints.writeAndWait(generation, make))
            return
        }
        // Encoded and written on the checkpoint writer's thread: this one goes on reading records and storing events.
        store.checkpoints.write(generation, make) { [reactor] outcome in
            reactor.post { _ in done(outcome) }
        }
    }

    /// Seconds from the start of a checkpoint that cost `cost` to the next one allowed: at most 1/`checkpointCostShare`
    /// of the time goes to checkpoints; none follows one that took devices out of memory (more may be leaving).
    static func checkpointSpacing(cost: Double, devicesLeft: Bool) -> Double {
        devicesLeft ? 0 : cost * checkpointCostShare
    }

    /// Whether a checkpoint may come before its spacing is over: idle devices leave memory only with a checkpoint,
    /// so one is not postponed while the devices in memory have more than doubled since the last (a flood of new
    /// devices made one expensive checkpoint postpone the next by a minute, while every device met meanwhile stayed
    /// in memory: 6 GiB with a million).
    static func checkpointDue(resident: Int, residentAtLast: Int) -> Bool {
        resident > max(1000, 2 * residentAtLast)
    }

    /// A checkpoint was written (`outcome` nil: superseded by a later one, which a stop takes at once with
    /// everything the earlier one held): what it holds is safe, so the inputs before it can go and ingest may drop
    /// the records before its positions. One that failed is written again with the next (its inputs are kept).
    private func checkpointWritten(_ outcome: Result<CheckpointWriter.Timing, any Error>?, generation: Int, input: Int64,
                                   positions: [String: UInt64], devices changed: [DeviceID]) {
        guard generation == checkpointGeneration, let store else { return }
        checkpointInFlight = false
        devicesInFlight = []
        let leaving = evictionsInFlight
        evictionsInFlight = []
        do {
            guard let outcome else { throw CheckpointSkipped() }
            _ = try outcome.get()
        } catch {
            unsavedDevices += changed
            log.error("checkpoint not written (the inputs since the last one are kept)", ["error": "\(error)"])
            return
        }
        evicted.written(leaving)
        if leaving.count >= 1000 { returnFreedMemorySoon() }
        checkpointInput = input
        checkpointPositions = positions
        for journal in journals { if let feed = journal.feed { journal.checkpointed = positions[feed] ?? 0 } }
        statistics.checkpoints += 1
        do {
            try store.forgetInputs(through: input)
        } catch {
            // They are skipped at a restart (the checkpoint holds them) and deleted with the next checkpoint.
            log.warning("inputs held by the checkpoint not deleted", ["error": "\(error)"])
        }
    }

    private struct CheckpointSkipped: Error, CustomStringConvertible {
        var description: String { "superseded by a later checkpoint before its turn" }
    }

    /// The states of a large eviction are freed only once the checkpoint writer's closures have let go of them: the
    /// heap is trimmed a moment after the write is taken into account. Trimmed at once, nothing was free yet, and the heap kept the pages of every state that
    /// left until the next large eviction (664 MiB settled with 327 devices in memory, 400,000 known).
    private func returnFreedMemorySoon() {
        _ = loop?.schedule(after: 0.2) { EvictedDevices.returnFreedMemory() }
    }

    typealias Encoded = (shared: [UInt8], devices: [(DeviceID, [UInt8])], evicted: [(DeviceID, [UInt8])],
                         markedOnly: [DetectionStore.MarkedEviction])

    /// Encodes a checkpoint (off the reactor thread). `markedOnly`: devices leaving memory whose stored row is
    /// current; each carries a way to encode its state, for a row that turns out to be missing.
    private static func encode(_ shared: FleetSharedState, states: [FleetDeviceState], leaving: [EvictedState],
                               markedOnly: [EvictedState], rows: DeviceRowCodec) throws -> Encoded {
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
    static func checkpointJSON<Value: Encodable>(_ value: Value,
                                                 _ encoder: StreamingJSONEncoder = StreamingJSONEncoder()) throws -> [UInt8] {
        if let bytes = try? encoder.encode(value) { return bytes }
        return Array(try JSONEncoder().encode(value))
    }

    // MARK: Devices out of memory

    /// Puts a device that left memory back into the fleet before an input names it. A store that cannot be read
    /// stops the service (as a failed commit does): going on would start the device afresh.
    private func bringBack(_ device: DeviceID) {
        guard !fleet.isResident(device) else { return }
        do {
            if let state = try evicted.takeBack(device, from: store) { fleet.restore(state) }
        } catch {
            storeFailed(error)
        }
    }

    /// A command for one device brings it back; one for every device of an application brings them all back.
    private func bringBack(for request: ControlRequest) {
        guard !evicted.isEmpty else { return }
        if let user = request.user {
            bringBack(DeviceID(app: request.app, user: user))
            return
        }
        do {
            for state in try evicted.takeBack(app: request.app, from: store) where !fleet.isResident(state.device) {
                fleet.restore(state)
            }
        } catch {
            storeFailed(error)
        }
    }

    private func storeFailed(_ error: any Error) {
        log.error("detection store failed: stopping", ["error": "\(error)"])
        // Nothing more is stored: a restart re-runs from the last consistent state.
        store = nil
        reactor.stop()
    }

    // MARK: Control

    private func receiveCommands(_ socket: ZMQSocket, loop: ReactorLoop) {
        socket.drain(limit: 1000, failed: { log.error("control socket failed", ["error": "\($0)"]) }) { frames in
            // [identity, (empty delimiter from REQ,) body]
            guard frames.count >= 2, let body = frames.last else { return true }
            let prefix = Array(frames.dropLast())
            let peer = socket.lastPeer
            switch phase {
            case .live:
                handleCommand(prefix: prefix, body: body, peer: peer, loop: loop)
            case .stopping:
                send(prefix, ControlReply.failure("stopping", "the detection service is shutting down"))
            case .starting, .recovering:
                // Applied once the stored inputs have been re-run, so that they come after them, as they did.
                guard commandsWhileStarting.count < Self.maximumCommandsWhileStarting else {
                    send(prefix, ControlReply.failure("recovering", "the detection service is re-running its inputs after a restart; try again in a moment"))
                    return true
                }
                // Its key is checked when it is handled, against the allow-list in force then.
                commandsWhileStarting.append((prefix, body, peer))
            }
            return true
        }
    }

    private func handleCommand(prefix: [[UInt8]], body: [UInt8], peer: CurvePeer?, loop: ReactorLoop) {
        let entry = zap?.entry(for: peer, role: .operator)
        // The audit names the key as the allow-list in force does; a key it refuses, as it was admitted.
        let key = (try? entry?.get())?.name ?? peer?.name
        let request: ControlRequest
        do {
            request = try ControlRequest(json: body)
        } catch {
            audit(command: nil, key: key, result: "badRequest", refused: true)
            send(prefix, ControlReply.failure("badRequest", error.message))
            return
        }
        if let refusal = ControlAccess.refusal(of: request, key: entry) {
            audit(command: request, key: key, result: refusal.code, refused: true)
            send(prefix, ControlReply.failure(refusal.code, refusal.message))
            return
        }
        let text = String(decoding: body, as: UTF8.self)
        guard request.needsSettings else {
            execute(request, text: text, fetch: nil, reply: prefix, key: key, loop: loop)
            return
        }
        // The startup guard fetches settings: off the reactor, then back on it to apply.
        nextCommandID += 1
        let id = nextCommandID
        waitingCommands[id] = (request, text, prefix, key)
        let app = request.app
        callPlatform(.settings) { platform in .command(id: id, fetch: await platform.fetchSettings(applicationID: app)) }
    }

    private func execute(_ request: ControlRequest, text: String, fetch: SettingsFetch?, reply prefix: [[UInt8]],
                         key: String?, loop: ReactorLoop) {
        guard case .live = phase else {
            send(prefix, ControlReply.failure("stopping", "the detection service is shutting down"))
            return
        }
        let now = Date().timeIntervalSince1970
        pendingInputs.append(.control(request: text, fetch: fetch, now: now))
        bringBack(for: request)
        let (outcome, actions) = fleet.control(request, now: now, fetch: fetch)
        perform(actions, loop: loop)
        audit(command: request, key: key, result: outcome.summary)
        // The reply leaves once the command is stored.
        pendingReplies.append((prefix, outcome.reply))
        commit()
    }

    /// The audit line of a command, accepted or refused: the operator key's name (with keys), the command, the
    /// application masked, the user, the result. Never the key itself.
    private func audit(command request: ControlRequest?, key: String?, result: String, refused: Bool = false) {
        let fields: KeyValuePairs<String, String> = [
            "key": zap == nil ? "-" : key ?? "?", "command": request?.command.rawValue ?? "?",
            "app": request.map { Secret.mask($0.app) } ?? "?", "user": request.map { $0.user ?? "*" } ?? "?",
            "result": result,
        ]
        if !refused {
            log.info("control command", fields)
        } else {
            log.warning("control command refused", fields)
        }
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
}

extension ControlOutcome {
    /// For the log line of a command: `ok (N devices)` or the error code.
    var summary: String {
        switch self {
        case let .ok(devices, _): "ok (\(devices.count) devices)"
        case let .failure(code, _, _): code
        }
    }
}
