import DetectionEngine
import Feeds
import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import Storage
import SystemKit
import Wire
import ZeroMQ

@testable import DetectionService
@testable import IngestService

/// sensor-ingest and detection in this process, on ipc endpoints of a temporary directory, each with its own data
/// directory, and the test's own sockets on a reactor of their own: a DEALER as a gateway, a `FeedClient` reading
/// detection's outbox as the notifier does (acknowledging what it read, up to a limit the test sets), and a DEALER
/// per control command. Detection can be stopped gracefully or abandoned (no last checkpoint, as after a crash) and
/// started again on the same data directory; ingest and the outbox reader stay.
final class DetectionRig: @unchecked Sendable {
    // @unchecked: `running` is guarded by `lock`; the rest is immutable or thread-safe.

    /// An event read from the outbox.
    struct OutboxItem {
        var event: RoadSaveEvent
        var json: String
        /// Monotonic seconds when it arrived.
        var at: Double
        /// The position of the last item of its reply.
        var replyTo: UInt64
    }

    /// A control command's reply.
    struct ControlAnswer {
        var json: JSONValue
        var ok: Bool { json["ok"] == .bool(true) }
        var error: String? { if case .string(let code)? = json["error"] { code } else { nil } }
        /// The device states of an ok reply.
        var states: [JSONValue] { if case .array(let states)? = json["states"] { states } else { [] } }
    }

    /// What the test side saw, written on its reactor thread, read by the test.
    final class Observed: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [OutboxItem] = []
        private var acks: [String: Acknowledgement] = [:]
        private var controlReplies: [Int: [UInt8]] = [:]
        private var outboxErrors: [String] = []
        private var feeds: [String] = []
        private var replies = 0

        func add(_ item: OutboxItem) { lock.withLock { items.append(item) } }
        func add(_ ack: Acknowledgement, batch: String) { lock.withLock { acks[batch] = ack } }
        func addControlReply(_ reply: [UInt8], id: Int) { lock.withLock { controlReplies[id] = reply } }
        func addOutboxError(_ error: String) { lock.withLock { outboxErrors.append(error) } }
        func addFeed(_ feed: String) { lock.withLock { feeds.append(feed) } }
        func addReply() { lock.withLock { replies += 1 } }

