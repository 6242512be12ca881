import Foundation
import Testing

@testable import DetectionEngine

/// Records a journal's retention deleted before detection read them (`JournalGap`), as the core decides: the reply
/// that shows them, what the core keeps and asks the shell to do, what it does not say twice, the operator's
/// acknowledgement, and a restart from a checkpoint with the store's gaps.
@Suite struct JournalGapTests {
    static let shard = "0/2"

    /// A live core of shard 0/2 over a journal of ten chunks (a minute's drive in tens of records), the first six
    /// deleted: it has asked for what follows position 0, unanswered.
    static func driver(deletedThrough: UInt64 = 6) -> CoreDriver {
        var options = DetectionCore.Options(checkpointInterval: 2)
        options.shard = shard
        var driver = DetectionCoreTests.driver(options: options)
        let drive = DetectionCoreTests.drive(seconds: 100)
        for batch in stride(from: 0, to: 100, by: 10) { driver.store(Array(drive[batch..<batch + 10])) }
        driver.deletedThrough = deletedThrough
        return driver
    }

    static func reply(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test func aReplyShowingRecordsDeletedAfterThePositionHeldIsAGapAndReadingGoesOn() throws {
        var driver = Self.driver()
        #expect(driver.outstanding?.after == 0, "a fresh store: position 0")
        driver.answer()
        let expected = JournalGap(
            journal: driver.feed, endpoint: "tcp://ingest:5551", shard: Self.shard, position: 0,
            deletedThrough: 6)
        #expect(driver.gapsReported == [expected])
        #expect(driver.core.journalGaps == [expected] && driver.core.unacknowledgedGaps == [expected])
        #expect(driver.core.counts.journalGapsFound == 1)
        // What remains (chunks 7–10) is read and applied: the gap blocks nothing.
        #expect(driver.core.counts.recordsRead == 40)
        #expect(driver.core.journals[0].position == 10)
        driver.run(3)
        #expect(driver.gapsReported.count == 1, "once: later requests ask from past what was deleted")
    }

    @Test func noGapWhenThePositionHeldIsAlreadyPastWhatWasDeleted() {
        // The store's checkpoint is at 8: everything deleted (through 6) had been read.
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: DetectionCoreTests.app, .fetched(DetectionCoreTests.settings), now: nil)
        var driver = CoreDriver(
            core: DetectionCore(
                options: .init(), fleet: fleet, checkpointPositions: ["journal-1": 8],
                journalEndpoints: ["tcp://ingest:5551"], at: CoreDriver.start))
        let drive = DetectionCoreTests.drive(seconds: 100)
        for batch in stride(from: 0, to: 100, by: 10) { driver.store(Array(drive[batch..<batch + 10])) }
        driver.deletedThrough = 6
        driver.start()
        driver.answer()
        #expect(driver.outstanding?.after == 8)
        driver.run(1)
        #expect(driver.gapsReported.isEmpty && driver.core.journalGaps.isEmpty)
        // A journal naming a deleted position that is not above the one asked from says nothing lost either.
        var evicted = NoEvictedDevices()
        let actions = driver.core.journalReplied(
            0,
            JournalAnswer(
                feed: driver.feed, after: 10, to: 10, head: 10,
                deletedThrough: 10),
            chunks: [], at: driver.time, evicted: &evicted)
        #expect(!actions.contains { if case .journalGap = $0 { true } else { false } })
        #expect(driver.core.journalGaps.isEmpty)
    }

    @Test func anOperatorAcknowledgesTheGapsAndTheyAreNotSaidAgain() throws {
        var driver = Self.driver()
        driver.answer()
        driver.operatorCommand(.acknowledgeJournalGaps)
        #expect(driver.gapsAcknowledged.count == 1 && driver.gapsAcknowledged[0].map(\.position) == [0])
        #expect(driver.core.unacknowledgedGaps.isEmpty)
        #expect(
            driver.core.journalGaps.map(\.acknowledged) == [true], "kept, so that the same hole is not reported again")
        let reply = try Self.reply(try #require(driver.replies.last))
        #expect(reply["ok"] as? Bool == true && reply["acknowledged"] as? Int == 1)
        #expect((reply["gaps"] as? [[String: Any]])?.first?["deletedThrough"] as? Int == 6)
        #expect(driver.logs.contains("info control command"))
        // Nothing more to acknowledge: no store write, a reply that says 0.
        driver.operatorCommand(.acknowledgeJournalGaps)
        #expect(driver.gapsAcknowledged.count == 1)
        #expect(try Self.reply(try #require(driver.replies.last))["acknowledged"] as? Int == 0)
    }

    @Test func aKnownHoleThatGrowsIsSaidAgainAndNeedsAcknowledgingAgain() {
        // Everything of the shard is gone and nothing new came: every reply is empty and asks from 0 again.
        var driver = Self.driver(deletedThrough: 10)
        driver.answer()
        driver.run(1)
        #expect(driver.gapsReported.map(\.deletedThrough) == [10], "the same hole, said once however often it is asked")
        driver.operatorCommand(.acknowledgeJournalGaps)
        // Two more batches arrive and are deleted before they are read (the size limit).
        driver.store(DetectionCoreTests.drive("other", seconds: 10))
        driver.store(DetectionCoreTests.drive("other", seconds: 10, start: Script.start + 100))
        driver.deletedThrough = 12
        driver.run(1)
        #expect(driver.gapsReported.map(\.deletedThrough) == [10, 12])
        #expect(driver.core.unacknowledgedGaps.map(\.deletedThrough) == [12])
        #expect(driver.core.journalGaps.count == 1 && driver.core.counts.journalGapsFound == 1)
    }

    @Test func aCoreRestoredFromItsCheckpointAndTheStoresGapsKeepsThemAndSaysNothingNew() throws {
        var first = Self.driver()
        first.answer()
        first.run(2.1)
        let order = try #require(first.checkpoints.last)
        first.finishCheckpoint()
        #expect(order.positions[first.feed] == 10)
        let kept = first.core.journalGaps

        // A restart from that checkpoint: the gap is still there, unacknowledged, and reading past it says nothing.
        var options = DetectionCore.Options()
        options.shard = Self.shard
        func restored(positions: [String: UInt64], gaps: [JournalGap]) -> CoreDriver {
            var fleet = DeviceFleet()
            _ = fleet.settingsFetched(app: DetectionCoreTests.app, .fetched(DetectionCoreTests.settings), now: nil)
            var driver = CoreDriver(
                core: DetectionCore(
                    options: options, fleet: fleet, checkpointPositions: positions,
                    journalGaps: gaps, journalEndpoints: ["tcp://ingest:5551"],
                    at: first.time))
            driver.time = first.time
            driver.journal = first.journal
            driver.deletedThrough = first.deletedThrough
            driver.start()
            driver.answer()
            driver.run(1)
            return driver
        }
        let second = restored(positions: order.positions, gaps: kept)
        #expect(second.core.unacknowledgedGaps == kept)
        #expect(second.gapsReported.isEmpty && second.core.counts.journalGapsFound == 0)

        // A restart before any checkpoint (position 0 again) meets the same hole: known, not reported again.
        let third = restored(positions: [:], gaps: kept)
        #expect(third.gapsReported.isEmpty && third.core.unacknowledgedGaps == kept)
        #expect(third.core.counts.recordsRead == 40)
    }
}
