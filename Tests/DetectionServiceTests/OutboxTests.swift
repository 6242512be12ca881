import DetectionEngine
import Foundation
import RoadSaveModel
import Testing

@testable import DetectionService

/// detection's outbox keeps every event until the reader (the notifier) acknowledges its position.
@Suite(.serialized) struct OutboxTests {
    @Test func eventsStayInTheOutboxUntilAcknowledged() async throws {
        let records = Streams.fleet()
        let expected = Streams.replay(records)
        try await DetectionRig.with { rig in
            try await rig.acknowledge(through: 0)
            try rig.startDetection(checkpointInterval: 0.3)
            try await rig.send(records, batch: "fleet")
            try await rig.until("every event read") { rig.uniqueEvents.count == expected.count }
            #expect(Set(rig.uniqueEvents.map(\.event.eventID)) == Set(expected.map(\.eventID)))
            #expect(rig.observed.outbox.count == expected.count, "an event was delivered twice")

            // Read, not acknowledged: every row stays while the reader goes on asking.
            func rowsStayWhileTheReaderAsks(_ positions: [UInt64]) async throws {
                let replies = rig.observed.outboxReplies
                try await rig.until("two more requests of the reader") { rig.observed.outboxReplies >= replies + 2 }
                let view = try rig.storeView()
                #expect(view.outboxPositions == positions)
            }
            let all = try rig.storeView()
            #expect(all.outboxPositions == Array(1...UInt64(expected.count)))
            #expect(
                all.outboxEventIDs == rig.observed.outbox.map(\.event.eventID), "the outbox's order is not the reader's"
            )
            try await rowsStayWhileTheReaderAsks(Array(1...UInt64(expected.count)))

            // Acknowledged through 4: those rows go, the others stay.
            try await rig.acknowledge(through: 4)
            try await rig.until("rows through 4 deleted") { try rig.storeView().outboxPositions.first == 5 }
            try await rowsStayWhileTheReaderAsks(Array(5...UInt64(expected.count)))

            try await rig.acknowledge(through: .max)
            try await rig.until("every row deleted") { try rig.storeView().outboxPositions.isEmpty }

            // After a graceful stop nothing is re-run, so nothing comes again; positions go on where they were.
            try await rig.stopDetection()
            try rig.startDetection(checkpointInterval: 0.3)
            let answer = try await rig.control(#"{"command":"raiseTestCrash","app":"app-1","user":"commute-1"}"#)
            #expect(answer.ok, "\(answer.json)")
            try await rig.until("the test crash read") { rig.uniqueEvents.count == expected.count + 1 }
            let test = try #require(rig.observed.outbox.last)
            #expect(test.event.name == "crashDetected" && test.event.device.user == "commute-1")
            #expect(test.replyTo == UInt64(expected.count + 1), "an outbox position was reused")
            #expect(rig.observed.outbox.count == expected.count + 1, "events came again after a graceful stop")
            try await rig.until("the test crash acknowledged") { try rig.storeView().outboxPositions.isEmpty }
        }
    }
}
