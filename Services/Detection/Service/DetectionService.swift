import DetectionEngine
import Foundation
import RoadSaveModel
import ServiceKit
import Wire
import ZeroMQ

/// detection: subscribes to sensor-ingest's records, runs a `DeviceSession` per device (records in event-time order
/// through `RecordOrdering`), answers control commands, and publishes events to the notifier. The sockets and the
/// sessions live on one reactor thread; platform calls (settings, crash evaluation) run as async tasks and post
/// their results back, so a slow or dead platform never stalls other devices.
public final class DetectionService: @unchecked Sendable {
    // @unchecked: every mutable property below is used only on the reactor thread.
    public let configuration: DetectionConfiguration
    private let log: Log
    private let platform: any Platform
    private let context: ZMQContext
    private let reactor: Reactor
    private let producer: String
    private var sequence = SequenceCounter()
    private var tracker = SequenceTracker()
    private var devices: [DeviceID: DeviceRuntime] = [:]
    /// Settings per application from the platform, for devices started automatically.
    private var applicationSettings: [String: DetectionSettings] = [:]
    private var settingsRequested: Set<String> = []
    private var events: ZMQSocket?
    private var records: ZMQSocket?
    private var control: ZMQSocket?
    private var lastPublished = 0.0
    private var platformCallsInFlight = 0
    private var stopping = false
    private var statistics = Statistics()

    struct Statistics {
        var records = 0
        var duplicates = 0
        var late = 0
        var notMonitored = 0
        var events = 0
    }

    /// Seconds without a record after which a device's reorder buffer is released anyway.
    static let idleFlush = 1.0
    /// Longest a graceful stop waits for platform calls in flight.
    static let stopGrace = 10.0
    /// Records kept per device while its application's settings are fetched.
    static let maximumWaitingRecords = 10_000

    /// `platform` replaces the one the configuration describes (tests use a scripted one).
    public init(configuration: DetectionConfiguration, producer: String = "detection-\(getpid())",
                platform: (any Platform)? = nil) throws {
        self.configuration = configuration
        self.producer = producer
        log = Log(category: "detection", minimumLevel: configuration.logLevel)
        self.platform = try platform ?? configuration.makePlatform()
        context = try ZMQContext()
        reactor = Reactor(name: "detection", context: context)
    }

    public func run() throws {
        reactor.start { [self] loop in
            let records = try loop.socket(.sub)
            try records.setReceiveHighWaterMark(1_000_000)
            if let shard = configuration.shard {
                try records.subscribe(Topic.record(shard: shard.index))
            } else {
                try records.subscribe(Topic.records)
            }
            try records.subscribe(Topic.heartbeat)
            try records.connect(configuration.recordsEndpoint)
            self.records = records
            let control = try loop.socket(.router)
            try control.setSendTimeout(milliseconds: 1000)
            try control.bind(configuration.controlEndpoint)
            self.control = control
            let events = try loop.socket(.pub)
            try events.setSendHighWaterMark(1_000_000)
            try events.setLinger(milliseconds: 2000)
            try events.bind(configuration.eventsEndpoint)
            self.events = events
            loop.onReadable(records) { [self] socket in receiveRecords(socket, loop: loop) }
            loop.onReadable(control) { [self] socket in receiveCommands(socket, loop: loop) }
            loop.every(0.1) { [self] in runTimers(loop: loop) }
            loop.every(configuration.heartbeatInterval / 2) { [self] in heartbeatIfIdle(loop.now) }
            loop.every(5) { [self] in reportSilentProducers() }
            log.info("running", ["records": configuration.recordsEndpoint, "control": control.lastEndpoint,
                                 "events": events.lastEndpoint,
                                 "platform": configuration.platformURL?.absoluteString ?? "embedded",
                                 "autoMonitor": String(configuration.autoMonitor)])
        }
        if let error = reactor.wait() { throw error }
    }

    /// Graceful stop: no more records are taken, buffered ones are applied, platform calls in flight get up to
    /// `stopGrace` seconds to finish and their events are published, then the sockets close.
    public func stop() {
        reactor.post { [self] loop in
            guard !stopping else { return }
            stopping = true
            if let records { loop.close(records) }
            records = nil
            for device in devices.keys.sorted() {
                for record in devices[device]!.ordering.flush() { apply(record, loop: loop) }
            }
            let deadline = loop.now + Self.stopGrace
            func finishWhenIdle() {
                if platformCallsInFlight == 0 || loop.now >= deadline {
                    if platformCallsInFlight > 0 {
                        log.warning("stopping with platform calls unanswered", ["calls": String(platformCallsInFlight)])
                    }
                    log.info("stopping", ["records": String(statistics.records), "events": String(statistics.events),
                                          "devices": String(devices.count)])
                    loop.stop()
                } else {
                    loop.schedule(after: 0.05) { finishWhenIdle() }
                }
            }
            finishWhenIdle()
        }
    }

