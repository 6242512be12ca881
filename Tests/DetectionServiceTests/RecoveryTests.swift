import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionService

/// Detection stopped as a crash would stop it (no graceful stop, no last checkpoint) at several points of a stream of
/// five devices, then started again on the same data directory: the outbox must end with exactly the events a replay
/// of the same records gives (same eventIDs, same JSON), each redelivery identical to the first.
///
/// The platform after the restart answers crash evaluations differently (`medium`, not `high`): a verdict stored
/// before the cut must be re-run from the store, not asked again, or the crash's JSON would change.
@Suite(.serialized) struct RecoveryTests {
    enum Cut: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// No checkpoint yet: the restart re-runs every input from the start of the journal.
        case beforeAnyCheckpoint
        /// Right after a checkpoint that covers everything read.
        case afterFirstCheckpoint
        /// A checkpoint, then records and both crash verdicts after it: the records are fetched again by exact range.
        case betweenCheckpoints
        /// A crash evaluation asked and not answered, a checkpoint taken meanwhile: the restarted detection asks the
        /// platform again and only then reports the crash.
        case evaluationUnansweredAfterCheckpoint
        /// The same with no checkpoint at all: the question comes from the re-run.
        case evaluationUnansweredWithoutCheckpoint
        /// Both crashes reported, no checkpoint, then a restart stopped gracefully before it re-ran its inputs: that
        /// stop must not checkpoint a fleet that has not re-run them (nor forget the inputs).
        case stoppedWhileRecovering

