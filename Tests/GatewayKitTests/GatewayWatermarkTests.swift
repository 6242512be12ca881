import GatewayKit
import Testing

/// What a gateway may promise: nothing it has not had acknowledged (but the carrier), nothing it has read and not
/// sealed, and nothing older than its input's disorder allows.
@Suite struct GatewayWatermarkTests {
    @Test func nothingIsPromisedBeforeAnythingIsRead() {
        var watermark = GatewayWatermark(maximumDisorder: 10)
        do {
            let promised = watermark.promise(excluding: nil)
            #expect(promised == nil)
        }
    }

    @Test func thePromiseStaysTheDisorderBehindTheNewestTimeRead() {
        var watermark = GatewayWatermark(maximumDisorder: 10)
        for t in stride(from: 100.0, through: 200, by: 1) { watermark.read(t) }
        watermark.seal(batch: 1)
        do {
            let promised = watermark.promise(excluding: 1)
            #expect(promised == 190)
        }
        watermark.acknowledged(batch: 1)
        do {
            let promised = watermark.promise(excluding: nil)
            #expect(promised == 190)
        }
    }

    /// A batch not acknowledged holds every promise but its own: lost and sent again, it lands after batches sent
    /// later, and its records must not be below what those promised.
    @Test func anUnacknowledgedBatchHoldsEveryPromiseButItsOwn() {
        var watermark = GatewayWatermark(maximumDisorder: 10)
        for t in stride(from: 100.0, through: 150, by: 1) { watermark.read(t) }
        watermark.seal(batch: 1)
        for t in stride(from: 151.0, through: 300, by: 1) { watermark.read(t) }
        watermark.seal(batch: 2)
        do {
            let promised = watermark.promise(excluding: 1)
            #expect(promised == 151, "batch 2 not acknowledged")
        }
        do {
            let promised = watermark.promise(excluding: 2)
            #expect(promised == 100, "batch 1 not acknowledged")
        }
        do {
            let promised = watermark.promise(excluding: nil)
            #expect(promised == 100)
        }
        watermark.acknowledged(batch: 1)
        do {
            let promised = watermark.promise(excluding: 2)
            #expect(promised == 290)
        }
        do {
            let promised = watermark.promise(excluding: nil)
            #expect(promised == 151)
        }
    }

    @Test func recordsReadAndNotSealedHoldThePromise() {
        var watermark = GatewayWatermark(maximumDisorder: 0)
        watermark.read(50)
        watermark.seal(batch: 1)
        watermark.acknowledged(batch: 1)
        watermark.read(60)
        watermark.read(55)
        do {
            let promised = watermark.promise(excluding: nil)
            #expect(promised == 55)
        }
    }

    @Test func aRecordBelowAPromiseIsReported() {
        var watermark = GatewayWatermark(maximumDisorder: 5)
        do {
            let kept = watermark.read(100)
            #expect(kept)
        }
        watermark.seal(batch: 1)
        watermark.acknowledged(batch: 1)
        do {
            let promised = watermark.promise(excluding: nil)
            #expect(promised == 95)
        }
        do {
            let kept = watermark.read(96)
            #expect(kept)
        }
        do {
            let kept = watermark.read(94)
            #expect(!kept, "more out of order than the disorder allows")
        }
    }

    /// A time far ahead (a broken clock) moves the frontier only once the next record confirms the jump.
    @Test func aJumpFarAheadWaitsForTheNextRecord() {
        var watermark = GatewayWatermark(maximumDisorder: 10, futureJump: 900)
        watermark.read(1000)
        watermark.read(1000 + 5000)
        watermark.read(1001)
        #expect(watermark.frontier == 1001)
        watermark.read(9000)
        watermark.read(9001)
        #expect(watermark.frontier == 9001)
    }

    /// A record read for another stream of the same input (another ingest's devices) moves the newest time read,
    /// so a stream whose own devices are quiet still moves on, but holds back no promise of this one.
    @Test func aRecordOfAnotherStreamMovesTheFrontierAndHoldsNothing() {
        var watermark = GatewayWatermark(maximumDisorder: 10)
        watermark.read(100)
        watermark.seal(batch: 1)
        watermark.acknowledged(batch: 1)
        for t in stride(from: 101.0, through: 300, by: 1) { watermark.observe(t) }
        #expect(watermark.frontier == 300)
        do {
            let promised = watermark.promise(excluding: nil)
            #expect(promised == 290, "the other stream's records are not this one's to wait for")
        }
        // Behind the promise for this stream is behind, whichever stream moved it.
        do {
            let kept = watermark.read(285)
            #expect(!kept)
        }
        // A jump far ahead is confirmed by the next record of either stream.
        watermark.observe(300 + 5000)
        #expect(watermark.frontier == 300)
        watermark.read(300 + 5001)
        #expect(watermark.frontier == 5301)
    }
}