    // MARK: Records

    private func receiveRecords(_ socket: ZMQSocket, loop: ReactorLoop) {
        for _ in 0..<10_000 {
            guard !stopping else { return }
            let frames: [[UInt8]]
            do {
                guard let received = try socket.receive(dontWait: true) else { return }
                frames = received
            } catch {
                log.error("record socket failed", ["error": "\(error)"])
                return
            }
            let envelope: Envelope
            do {
                envelope = try Envelope(frames: frames)
            } catch {
                log.warning("unreadable message from ingest", ["error": "\(error)"])
                continue
            }
            noteSequence(envelope.header)
            guard envelope.header.kind == .record else { continue }
            do {
                route(try envelope.record(), loop: loop)
            } catch {
                log.warning("unreadable record from ingest", ["error": "\(error)"])
            }
        }
    }

    private func noteSequence(_ header: EnvelopeHeader) {
        switch tracker.observe(header, at: Date().timeIntervalSince1970) {
        case let .gap(missing):
            log.warning("messages lost between ingest and detection",
                        ["producer": header.producer, "missing": "\(missing.lowerBound)…\(missing.upperBound)"])
        case .restarted:
            log.info("ingest restarted", ["producer": header.producer])
        default:
            break
        }
    }

    private func route(_ record: SensorRecord, loop: ReactorLoop) {
        let device = record.device
        statistics.records += 1
        if devices[device] == nil { devices[device] = DeviceRuntime(device: device, window: configuration.reorderWindow) }
        if devices[device]!.session.lifecycle == .unconfigured, configuration.autoMonitor {
            guard let settings = applicationSettings[device.app] else {
                if devices[device]!.waitingForSettings.count < Self.maximumWaitingRecords {
                    devices[device]!.waitingForSettings.append(record)
                }
                requestSettings(for: device.app)
                return
            }
            startAutomatically(&devices[device]!, settings: settings, at: record.t)
        }
        let (ready, rejected) = devices[device]!.ordering.insert(record)
        devices[device]!.lastArrival = loop.now
        for (rejectedRecord, reason) in rejected {
            switch reason {
            case .duplicate:
                statistics.duplicates += 1
            case .late, .farInFuture:
                statistics.late += 1
                log.warning("record not applied", ["device": rejectedRecord.device.description,
                                                    "t": ISO8601.string(fromSeconds: rejectedRecord.t),
                                                    "reason": reason.description])
            }
        }
        for next in ready { apply(next, loop: loop) }
    }

    private func startAutomatically(_ runtime: inout DeviceRuntime, settings: DetectionSettings, at t: Double) {
        let device = runtime.session.device
        do {
            _ = try runtime.session.configure(RoadSaveConfiguration(applicationID: device.app, clientUserID: device.user), at: t)
            _ = try runtime.session.startMonitoring(at: t, fetch: .fetched(settings))
            log.info("monitoring", ["device": device.description, "by": "autoMonitor"])
        } catch {
            log.error("device not monitored", ["device": device.description, "error": error.code, "reason": error.description])
        }
    }

    /// Applies a record that left the reorder stage.
    private func apply(_ record: SensorRecord, loop: ReactorLoop) {
        guard var runtime = devices[record.device] else { return }
        if runtime.session.lifecycle != .monitoring {
            statistics.notMonitored += 1
            if statistics.notMonitored == 1 || statistics.notMonitored % 10_000 == 0 {
                log.info("records of devices not monitored are not applied",
                         ["device": record.device.description, "count": String(statistics.notMonitored)])
            }
        }
        runtime.noteArrival(eventTime: record.t, monotonic: loop.now)
        let actions = runtime.session.handle(record)
        devices[record.device] = runtime
        perform(actions, device: record.device)
    }

    private func requestSettings(for app: String) {
        guard settingsRequested.insert(app).inserted else { return }
        let platform = self.platform
        Task { [reactor] in
            let fetch = await platform.fetchSettings(applicationID: app)
            reactor.post { [self] loop in settingsArrived(app: app, fetch: fetch, loop: loop) }
        }
    }

