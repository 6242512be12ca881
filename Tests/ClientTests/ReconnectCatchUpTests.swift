import Testing

@testable import RoadSaveClient

/// `roadsave tail`'s catch-ups around reconnects (issue 36): the head at the first connection when it starts from
/// now, what came after the last position seen at every later handshake, at once and again a second later.
@Suite struct ReconnectCatchUpTests {
    @Test func fromNowItAsksTheHeadOnceThenCatchesUpFromItOnAReconnect() {
        var plan = ReconnectCatchUp(known: nil)
        #expect(plan.due(at: 0, seen: nil) == nil)
        plan.connected(at: 1)
        #expect(plan.due(at: 1, seen: nil) == .head)
        #expect(plan.due(at: 1, seen: nil) == nil)
        plan.started(fromHead: 40)
        // Nothing printed since (sparse events), then the connection is renewed.
        plan.connected(at: 10)
        #expect(plan.due(at: 10, seen: nil) == .after(40))
        #expect(plan.due(at: 10.5, seen: 41) == nil)
        #expect(plan.due(at: 11, seen: 41) == .after(41))
        #expect(plan.due(at: 20, seen: 41) == nil)
    }

    @Test func afterSinceItNeedsNoHead() {
        var plan = ReconnectCatchUp(known: 12)
        plan.connected(at: 0)
        #expect(plan.due(at: 0, seen: 12) == nil)
        plan.connected(at: 5)
        #expect(plan.due(at: 5, seen: 30) == .after(30))
    }

    @Test func aLiveEventBeforeTheHeadAnswerIsNotSkipped() {
        // The first handshake came with an event already printed: that position is where catching up starts.
        var plan = ReconnectCatchUp(known: nil)
        plan.connected(at: 0)
        #expect(plan.due(at: 0, seen: 7) == nil)
        plan.connected(at: 3)
        #expect(plan.due(at: 3, seen: 7) == .after(7))
    }

    @Test func anEndpointThatDoesNotAnswerIsNotAskedAgain() {
        var plan = ReconnectCatchUp(known: nil)
        plan.connected(at: 0)
        #expect(plan.due(at: 0, seen: nil) == .head)
        plan.giveUp()
        plan.connected(at: 4)
        #expect(plan.due(at: 4, seen: 9) == nil)
        #expect(plan.due(at: 6, seen: 9) == nil)
    }
}
