import GatewayKit
import RoadSaveModel
import Testing

@testable import DetectionEngine

@Suite struct RecordOrderingTests {
    func record(_ t: Double, seq: UInt64? = nil, steps: Int = 0) -> SensorRecord {
        SensorRecord(device: Script.device, seq: seq, t: Script.start + t, payload: .steps(steps))
    }

    @Test func smallDisorderIsPutInOrder() {
        var ordering = RecordOrdering(options: .init(window: 5))
        var released: [SensorRecord] = []
        for (index, t) in [0.0, 2, 1, 4, 3, 9, 8, 12, 20].enumerated() {
            let (ready, rejected) = ordering.insert(record(t, seq: UInt64(index)))
            #expect(rejected.isEmpty)
            released += ready
        }
        released += ordering.flush()
        #expect(released.map { $0.t - Script.start } == [0, 1, 2, 3, 4, 8, 9, 12, 20])
    }

    @Test func recordsAreHeldOnlyForTheWindow() {
        var ordering = RecordOrdering(options: .init(window: 5))
        #expect(ordering.insert(record(0, seq: 0)).ready.isEmpty)
        #expect(ordering.insert(record(4, seq: 1)).ready.isEmpty)
        #expect(ordering.insert(record(6, seq: 2)).ready.map(\.seq) == [0])
        #expect(ordering.bufferedCount == 2)
    }

    @Test func aRepeatedSeqIsADuplicate() {
        var ordering = RecordOrdering(options: .init(window: 5))
        _ = ordering.insert(record(0, seq: 7))
        let (ready, rejected) = ordering.insert(record(0.5, seq: 7, steps: 99))
        #expect(ready.isEmpty)
        #expect(rejected.map(\.1) == [.duplicate])
        // Long after release too.
        _ = ordering.insert(record(100, seq: 8))
        #expect(ordering.insert(record(0, seq: 7)).rejected.map(\.1) == [.duplicate])
    }

    @Test func anIdenticalRecordWithoutSeqIsADuplicate() {
        var ordering = RecordOrdering()
        _ = ordering.insert(record(0))
        #expect(ordering.insert(record(0)).rejected.map(\.1) == [.duplicate])
        #expect(ordering.insert(record(0, steps: 1)).rejected.isEmpty)
    }

    @Test func aRecordTooLateForTheWindowIsReportedNotApplied() {
        var ordering = RecordOrdering(options: .init(window: 5))
        _ = ordering.insert(record(0, seq: 0))
        _ = ordering.insert(record(10, seq: 1)) // releases t=0
        let (ready, rejected) = ordering.insert(record(-3, seq: 2))
        #expect(ready.isEmpty)
        #expect(rejected.map(\.1) == [.late(appliedUpTo: Script.start)])
    }

    @Test func aTimestampFarInTheFutureIsDroppedWhenTheStreamGoesOn() {
        var ordering = RecordOrdering(options: .init(window: 5, futureJump: 900))
        var released: [SensorRecord] = []
        released += ordering.insert(record(0, seq: 0)).ready
        released += ordering.insert(record(1, seq: 1)).ready
        // A clock glitch: a year ahead.
        #expect(ordering.insert(record(365 * 86_400, seq: 2)).ready.isEmpty)
        let (ready, rejected) = ordering.insert(record(2, seq: 3))
        released += ready
        #expect(rejected.count == 1)
        #expect(rejected.first?.0.seq == 2)
        if case .farInFuture = rejected.first?.1 {} else { Issue.record("expected farInFuture, got \(rejected)") }
        released += ordering.insert(record(20, seq: 4)).ready
        released += ordering.flush()
        #expect(released.map(\.seq) == [0, 1, 3, 4])
    }

    @Test func aLongSilenceIsConfirmedByTheRecordsAfterIt() {
        var ordering = RecordOrdering(options: .init(window: 5, futureJump: 900))
        var released: [SensorRecord] = []
        released += ordering.insert(record(0, seq: 0)).ready
        released += ordering.insert(record(3600, seq: 1)).ready // the next morning, say
        let (ready, rejected) = ordering.insert(record(3601, seq: 2))
        released += ready
        #expect(rejected.isEmpty)
        released += ordering.flush()
        #expect(released.map(\.seq) == [0, 1, 2])
    }

    @Test func outOfOrderAndDuplicatedInputGivesTheSameEventsAsCleanInput() {
        let (commute, _, _) = TripScenarioTests.commute()
        var (crash, _) = CrashScenarioTests.impactWhileDriving()
        crash.records = crash.records.map {
            var r = $0
            r.t += 3 * 3600
            r.seq = r.seq.map { $0 + 100_000 }
            return r
        }
        let clean = commute.records + crash.records
        var random = SplitMix64(seed: 3)
        // Shift each record up to 3 s later in arrival order and send 5 % twice.
        var messy = clean.map { ($0, $0.t + random.unit() * 3) }
        for index in stride(from: 0, to: clean.count, by: 20) {
            messy.append((clean[index], clean[index].t + random.unit() * 3))
        }
        messy.sort { $0.1 < $1.1 }
        #expect(messy.map(\.0.t) != messy.map(\.0.t).sorted(), "the input really is out of order")

        var a = Harness()
        a.feedOrdered(clean)
        a.finish()
        var b = Harness()
        b.feedOrdered(messy.map(\.0))
        b.finish()
        #expect(a.events.count >= 3)
        #expect(a.events == b.events)
    }
}