        var outbox: [OutboxItem] { lock.withLock { items } }
        func ack(_ batch: String) -> Acknowledgement? { lock.withLock { acks[batch] } }
        func controlReply(_ id: Int) -> [UInt8]? { lock.withLock { controlReplies[id] } }
        var errors: [String] { lock.withLock { outboxErrors } }
        /// Every outbox feed identity the reader met, in order.
        var feedIDs: [String] { lock.withLock { feeds } }
        /// Replies the outbox reader has had (each with no error is followed by its next request).
        var outboxReplies: Int { lock.withLock { replies } }
    }

    /// The test's sockets; lives on the test reactor's thread.
    final class TestSide {
        let gateway: ZMQSocket
        var outbox: FeedClient?
        var outboxFeed: String?
        var outboxPosition: UInt64 = 0
        /// The reader acknowledges what it read, but not past this position.
        var acknowledgeLimit = UInt64.max
        var controls: [Int: ZMQSocket] = [:]

        init(gateway: ZMQSocket) {
            self.gateway = gateway
        }

        func fetchOutbox() {
            outbox?.fetch(
                FeedRequest(
                    id: 0, feed: outboxFeed, after: outboxPosition, maxItems: 64,
                    acknowledged: min(outboxPosition, acknowledgeLimit), consumer: "test notifier",
                    waitMilliseconds: 300))
        }
    }

    /// A service thread's end.
    final class Finished: @unchecked Sendable {
        private let lock = NSLock()
        private var done = false
        private var failure: (any Error)?
        func finish(_ error: (any Error)?) {
            lock.withLock {
                done = true
                failure = error
            }
        }
        var isDone: Bool { lock.withLock { done } }
        var error: (any Error)? { lock.withLock { failure } }
    }

    struct RigError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    let root: String
    private let ingestConfiguration: IngestConfiguration
    private var ingest: (service: IngestService, finished: Finished)?
    let reactor: Reactor
    let observed = Observed()
    let recordsEndpoint: String
    let controlEndpoint: String
    let eventsEndpoint: String
    let detectionDirectory: String
    let journalPath: String
    private let lock = NSLock()
    private var running: (service: DetectionService, finished: Finished)?
    private var platforms: [ScriptedPlatform] = []
    private var nextControlID = 0
    static let quiet = Log(category: "test", minimumLevel: .error)
    /// `ROADSAVE_TEST_LOG=info` shows the services' logs.
    static let logLevel =
        ProcessInfo.processInfo.environment["ROADSAVE_TEST_LOG"].flatMap(Log.Level.init(rawValue:)) ?? .error

    init() throws {
        root =
            FileManager.default.temporaryDirectory.appendingPathComponent("rs-det-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        recordsEndpoint = "ipc://\(root)/records"
        controlEndpoint = "ipc://\(root)/control"
        eventsEndpoint = "ipc://\(root)/events"
        detectionDirectory = root + "/detect"
        var configuration = IngestConfiguration()
        configuration.gatewayEndpoint = "ipc://\(root)/gateways"
        configuration.recordsEndpoint = recordsEndpoint
        configuration.dataDirectory = root + "/ingest"
        configuration.applications = ["app-1", "app-2"]
        configuration.logLevel = Self.logLevel
        journalPath = DataDirectory.file(Journal.fileName, in: configuration.dataDirectory)
        ingestConfiguration = configuration

        let observed = observed
        let (gatewayEndpoint, eventsEndpoint) = (configuration.gatewayEndpoint, eventsEndpoint)
        reactor = Reactor(name: "detection-test", context: try ZMQContext())
        reactor.start { loop in
            let gateway = try loop.socket(.dealer)
            try gateway.connect(gatewayEndpoint)
            let side = TestSide(gateway: gateway)
            loop.setValue(side)
            loop.onReadable(gateway) { socket in
                while let frames = try? socket.receive(dontWait: true) {
                    guard frames.count == 2, let ack = try? Acknowledgement.decode(frames[1], contentType: .msgpack)
                    else { continue }
                    observed.add(ack, batch: String(decoding: frames[0], as: UTF8.self))
                }
            }
            side.outbox = try FeedClient(loop: loop, endpoint: eventsEndpoint, log: Self.quiet) {
                [unowned side] header, items in
                observed.addReply()
                if let error = header.error {
                    observed.addOutboxError(error)
                    loop.schedule(after: 0.2) { side.fetchOutbox() }
                    return
                }
                guard header.feed == side.outboxFeed else {
                    // First contact (or a new store): read it from its start.
                    observed.addFeed(header.feed)
                    side.outboxFeed = header.feed
                    side.outboxPosition = 0
                    side.fetchOutbox()
                    return
                }
                for item in items {
                    do {
                        let event = try EventBody.decode(item)
                        observed.add(
                            OutboxItem(event: event, json: event.json(), at: MonotonicClock.now(), replyTo: header.to))
                    } catch {
                        observed.addOutboxError("unreadable outbox item: \(error)")
                    }
                }
                side.outboxPosition = header.to
                side.fetchOutbox()
            }
            side.fetchOutbox()
        }
        try startIngest()
    }

    // MARK: Ingest

    /// Starts sensor-ingest on the rig's journal (it runs from the rig's start; tests stop and start it again).
    func startIngest() throws {
        let service = try IngestService(configuration: ingestConfiguration)
        let finished = Finished()
        try lock.withLock {
            guard ingest == nil else { throw RigError("ingest is already running") }
            ingest = (service, finished)
        }
        Thread {
            do {
                try service.run()
                finished.finish(nil)
            } catch { finished.finish(error) }
        }.start()
    }

    /// Stops sensor-ingest gracefully and waits until it is down (its endpoints stay unanswered meanwhile).
    func stopIngest() async throws {
        guard let (service, finished) = lock.withLock({ ingest }) else { return }
        service.stop()
        try await until("ingest stopped", timeout: 10) { finished.isDone }
        lock.withLock { ingest = nil }
        if let error = finished.error { throw error }
    }

    // MARK: Detection

    /// Starts detection on the rig's data directory with `platform`. `stoppedAtOnce`: its graceful stop is asked
    /// before it runs, so it comes right after the setup (while the stored inputs wait to be re-run).
    @discardableResult
    func startDetection(
        platform: ScriptedPlatform = ScriptedPlatform(), checkpointInterval: Double = 0.3,
        deviceMemoryIdle: Double = 3600, silentJournalGrace: Double = 10,
        stoppedAtOnce: Bool = false
    ) throws -> DetectionService {
        var configuration = DetectionConfiguration()
        configuration.recordsEndpoints = [recordsEndpoint]
        configuration.controlEndpoint = controlEndpoint
        configuration.eventsEndpoint = eventsEndpoint
        configuration.dataDirectory = detectionDirectory
        configuration.checkpointInterval = checkpointInterval
        configuration.deviceMemoryIdle = deviceMemoryIdle
        configuration.silentJournalGrace = silentJournalGrace
        configuration.logLevel = Self.logLevel
        let service = try DetectionService(configuration: configuration, platform: platform)
        let finished = Finished()
        try lock.withLock {
            guard running == nil else { throw RigError("detection is already running") }
            running = (service, finished)
            platforms.append(platform)
        }
        if stoppedAtOnce { service.stop() }
        Thread {
            do {
                try service.run()
                finished.finish(nil)
            } catch { finished.finish(error) }
        }.start()
        return service
    }

    /// Graceful stop (platform calls in flight answered or given up, a last checkpoint); waits until it is down.
    func stopDetection() async throws {
        guard let (service, finished) = lock.withLock({ running }) else { return }
        service.stop()
        try await until("detection stopped", timeout: 20) { finished.isDone }
        lock.withLock { running = nil }
        if let error = finished.error { throw error }
    }

    /// Stops detection as a crash would leave it: no wait for the platform, no last checkpoint.
    func abandonDetection() async throws {
        guard let (service, finished) = lock.withLock({ running }) else { return }
        service.abandonForTest()
        try await until("detection abandoned", timeout: 10) { finished.isDone }
        lock.withLock { running = nil }
        if let error = finished.error { throw error }
    }

    // MARK: Gateway

    /// Sends a batch to ingest and waits for its acknowledgement; throws unless every record was accepted.
    func send(_ records: [SensorRecord], batch: String) async throws {
        let body = RecordBatch.encodeBatch(records, as: .msgpack)
        try await reactor.run { loop in
            _ = try loop.value(TestSide.self)!.gateway.send([Array(batch.utf8), ContentType.msgpack.frame, body])
        }
        try await until("acknowledgement of \(batch)") { observed.ack(batch) != nil }
        let ack = observed.ack(batch)!
        guard ack.accepted == records.count else { throw RigError("\(batch): \(ack)") }
    }

    // MARK: Control

    /// Sends a control command as a REQ client would (`["", json]`) and returns the reply; asked again on a new
    /// socket while detection is down or re-running its inputs.
    func control(_ json: String, timeout: Double = 20) async throws -> ControlAnswer {
        let deadline = MonotonicClock.now() + timeout
        while MonotonicClock.now() < deadline {
            let id = lock.withLock {
                nextControlID += 1
                return nextControlID
            }
            let (endpoint, observed) = (controlEndpoint, observed)
            try await reactor.run { loop in
                let side = loop.value(TestSide.self)!
                let socket = try loop.socket(.dealer)
                try socket.connect(endpoint)
                side.controls[id] = socket
                loop.onReadable(socket) { socket in
                    while let frames = try? socket.receive(dontWait: true) {
                        if let body = frames.last { observed.addControlReply(body, id: id) }
                    }
                }
                _ = try socket.send([[], Array(json.utf8)], dontWait: true)
            }
            let asked = MonotonicClock.now()
            while observed.controlReply(id) == nil, MonotonicClock.now() - asked < 3 {
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            try await reactor.run { loop in
                let side = loop.value(TestSide.self)!
                if let socket = side.controls.removeValue(forKey: id) { loop.close(socket) }
            }
            guard let reply = observed.controlReply(id) else { continue }
            let answer = ControlAnswer(json: try JSONParser.parse(reply))
            if answer.error == "recovering" {
                try await Task.sleep(nanoseconds: 50_000_000)
                continue
            }
            return answer
        }
        throw RigError("no control reply to \(json) within \(timeout) s")
    }

    // MARK: The outbox reader

    /// The reader acknowledges what it reads only up to `position` (`.max`: everything), from its next request on.
    func acknowledge(through position: UInt64) async throws {
        try await reactor.run { loop in
            let side = loop.value(TestSide.self)!
            side.acknowledgeLimit = position
            side.fetchOutbox()
        }
    }

    /// Events read so far, first delivery of each eventID, in the order read.
    var uniqueEvents: [OutboxItem] {
        var seen = Set<String>()
        return observed.outbox.filter { seen.insert($0.event.eventID).inserted }
    }

    // MARK: Looking into the stores

    /// What detection's store holds (read through a connection of the caller's own).
    struct StoreView {
        var checkpointInput: Int64?
        var positions: [String: UInt64]
        var inputs: [(seq: Int64, input: DetectionInput)]
        var outboxPositions: [UInt64]
        var outboxEventIDs: [String]
    }

    func storeView() throws -> StoreView {
        let state = try SQLiteDatabase(path: DataDirectory.file("detection.sqlite", in: detectionDirectory))
        defer { state.close() }
        let database = try SQLiteDatabase(path: DataDirectory.file("outbox.sqlite", in: detectionDirectory))
        defer { database.close() }
        var view = StoreView(checkpointInput: nil, positions: [:], inputs: [], outboxPositions: [], outboxEventIDs: [])
        // Detection opens its store on its own thread: until it has made its tables, the store holds nothing yet
        // (a test asking that early must wait for it, not fail).
        func tables(_ database: SQLiteDatabase) throws -> Set<String> {
            var names: Set<String> = []
            try database.statement("SELECT name FROM sqlite_master WHERE type = 'table'").query {
                names.insert($0.text(0))
            }
            return names
        }
        guard try tables(state).isSuperset(of: ["checkpoint", "positions"]),
            try tables(database).isSuperset(of: ["inputs", "outbox"])
        else { return view }
        try state.statement("SELECT input FROM checkpoint WHERE id = 1").query { view.checkpointInput = $0.integer(0) }
        try state.statement("SELECT feed, position FROM positions").query {
            view.positions[$0.text(0)] = $0.unsigned(1)
        }
        let decoder = JSONDecoder()
        // Inputs a written checkpoint holds may linger until they are deleted: they are not the store's any more.
        try database.statement("SELECT seq, body FROM inputs WHERE seq > ? ORDER BY seq").query(
            view.checkpointInput ?? 0
        ) { row in
            view.inputs.append((row.integer(0), try decoder.decode(DetectionInput.self, from: Data(row.text(1).utf8))))
        }
        try database.statement("SELECT position, event_id FROM outbox ORDER BY position").query { row in
            view.outboxPositions.append(row.unsigned(0))
            view.outboxEventIDs.append(row.text(1))
        }
        return view
    }

    /// Devices in detection's checkpoint.
    func storedDeviceCount() throws -> Int {
        let database = try SQLiteDatabase(path: DataDirectory.file("detection.sqlite", in: detectionDirectory))
        defer { database.close() }
        return Int(try database.integer("SELECT count(*) FROM devices") ?? 0)
    }

    /// The newest position in ingest's journal.
    func journalHead() throws -> UInt64 {
        let database = try SQLiteDatabase(path: journalPath)
        defer { database.close() }
        return UInt64(try database.integer("SELECT coalesce(max(position), 0) FROM chunks") ?? 0)
    }

    /// How far detection has applied the journal, by what its store says: the checkpoint's position or the last
    /// records input after it.
    func appliedPosition() throws -> UInt64 {
        let view = try storeView()
        var position = view.positions.values.max() ?? 0
        for case (_, .records(_, _, let to, _)) in view.inputs { position = max(position, to) }
        return position
    }

    // MARK: Waiting and the end

    func until(_ what: String, timeout: Double = 20, _ condition: () throws -> Bool) async throws {
        let deadline = MonotonicClock.now() + timeout
        while MonotonicClock.now() < deadline {
            if try condition() { return }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        if try condition() { return }
        throw RigError(
            "timed out after \(timeout) s waiting for \(what) (outbox reader: feeds \(observed.feedIDs), "
                + "\(observed.outboxReplies) replies, \(observed.outbox.count) items, errors \(observed.errors))")
    }

    /// Runs `body` with a new rig, which is finished afterwards whatever happens.
    static func with(_ body: (DetectionRig) async throws -> Void) async throws {
        let rig = try DetectionRig()
        do {
            try await body(rig)
        } catch {
            await rig.finish()
            throw error
        }
        await rig.finish()
    }

    /// Stops everything and removes the directory.
    func finish() async {
        try? await stopDetection()
        for platform in lock.withLock({ platforms }) { platform.release() }
        try? await stopIngest()
        reactor.stop()
        _ = await reactor.finished()
        try? FileManager.default.removeItem(atPath: root)
    }
}