    private func settingsArrived(app: String, fetch: SettingsFetch, loop: ReactorLoop) {
        settingsRequested.remove(app)
        let waiting = devices.filter { $0.key.app == app && !$0.value.waitingForSettings.isEmpty }.keys.sorted()
        guard case let .fetched(settings) = fetch else {
            // Never fetched and unreachable: offlineLimitExceeded for these devices. Their records are dropped;
            // the next record tries again.
            for device in waiting {
                log.error("device not monitored: platform unreachable and no settings cached",
                          ["device": device.description, "error": "offlineLimitExceeded",
                           "dropped": String(devices[device]!.waitingForSettings.count)])
                devices[device]!.waitingForSettings.removeAll()
            }
            return
        }
        applicationSettings[app] = settings
        for device in waiting {
            let records = devices[device]!.waitingForSettings
            devices[device]!.waitingForSettings.removeAll()
            for record in records { route(record, loop: loop) }
        }
    }

    // MARK: Actions

    private func perform(_ actions: [DetectionAction], device: DeviceID) {
        for action in actions {
            switch action {
            case let .emit(event):
                publish(event)
            case let .evaluateCrash(candidate):
                platformCallsInFlight += 1
                let platform = self.platform
                Task { [reactor] in
                    let outcome = await platform.evaluation(of: candidate)
                    reactor.post { [self] _ in
                        platformCallsInFlight -= 1
                        if outcome == .unreachable {
                            log.warning("platform unreachable: crash reported with confidence unknown",
                                        ["device": device.description, "crashID": candidate.crashID])
                        }
                        guard var runtime = devices[device] else { return }
                        let actions = runtime.session.crashEvaluated(crashID: candidate.crashID, outcome: outcome)
                        devices[device] = runtime
                        perform(actions, device: device)
                    }
                }
            case let .crashDismissed(candidate, reason):
                log.info("suspected crash dismissed", ["device": device.description, "crashID": candidate.crashID,
                                                       "at": ISO8601.string(fromSeconds: candidate.time),
                                                       "reason": reason.rawValue,
                                                       "peakG": JSONObjectWriter.number(candidate.peakG, decimals: 1)])
            }
        }
    }

    private func publish(_ event: RoadSaveEvent) {
        guard let events else { return }
        statistics.events += 1
        let envelope = Envelope.event(event, producer: producer, sequence: sequence.next(),
                                      sentAt: Date().timeIntervalSince1970)
        do {
            try events.send(envelope.frames())
            lastPublished = MonotonicClock.now()
            log.info("event", ["event": event.name, "device": event.device.description, "eventID": event.eventID])
        } catch {
            log.error("event not published", ["event": event.name, "eventID": event.eventID, "error": "\(error)"])
        }
    }

    // MARK: Time

    /// Fires what is due on the clock: reorder buffers of devices gone quiet are released, and a device's timers
    /// fire when its event time, run on by the clock since its last record, reaches them.
    private func runTimers(loop: ReactorLoop) {
        let now = loop.now
        let wall = Date().timeIntervalSince1970
        // The keys are copied first: mutating the dictionary while iterating its own keys would copy it each time.
        for device in Array(devices.keys) {
            guard let runtime = devices[device], runtime.lastEventTime != nil || runtime.ordering.bufferedCount > 0
            else { continue }
            if runtime.ordering.bufferedCount > 0, now - runtime.lastArrival >= Self.idleFlush {
                for record in devices[device]!.ordering.flush() { apply(record, loop: loop) }
            }
            guard let current = devices[device], let deadline = current.session.nextDeadline,
                  current.lastEventTime != nil else { continue }
            let eventNow = current.eventTime(atMonotonic: now, wallClock: wall)
            guard eventNow >= deadline else { continue }
            var updated = current
            let actions = updated.session.advance(to: deadline)
            devices[device] = updated
            perform(actions, device: device)
        }
    }

    private func heartbeatIfIdle(_ now: Double) {
        guard let events, now - lastPublished >= configuration.heartbeatInterval else { return }
        // On the events topic, which is all the notifier subscribes to; it carries the last sequence number sent.
        let envelope = Envelope.heartbeat(producer: producer, sequence: sequence.last,
                                          sentAt: Date().timeIntervalSince1970, topic: Topic.events)
        _ = try? events.send(envelope.frames(), dontWait: true)
        lastPublished = now
    }

    private func reportSilentProducers() {
        for producer in tracker.silentProducers(now: Date().timeIntervalSince1970, after: 5 * configuration.heartbeatInterval) {
            log.warning("no records nor heartbeats from ingest", ["producer": producer])
        }
    }

    // MARK: Control