        var testDescription: String { rawValue }
    }

    /// Batches cut away from the impacts (at 90.5 s and 110.5 s), so that no crash decision falls in a pause.
    static let batchCuts: [Double] = [25, 50, 75, 130, 160]

    @Test(arguments: Cut.allCases) func aRestartGivesTheEventsOfAReplay(_ cut: Cut) async throws {
        let records = Streams.fleet()
        let reference = Streams.replay(records)
        // The premise: every event of the stream comes from its records (none needs the clock to run on after them).
        #expect(Streams.replay(records, finishing: false).map(\.eventID) == reference.map(\.eventID))
        #expect(
            reference.count == 16 && reference.filter { $0.name == "crashDetected" }.count == 2
                && reference.filter { $0.name == "crashFollowUp" }.count == 2
                && reference.filter { $0.name == "tripBehaviour" }.count == 4)
        let batches = Streams.batches(records, cuttingAt: Self.batchCuts)
        #expect(batches.count == 6 && batches.map(\.count).reduce(0, +) == records.count)

        try await DetectionRig.with { rig in
            try await Self.run(cut, rig: rig, records: records, batches: batches)
        }
    }

    static func run(_ cut: Cut, rig: DetectionRig, records: [SensorRecord], batches: [[SensorRecord]]) async throws {
        let sender = BatchSender(rig: rig, batches: batches)
        let first: ScriptedPlatform
        switch cut {
        case .beforeAnyCheckpoint:
            first = ScriptedPlatform()
            try rig.startDetection(platform: first, checkpointInterval: 3600)
            try await sender.send(through: 2)
            try await rig.until("the first three batches applied") { try appliedEverything(rig) }
            try await rig.abandonDetection()
            let view = try rig.storeView()
            #expect(view.checkpointInput == nil)
            #expect(view.inputs.contains { if case .records = $0.input { true } else { false } })

        case .afterFirstCheckpoint:
            first = ScriptedPlatform()
            try rig.startDetection(platform: first, checkpointInterval: 0.3)
            try await sender.send(through: 1)
            try await rig.until("a checkpoint of the first two batches") { try checkpointCoversEverything(rig) }
            try await rig.abandonDetection()
            #expect(try checkpointCoversEverything(rig))

        case .betweenCheckpoints:
            first = ScriptedPlatform()
            try rig.startDetection(platform: first, checkpointInterval: 1.5)
            try await sender.send(through: 1)
            try await rig.until("a checkpoint of the first two batches") { try checkpointCoversEverything(rig) }
            try await sender.send(through: 3)
            try await rig.until("batches three and four applied, both crashes reported") {
                try appliedEverything(rig) && crashesReported(rig) == ["crash-1", "crash-2"]
            }
            try await rig.abandonDetection()
            let view = try rig.storeView()
            let checkpoint = try #require(view.checkpointInput)
            #expect(
                view.inputs.contains { entry in
                    if case .records = entry.input { entry.seq > checkpoint } else { false }
                }, "the cut came after a checkpoint of everything: no range to fetch again")
            #expect(try (view.positions.values.max() ?? 0) < rig.journalHead())

        case .stoppedWhileRecovering:
            first = ScriptedPlatform()
            try rig.startDetection(platform: first, checkpointInterval: 3600)
            try await sender.send(through: 3)
            try await rig.until("four batches applied, both crashes reported") {
                try appliedEverything(rig) && crashesReported(rig) == ["crash-1", "crash-2"]
            }
            try await rig.abandonDetection()
            let before = try rig.storeView()
            try rig.startDetection(
                platform: ScriptedPlatform(verdict: .low), checkpointInterval: 3600, stoppedAtOnce: true)
            try await rig.stopDetection()
            let after = try rig.storeView()
            #expect(after.checkpointInput == nil, "a fleet that had not re-run its inputs was checkpointed")
            #expect(after.inputs.map(\.seq) == before.inputs.map(\.seq), "inputs were lost at a stop during recovery")

        case .evaluationUnansweredAfterCheckpoint, .evaluationUnansweredWithoutCheckpoint:
            let withCheckpoint = cut == .evaluationUnansweredAfterCheckpoint
            first = ScriptedPlatform(holding: ["crash-1"])
            try rig.startDetection(platform: first, checkpointInterval: withCheckpoint ? 0.3 : 3600)
            try await sender.send(through: batches.count - 1)
            try await rig.until("every batch applied, crash-1's evaluation asked, crash-2 reported") {
                try appliedEverything(rig) && first.candidates.contains { $0.user == "crash-1" }
                    && crashesReported(rig) == ["crash-2"]
            }
            if withCheckpoint {
                try await rig.until("a checkpoint of everything") { try checkpointCoversEverything(rig) }
            }
            try await rig.abandonDetection()
            #expect(crashesReported(rig) == ["crash-2"], "crash-1 was reported without a verdict")
            let view = try rig.storeView()
            #expect((view.checkpointInput != nil) == withCheckpoint)
            #expect(
                view.inputs.allSatisfy { entry in
                    if case .verdict(let device, _, _) = entry.input { device.user != "crash-1" } else { true }
                })
        }

        // Crashes reported before the cut keep the first platform's verdict; the others get the second's.
        let reportedBeforeCut = crashesReported(rig)
        let heldCrashIDs = first.candidates.filter { !reportedBeforeCut.contains($0.user) }.map(\.crashID)
        let expected = Streams.replay(records) { reportedBeforeCut.contains($0.user) ? .high : .medium }
        let second = ScriptedPlatform(verdict: .medium)
        try rig.startDetection(platform: second, checkpointInterval: 0.3)
        try await sender.send(through: batches.count - 1)
        try await rig.until("every event of the replay in the outbox", timeout: 40) {
            Set(rig.uniqueEvents.map(\.event.eventID)).isSuperset(of: expected.map(\.eventID))
        }
        for crashID in heldCrashIDs {
            #expect(
                second.candidates.contains { $0.crashID == crashID },
                "the restarted detection did not ask again about the crash left unanswered")
        }
        #expect(
            !second.candidates.contains { reportedBeforeCut.contains($0.user) },
            "a verdict stored before the cut was asked for again")

        let expectedJSON = Dictionary(uniqueKeysWithValues: expected.map { ($0.eventID, $0.json()) })
        var firstDelivery: [String: String] = [:]
        for item in rig.observed.outbox {
            #expect(expectedJSON[item.event.eventID] == item.json, "not an event of the replay: \(item.json)")
            if let earlier = firstDelivery[item.event.eventID] {
                #expect(earlier == item.json, "a redelivery differs from the first delivery")
            } else {
                firstDelivery[item.event.eventID] = item.json
            }
        }
        #expect(firstDelivery == expectedJSON)
        #expect(rig.observed.feedIDs.count == 1, "the outbox changed identity across the restart")
        #expect(rig.observed.errors.isEmpty, "\(rig.observed.errors)")
    }

    static func appliedEverything(_ rig: DetectionRig) throws -> Bool {
        try rig.appliedPosition() == rig.journalHead()
    }

    static func checkpointCoversEverything(_ rig: DetectionRig) throws -> Bool {
        let view = try rig.storeView()
        return try view.checkpointInput != nil && view.positions.values.max() == rig.journalHead()
    }

    /// Users whose crash the outbox reader has read.
    static func crashesReported(_ rig: DetectionRig) -> Set<String> {
        Set(rig.uniqueEvents.filter { $0.event.name == "crashDetected" }.map(\.event.device.user))
    }
}

/// Sends a stream's batches in order, each once.
final class BatchSender: @unchecked Sendable {
    // @unchecked: used by one test task at a time.
    let rig: DetectionRig
    let batches: [[SensorRecord]]
    private(set) var sent = 0

    init(rig: DetectionRig, batches: [[SensorRecord]]) {
        self.rig = rig
        self.batches = batches
    }

    /// Sends the batches up to index `last` not sent yet, each after the previous one's acknowledgement.
    func send(through last: Int) async throws {
        while sent <= last {
            try await rig.send(batches[sent], batch: "batch-\(sent)")
            sent += 1
        }
    }
}
