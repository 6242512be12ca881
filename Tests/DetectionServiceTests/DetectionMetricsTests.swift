@testable import DetectionService
import Testing

@Suite("Detection's lag for /metrics")
struct DetectionMetricsTests {
    @Test func lagInRecordsScalesPositionsByTheRecordsTheyHeld() {
        var metrics = DetectionMetrics()
        #expect(metrics.lagRecords(positionsBehind: 7) == 7)
        metrics.read(positions: 4, records: 1_000)
        #expect(metrics.lagRecords(positionsBehind: 2) == 500)
        #expect(metrics.lagRecords(positionsBehind: 0) == 0)
    }

    @Test func lagInSecondsCountsFromTheLastTimeEveryJournalWasReadToItsHead() {
        var metrics = DetectionMetrics()
        #expect(metrics.lagSeconds(now: 10, caughtUp: false) == nil)
        #expect(metrics.lagSeconds(now: 10, caughtUp: true) == 0)
        metrics.caughtUp(at: 12)
        #expect(metrics.lagSeconds(now: 20, caughtUp: false) == 8)
        #expect(metrics.lagSeconds(now: 20, caughtUp: true) == 0)
    }

    @Test func everyKindAndReasonIsShownFromTheStart() {
        let families = DetectionMetrics().families(fleet: .init(), recordsRead: 0, gauges: .init(
            positionsBehind: 0, lagSeconds: nil, devicesInMemory: 0, devicesOutOfMemory: 0, tripsInProgress: 0,
            outbox: nil, platformCallsInFlight: 0, checkpoints: 0, streams: 0))
        let events = families.first { $0.name == "roadsave_detection_events_total" }
        #expect(events?.samples.map { $0.labels[0].value } == ["crashDetected", "tripDidEnd", "tripDidStart"])
        let dismissals = families.first { $0.name == "roadsave_detection_crash_dismissals_total" }
        #expect(dismissals?.samples.count == 7)
        #expect(!families.contains { $0.name == "roadsave_detection_lag_seconds" })
    }
}
