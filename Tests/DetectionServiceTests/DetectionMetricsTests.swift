import DetectionEngine
import Testing

@testable import DetectionService

@Suite("Detection's lag for /metrics")
struct DetectionMetricsTests {
    @Test func lagInRecordsScalesPositionsByTheRecordsTheyHeld() {
        var counts = DetectionCore.Counts()
        #expect(DetectionMetrics.lagRecords(positionsBehind: 7, counts: counts) == 7)
        counts.positionsRead = 4
        counts.recordsRead = 1_000
        #expect(DetectionMetrics.lagRecords(positionsBehind: 2, counts: counts) == 500)
        #expect(DetectionMetrics.lagRecords(positionsBehind: 0, counts: counts) == 0)
    }

    @Test func everyKindAndReasonIsShownFromTheStart() {
        let families = DetectionMetrics().families(
            fleet: .init(), counts: .init(),
            gauges: .init(
                positionsBehind: 0, lagSeconds: nil, devicesInMemory: 0, devicesOutOfMemory: 0, tripsInProgress: 0,
                outbox: nil, platformCallsInFlight: 0, checkpoints: 0, streams: 0))
        let events = families.first { $0.name == "roadsave_detection_events_total" }
        #expect(
            events?.samples.map { $0.labels[0].value } == [
                "crashDetected", "crashFollowUp", "tripBehaviour", "tripDidEnd", "tripDidStart",
            ])
        let dismissals = families.first { $0.name == "roadsave_detection_crash_dismissals_total" }
        #expect(dismissals?.samples.count == 7)
        #expect(!families.contains { $0.name == "roadsave_detection_lag_seconds" })
    }
}
