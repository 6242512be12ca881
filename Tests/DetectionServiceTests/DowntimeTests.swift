import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionService

/// Detection down for longer than a device's stop delay, while the device drives on: its gateway keeps the records
/// it could not deliver, so the time detection was down is not the device's silence. The trip must go on across the
/// restart (the events of a replay of the whole drive), not end at the restart and start again.
@Suite(.serialized) struct DowntimeTests {
    /// Long enough that a loaded machine's pauses between the test's steps stay well inside it.
    static var settings: DetectionSettings {
        var settings = Streams.settings
        settings.stopDelay = 10
        // A silent device's trip ends on the clock after this (issue 29): here as short as the stop delay, so the
        // outages below are longer than a device's silence may last.
        settings.tripOfflineGrace = 10
        return settings
    }

    /// A minute's drive, a halt at a light shorter than the stop delay, a minute more; cut in the halt.
    static func drive() throws -> (records: [SensorRecord], batches: [[SensorRecord]], expected: [RoadSaveEvent]) {
        let first = Streams.drive(user: "driver", drive: 60, standstill: 1)
        guard case .location(let halt) = first.last!.payload else { throw HaltMissing() }
        let second = Streams.drive(
            user: "driver", start: first.last!.t, drive: 60, standstill: 20,
            longitude: halt.longitude)
        var records = first + second.dropFirst()
        for index in records.indices { records[index].seq = UInt64(index) }
        let expected = Streams.replay(records, settings: Self.settings)
        #expect(expected.map(\.name) == ["tripDidStart", "tripDidEnd", "tripBehaviour"], "the premise: one trip")
        let batches = Streams.batches(records, cuttingAt: [first.last!.t - Streams.start + 0.5])
        #expect(batches.count == 2)
        return (records, batches, expected)
    }

    /// After the outage: the trip has not ended; the rest of the drive gives exactly the events of a replay.
    static func finishDrive(
        _ rig: DetectionRig,
        _ drive: (
            records: [SensorRecord], batches: [[SensorRecord]],
            expected: [RoadSaveEvent]
        )
    ) async throws {
        #expect(!rig.uniqueEvents.contains { $0.event.name == "tripDidEnd" }, "the trip ended in the outage")
        try await rig.send(drive.batches[1], batch: "after")
        try await rig.until("both events of the replay in the outbox") {
            Set(rig.uniqueEvents.map(\.event.eventID)).isSuperset(of: drive.expected.map(\.eventID))
        }
        #expect(rig.uniqueEvents.map(\.json) == drive.expected.map { $0.json() })
    }

    static func resumedInputs(_ rig: DetectionRig) throws -> Int {
        try rig.storeView().inputs.filter { if case .resumed = $0.input { true } else { false } }.count
    }

    @Test func aRestartLongerThanTheStopDelayDoesNotEndATripInProgress() async throws {
        let drive = try Self.drive()
        try await DetectionRig.with { rig in
            // No checkpoints (one may be postponed for seconds on a loaded machine): the restart re-runs the stored
            // inputs, which restore the device's last arrival from before the outage.
            try rig.startDetection(platform: ScriptedPlatform(settings: Self.settings), checkpointInterval: 3600)
            try await rig.send(drive.batches[0], batch: "before")
            try await rig.until("the first minute applied") { try RecoveryTests.appliedEverything(rig) }
            try await rig.abandonDetection()
            #expect(!rig.uniqueEvents.contains { $0.event.name == "tripDidEnd" }, "the trip ended before the outage")
            // Down for longer than the offline grace.
            try await Task.sleep(nanoseconds: UInt64((Self.settings.tripOfflineGrace + 2) * 1e9))
            try rig.startDetection(platform: ScriptedPlatform(settings: Self.settings), checkpointInterval: 3600)
            try await rig.until("detection live again") { try Self.resumedInputs(rig) == 1 }
            // The journal's first answer (a long poll of up to a second: nothing is new), then ticks of the clock:
            // the trip of a device counted silent since before the restart would end in them.
            try await Task.sleep(nanoseconds: 2_500_000_000)
            try await Self.finishDrive(rig, drive)
        }
    }

    /// The same with ingest down instead (detection runs on, its journal does not answer): the trip goes on too.
    @Test func anIngestOutageLongerThanTheStopDelayDoesNotEndATripInProgress() async throws {
        let drive = try Self.drive()
        try await DetectionRig.with { rig in
            // Waited for past the outage (by default the clock runs on without a journal silent for 10 s).
            try rig.startDetection(
                platform: ScriptedPlatform(settings: Self.settings), checkpointInterval: 3600,
                silentJournalGrace: 60)
            try await rig.send(drive.batches[0], batch: "before")
            try await rig.until("the first minute applied") { try RecoveryTests.appliedEverything(rig) }
            try await rig.stopIngest()
            try await Task.sleep(nanoseconds: UInt64((Self.settings.tripOfflineGrace + 2) * 1e9))
            #expect(try Self.resumedInputs(rig) == 0)
            try rig.startIngest()
            try await rig.until("detection hears its journal again") { try Self.resumedInputs(rig) == 1 }
            try await Task.sleep(nanoseconds: 1_000_000_000)
            try await Self.finishDrive(rig, drive)
        }
    }

    /// A journal silent for longer than `silentJournalGrace` is not waited for: the clock runs on, and a device
    /// silent since before the outage has its trip ended (a crash decided) as if ingest were there.
    @Test func aDeadIngestDoesNotHoldClockDrivenDecisionsForEver() async throws {
        let drive = try Self.drive()
        try await DetectionRig.with { rig in
            try rig.startDetection(
                platform: ScriptedPlatform(settings: Self.settings), checkpointInterval: 3600,
                silentJournalGrace: 2)
            try await rig.send(drive.batches[0], batch: "before")
            try await rig.until("the first minute applied") { try RecoveryTests.appliedEverything(rig) }
            try await rig.stopIngest()
            try await rig.until("the trip ended with ingest down", timeout: 30) {
                rig.uniqueEvents.contains { $0.event.name == "tripDidEnd" }
            }
            let end = try #require(rig.uniqueEvents.first { $0.event.name == "tripDidEnd" })
            guard case .tripDidEnd(let trip) = end.event.body else { return }
            // Silent for the offline grace (here as short as the stop delay): deviceSilent, at the last movement.
            #expect(
                trip.endReason == .deviceSilent && trip.endDate == drive.batches[0].last!.t - 1, "at the last movement")
        }
    }
}

struct HaltMissing: Error {}
