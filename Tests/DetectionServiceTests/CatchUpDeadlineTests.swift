import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionService
@testable import IngestService

/// Detection far behind on its journal (a restart after an outage, a flood): a device that crashed and fell silent
/// must have its crash decided when its own records are read and its deadline comes, not after the whole backlog of
/// other devices' records.
@Suite(.serialized) struct CatchUpDeadlineTests {
    /// Parked devices of another application, a fix a second each: records that take detection a while to read
    /// and give no events.
    static func backlog(devices: Int, seconds: Int, start: Double) -> [[SensorRecord]] {
        (0..<seconds).map { second in
            (0..<devices).map { device in
                SensorRecord(
                    device: DeviceID(app: "app-2", user: "parked-\(device)"), seq: UInt64(second),
                    t: start + Double(second),
                    payload: .location(
                        LocationFix(
                            latitude: -33.95, longitude: 18.5 + Double(device) * 1e-3,
                            speed: 0, horizontalAccuracy: 8)))
            }
        }
    }

    @Test func aSilentDevicesCrashIsDecidedWhileTheBacklogIsStillBeingRead() async throws {
        // A drive, a 45 g impact, a second at rest, then nothing: the phone is gone. Its crash is decided
        // `crashDecisionDelay` (3 s) after the impact, on the clock once its records are read.
        let crashed = Streams.drive(user: "crashed", drive: 60, impactG: 45, standstill: 1)
        // Its follow-up, `crashFollowUpDelay` (10 s) after the decision, comes on the clock too.
        let expected = Streams.replay(crashed).filter { $0.name == "crashDetected" || $0.name == "crashFollowUp" }
        #expect(expected.map(\.name) == ["crashDetected", "crashFollowUp"], "the premise: a crash and its follow-up")
        try await DetectionRig.with { rig in
            try await rig.send(crashed, batch: "crashed")
            // The backlog after it, written into the journal directly with ingest stopped (sending it through the
            // gateway would take longer than reading it): 40 devices × 10,000 s.
            try await rig.stopIngest()
            do {
                let journal = try Journal(
                    directory: rig.root + "/ingest", shards: IngestConfiguration().shards,
                    log: DetectionRig.quiet)
                defer { journal.close() }
                for batch in Self.backlog(devices: 40, seconds: 10_000, start: Streams.start).chunked(into: 25) {
                    let records = batch.flatMap { $0 }
                    for record in records where !journal.knows(record.device) { _ = journal.admit(record.device) }
                    try journal.append([Journal.Batch(id: nil, records: records)])
                }
            }
            try rig.startIngest()
            let head = try rig.journalHead()
            // No checkpoint: the stored inputs show what detection did in which order.
            try rig.startDetection(platform: ScriptedPlatform(settings: Streams.settings), checkpointInterval: 3600)
            try await rig.until("the crash in the outbox", timeout: 120) {
                rig.uniqueEvents.contains { $0.event.name == "crashDetected" }
            }
            let crash = try #require(rig.uniqueEvents.first { $0.event.name == "crashDetected" })
            #expect(crash.json == expected[0].json(), "the crash of a replay")
            try await rig.until("the crash's follow-up in the outbox", timeout: 120) {
                rig.uniqueEvents.contains { $0.event.name == "crashFollowUp" }
            }
            let followUp = try #require(rig.uniqueEvents.first { $0.event.name == "crashFollowUp" })
            #expect(followUp.json == expected[1].json(), "the follow-up of a replay, its watch ended by the clock")
            try await rig.until("the backlog read", timeout: 300) { try rig.appliedPosition() >= head }
            // Decided by a tick of the crashed device alone, with records of the backlog read after it.
            let inputs = try rig.storeView().inputs.map(\.input)
            let tickAhead = try #require(
                inputs.firstIndex { input in
                    if case .deviceTick(_, let devices) = input { devices.contains(crashed[0].device) } else { false }
                }, "no tick of the crashed device while detection was behind")
            let readAfter = inputs[(tickAhead + 1)...].compactMap { input -> UInt64? in
                if case .records(_, _, let to, _) = input { to } else { nil }
            }
            #expect(readAfter.count >= 3, "the crash waited for the backlog: \(readAfter.count) reads after it")
            #expect(
                !inputs[..<tickAhead].contains { if case .tick = $0 { true } else { false } },
                "a full tick came first: detection was not behind")
            // A restart re-runs the stored inputs, the device's tick among them: the same crash, without asking
            // the platform again.
            let outbox = try rig.storeView().outboxEventIDs
            try await rig.abandonDetection()
            let again = ScriptedPlatform(settings: Streams.settings)
            try rig.startDetection(platform: again, checkpointInterval: 3600)
            try await rig.until("the re-run done", timeout: 300) {
                try rig.storeView().inputs.contains { if case .resumed = $0.input { true } else { false } }
            }
            // Long enough for a crash not re-run to be raised again by the clock (quiet time counts from the restart).
            try await Task.sleep(nanoseconds: UInt64((Streams.settings.crashDecisionDelay + 2) * 1e9))
            #expect(again.candidates.isEmpty, "the crash was raised again instead of re-run")
            #expect(try rig.storeView().outboxEventIDs == outbox)
        }
    }
}

extension Array {
    func chunked(into size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
