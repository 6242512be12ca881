import Foundation
import Logging
import RoadSaveModel

@testable import DetectionEngine

/// Drives a `DetectionCore` as detection's shell does, without sockets, sleeps or a store: one in-memory journal
/// that answers the core's fetches when the test says so, a clock the test moves, and the core's actions kept (the
/// commits as a store would keep them, platform calls to answer, checkpoints to write).
struct CoreDriver {
    var core: DetectionCore
    /// The journal: chunk `n` is at position `n + 1`.
    var journal: [JournalChunkRecords] = []
    let feed: String
    var time: DetectionTime
    /// Every commit, as stored, and the inputs in the order stored.
    private(set) var commits: [DetectionCommit] = []
    var storedInputs: [DetectionInput] { commits.flatMap(\.inputs) }
    var events: [RoadSaveEvent] { commits.flatMap(\.events) }
    var unapplied: [UnappliedRecord] { commits.flatMap(\.unapplied) }
    private(set) var calls: [PlatformCall] = []
    private(set) var checkpoints: [CheckpointOrder] = []
    private(set) var forgotten: Int64?
    private(set) var replies: [[UInt8]] = []
    private(set) var logs: [String] = []
    /// The `journalGap` actions, in order, and the gaps of each `journalGapsAcknowledged`.
    private(set) var gapsReported: [JournalGap] = []
    private(set) var gapsAcknowledged: [[JournalGap]] = []
    /// Per journal position below which the journal's retention deleted everything (its reply says so when a
    /// request asks from before it); 0: nothing deleted.
    var deletedThrough: UInt64 = 0
    private(set) var stopped = false
    /// The request the journal has not answered yet.
    private(set) var outstanding: JournalFetch?
    var evicted = NoEvictedDevices()

    static let start = DetectionTime(wall: 1_780_000_000, monotonic: 1000)

    init(options: DetectionCore.Options = .init(), feed: String = "journal-1", core: DetectionCore? = nil) {
        self.feed = feed
        time = Self.start
        self.core =
            core
            ?? DetectionCore(
                options: options, fleet: DeviceFleet(options: options.fleet),
                journalEndpoints: ["tcp://ingest:5551"], at: Self.start)
    }

    mutating func start() {
        take(core.start(at: time, evicted: &evicted))
    }

    /// Appends a batch of records to the journal (with its gateway's header when `gateway` is given).
    mutating func store(_ records: [SensorRecord], gateway: String? = nil, watermark: Double? = nil, shard: Int = 0) {
        journal.append(JournalChunkRecords(records: records, gateway: gateway, shard: shard, watermark: watermark))
    }

    /// The journal answers the outstanding request with what it holds (at most `items` chunks).
    @discardableResult
    mutating func answer(items: Int = 256) -> Bool {
        guard let fetch = outstanding else { return false }
        outstanding = nil
        guard let feedAsked = fetch.feed else {
            take(
                core.journalReplied(
                    0, JournalAnswer(feed: feed, after: 0, to: 0, head: UInt64(journal.count)), chunks: [],
                    at: time, evicted: &evicted))
            return true
        }
        precondition(feedAsked == feed)
        let after = Int(fetch.after)
        let through = fetch.through.map { Int($0) } ?? min(journal.count, after + items)
        // Chunks at or below `deletedThrough` are gone (retention deletes a shard's oldest first).
        let first = max(after, Int(deletedThrough))
        let chunks = first < through ? Array(journal[first..<through]) : []
        // Where the devices asked about have their last records.
        let watched = fetch.watch.map { device in
            UInt64(journal.lastIndex { $0.records.contains { $0.device == device } }.map { $0 + 1 } ?? 0)
        }
        let to = chunks.isEmpty && fetch.through == nil ? fetch.after : UInt64(max(after, through))
        take(
            core.journalReplied(
                0,
                JournalAnswer(
                    feed: feed, after: fetch.after, to: to, head: UInt64(journal.count),
                    watched: watched,
                    deletedThrough: fetch.after < deletedThrough ? deletedThrough : nil),
                chunks: chunks, at: time, evicted: &evicted))
        return true
    }

    /// The shell's clock moves on by `seconds`, a tick every tenth of a second; `journalAnswers`: the journal
    /// answers each request at once meanwhile (false: it is down, or the link).
    mutating func run(_ seconds: Double, journalAnswers: Bool = true) {
        let end = time.monotonic + seconds
        while time.monotonic < end - 1e-9 {
            time.monotonic += 0.1
            time.wall += 0.1
            if journalAnswers { answer() }
            take(core.tick(at: time, evicted: &evicted))
        }
    }

    /// Answers the platform calls made so far (crashes `high`, settings the defaults).
    mutating func answerPlatform(settings: DetectionSettings = DetectionSettings()) {
        let pending = calls
        calls = []
        for call in pending {
            let answer: PlatformAnswer =
                switch call {
                case .settings(let app): .settings(app: app, fetch: .fetched(settings))
                case .evaluation(let device, let candidate):
                    .verdict(device: device, crashID: candidate.crashID, outcome: .verdict(.high))
                case .commandSettings(let waiting, _): .commandSettings(waiting: waiting, fetch: .fetched(settings))
                }
            take(core.platformAnswered(answer, at: time, evicted: &evicted))
        }
    }

    mutating func command(_ request: ControlRequest) {
        let text = String(decoding: try! JSONEncoder().encode(request), as: UTF8.self)
        take(
            core.commandArrived(
                .init(target: ControlTarget(frames: [[1]], key: nil), request: request, text: text),
                at: time, evicted: &evicted))
    }

    mutating func operatorCommand(_ command: OperatorCommand) {
        take(core.operatorCommandArrived(command, from: ControlTarget(frames: [[1]], key: "alice"), at: time))
    }

    mutating func stop() {
        take(core.stopRequested(at: time))
    }

    /// Writes the checkpoint the core asked for (or fails it).
    mutating func finishCheckpoint(failing: Bool = false) {
        guard let order = checkpoints.last else { return }
        take(
            core.checkpointWritten(
                generation: order.generation, outcome: failing ? .failed("disk full") : .written(cost: 0.01),
                at: time))
    }

    mutating func take(_ actions: [DetectionCoreAction]) {
        for action in actions {
            switch action {
            case .fetch(_, let fetch): outstanding = fetch
            case .callPlatform(let call): calls.append(call)
            case .commit(let commit):
                commits.append(commit)
                replies += commit.replies.map(\.1)
                core.committed(lastInput: commit.inputs.isEmpty ? nil : Int64(storedInputs.count))
            case .reply(_, let bytes): replies.append(bytes)
            case .writeCheckpoint(let order): checkpoints.append(order)
            case .forgetInputs(let input): forgotten = input
            case .journalGap(let gap): gapsReported.append(gap)
            case .journalGapsAcknowledged(let gaps): gapsAcknowledged.append(gaps)
            case .log(let level, let message, _): logs.append("\(level.rawValue) \(message)")
            case .stop: stopped = true
            }
        }
    }
}