    private func receiveCommands(_ socket: ZMQSocket, loop: ReactorLoop) {
        for _ in 0..<1000 {
            let frames: [[UInt8]]
            do {
                guard let received = try socket.receive(dontWait: true) else { return }
                frames = received
            } catch {
                log.error("control socket failed", ["error": "\(error)"])
                return
            }
            // [identity, (empty delimiter from REQ,) body]
            guard frames.count >= 2, let body = frames.last else { continue }
            let prefix = Array(frames.dropLast())
            // Replies may come later (after a platform call), always from the reactor thread.
            let reply: @Sendable ([UInt8]) -> Void = { [self] bytes in
                reactor.post { [self] _ in
                    do {
                        if try control?.send(prefix + [bytes], dontWait: true) == false {
                            log.warning("control client gone before its reply")
                        }
                    } catch {
                        log.warning("control reply not sent", ["error": "\(error)"])
                    }
                }
            }
            guard !stopping else {
                reply(ControlReply.failure("stopping", "the detection service is shutting down"))
                continue
            }
            do {
                execute(try ControlRequest(json: body), loop: loop, reply: reply)
            } catch {
                reply(ControlReply.failure("badRequest", error.message))
            }
        }
    }

    private func execute(_ request: ControlRequest, loop: ReactorLoop, reply: @escaping @Sendable ([UInt8]) -> Void) {
        let targets: [DeviceID]
        if let user = request.user {
            targets = [DeviceID(app: request.app, user: user)]
        } else {
            targets = devices.keys.filter { $0.app == request.app }.sorted()
            guard !targets.isEmpty else {
                reply(ControlReply.failure("noDevices", "no device of that application is known yet"))
                return
            }
        }
        for device in targets where devices[device] == nil {
            devices[device] = DeviceRuntime(device: device, window: configuration.reorderWindow)
        }
        let needsSettings = request.command == .startMonitoring
            || (request.command == .setAutoTripDetection && request.enabled == true)
        guard needsSettings else {
            reply(apply(request, to: targets, fetch: nil, loop: loop))
            return
        }
        // The startup guard fetches settings: off the reactor, then back on it to apply.
        let platform = self.platform
        platformCallsInFlight += 1
        Task { [reactor] in
            let fetch = await platform.fetchSettings(applicationID: request.app)
            reactor.post { [self] loop in
                platformCallsInFlight -= 1
                if case let .fetched(settings) = fetch { applicationSettings[request.app] = settings }
                reply(apply(request, to: targets, fetch: fetch, loop: loop))
            }
        }
    }

    /// Runs a command on each target device; the reply reports the first error, or every device's state.
    private func apply(_ request: ControlRequest, to targets: [DeviceID], fetch: SettingsFetch?, loop: ReactorLoop) -> [UInt8] {
        let wall = Date().timeIntervalSince1970
        var sessions: [DeviceSession] = []
        for device in targets {
            guard var runtime = devices[device] else { continue }
            let t = runtime.eventTime(atMonotonic: loop.now, wallClock: wall)
            do {
                let actions: [DetectionAction]
                switch request.command {
                case .configure:
                    let configuration = RoadSaveConfiguration(applicationID: device.app, clientUserID: device.user,
                                                              detectionMode: request.detectionMode ?? .all,
                                                              shouldAutoDetectTrips: request.shouldAutoDetectTrips ?? true)
                    actions = try runtime.session.configure(configuration, at: t)
                case .startMonitoring:
                    actions = try runtime.session.startMonitoring(at: t, fetch: fetch ?? .unreachable)
                case .stopMonitoring:
                    actions = try runtime.session.stopMonitoring(at: t)
                case .setAutoTripDetection:
                    actions = try runtime.session.setAutoTripDetection(request.enabled ?? true, at: t, fetch: fetch)
                case .setDetectionMode:
                    actions = try runtime.session.setDetectionMode(request.detectionMode ?? .all, at: t)
                case .raiseTestCrash:
                    actions = try runtime.session.raiseTestCrash(at: t)
                }
                if runtime.lastEventTime == nil { runtime.noteArrival(eventTime: t, monotonic: loop.now) }
                devices[device] = runtime
                perform(actions, device: device)
                sessions.append(devices[device]!.session)
            } catch {
                devices[device] = runtime
                log.info("control command refused", ["command": request.command.rawValue, "device": device.description,
                                                     "error": error.code])
                return ControlReply.failure(error.code, error.message, device: device)
            }
        }
        log.info("control command", ["command": request.command.rawValue, "app": Secret.mask(request.app),
                                     "devices": String(sessions.count)])
        return ControlReply.ok(devices: targets, sessions: sessions)
    }
}
