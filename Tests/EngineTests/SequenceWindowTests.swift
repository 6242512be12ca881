import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// The duplicate-`seq` memory of one device: a high-water mark and a bitmap below it.
@Suite struct SequenceWindowTests {
    @Test func valuesTakenWithinTheWindowAreFoundAndOthersAreNot() {
        var window = SequenceWindow(size: 100)
        #expect(!window.contains(0))
        for seq in [0, 1, 2, 5, 4, 7] as [UInt64] { window.insert(seq) }
        for seq in [0, 1, 2, 4, 5, 7] as [UInt64] { #expect(window.contains(seq)) }
        // Skipped over (3, 6) or never reached (8): not taken.
        for seq in [3, 6, 8, 1_000] as [UInt64] { #expect(!window.contains(seq)) }
        #expect(window.values == [0, 1, 2, 4, 5, 7])
        #expect(window.runs == [0, 3, 4, 2, 7, 1], "first value and count of each run")
    }

    @Test func aValueFurtherBehindThanTheWindowIsForgotten() {
        var window = SequenceWindow(size: 100)
        for seq in 0..<250 as Range<UInt64> { window.insert(seq) }
        #expect(window.contains(150) && window.contains(249))
        #expect(!window.contains(149), "100 values are remembered: 150…249")
        #expect(window.values == Array(150..<250))
        #expect(window.runs == [150, 100])
    }

    @Test func theRingDoesNotConfuseAValueWithOneARingOlder() {
        // 128 bits of ring for a window of 100: after skipping, old bits must not read as new values.
        var window = SequenceWindow(size: 100)
        for seq in 0..<10 as Range<UInt64> { window.insert(seq) }
        window.insert(130)
        for seq in 31..<130 as Range<UInt64> { #expect(!window.contains(seq), "\(seq) was never taken") }
        #expect(window.contains(130))
        // A jump further than the whole ring clears it.
        window.insert(10_000)
        #expect(window.values == [10_000])
    }

    @Test func takingAValueFarBehindRestartsTheNumbering() {
        // A gateway that starts numbering again from 0: its new records are remembered from there on.
        var window = SequenceWindow(size: 100)
        for seq in 5_000..<5_050 as Range<UInt64> { window.insert(seq) }
        window.insert(0)
        window.insert(1)
        #expect(window.contains(0) && window.contains(1))
        #expect(!window.contains(5_049), "the old numbers are forgotten")
        #expect(window.values == [0, 1])
    }

    @Test func aDeviceWithoutSeqHoldsNoBitmap() {
        let window = SequenceWindow(size: 1024)
        #expect(window.values.isEmpty && !window.contains(0))
    }

    // MARK: In the reorder stage

    func record(_ t: Double, seq: UInt64) -> SensorRecord {
        SensorRecord(device: Script.device, seq: seq, t: Script.start + t, payload: .steps(0))
    }

    @Test func duplicatesInsideTheWindowAreCaughtAndFarBehindOnesAreJudgedByTime() {
        var ordering = RecordOrdering(options: .init(window: 5, sequenceMemory: 64))
        for seq in 0..<200 as Range<UInt64> { #expect(ordering.insert(record(Double(seq), seq: seq)).rejected.isEmpty) }
        // Within 64 of the highest (199), even after release: a duplicate.
        #expect(ordering.insert(record(140, seq: 140)).rejected.map(\.1) == [.duplicate])
        #expect(ordering.insert(record(199, seq: 199)).rejected.map(\.1) == [.duplicate])
        // Further behind: no longer known by its seq; its time shows it is late.
        let released = ordering.released!
        #expect(ordering.insert(record(100, seq: 100)).rejected.map(\.1) == [.late(appliedUpTo: released)])
        // A restarted numbering with a time that is fine is taken, and its repeats are caught.
        #expect(ordering.insert(record(200, seq: 0)).rejected.isEmpty)
        #expect(ordering.insert(record(200.5, seq: 0)).rejected.map(\.1) == [.duplicate])
    }

    @Test func theBufferKeepsOnlyWhatTheWindowHoldsAndAQuietFlushFreesIt() {
        var ordering = RecordOrdering(options: .init(window: 10))
        var released: [SensorRecord] = []
        for seq in 0..<1_000 as Range<UInt64> {
            var ready: [SensorRecord] = []
            var rejected: [(SensorRecord, RecordOrdering.Rejection)] = []
            ordering.insert(record(Double(seq) * 0.5, seq: seq), ready: &ready, rejected: &rejected)
            released += ready
            #expect(ordering.bufferedCount <= 21)
        }
        released += ordering.flush()
        #expect(released.map(\.seq) == (0..<1_000).map { Optional(UInt64($0)) })
        #expect(ordering.bufferedCount == 0)
    }
}
