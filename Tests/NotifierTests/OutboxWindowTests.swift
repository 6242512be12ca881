import Testing

@testable import NotifierService

@Suite struct OutboxWindowTests {
    @Test func readsAWindowAndRefillsAtHalf() {
        var window = OutboxWindow(capacity: 10)
        #expect(window.entriesToRead == 10)
        window.read(Array(1...10), asked: 10)
        #expect(window.lastRead == 10)
        #expect(window.entriesToRead == nil)
        window.settled(4)
        #expect(window.entriesToRead == nil) // 6 in hand: more than half
        window.settled(1)
        #expect(window.entriesToRead == 5)
        window.read([11, 12], asked: 5)
        // A short read: the outbox is empty past 12 until something new is stored.
        #expect(window.inHand == 7)
        window.settled(7)
        #expect(window.entriesToRead == nil)
        window.stored()
        #expect(window.entriesToRead == 10)
        window.read([], asked: 10)
        #expect(window.lastRead == 12)
        #expect(window.entriesToRead == nil)
    }
}
