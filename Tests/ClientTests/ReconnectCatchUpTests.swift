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

    @Test func anEndpointThatRefusedIsNotAskedAgain() {
        var plan = ReconnectCatchUp(known: nil)
        plan.connected(at: 0)
        #expect(plan.due(at: 0, seen: nil) == .head)
        plan.giveUp()
        plan.connected(at: 4)
        #expect(plan.due(at: 4, seen: 9) == nil)
        #expect(plan.due(at: 6, seen: 9) == nil)
    }
}

/// A catch-up after a reconnect that the endpoint leaves unanswered (issue 43's loss drill): asked again after
/// pauses of 1, 2, 4, 8, 8 s, live events held until one is answered, the caller's way after six.
@Suite struct ReconnectCatchUpRetryTests {
    @Test func anUnansweredCatchUpIsAskedAgainWithLiveEventsHeldUntilItIsAnswered() {
        var plan = ReconnectCatchUp(known: 12)
        plan.connected(at: 0)
        plan.connected(at: 10)
        #expect(plan.due(at: 10, seen: 20) == .after(20))
        #expect(!plan.holdsLive)
        #expect(plan.unanswered(at: 20) == true)
        #expect(plan.holdsLive)
        #expect(plan.due(at: 20.5, seen: 20) == nil)
        #expect(plan.due(at: 21, seen: 20) == .after(20))
        #expect(plan.unanswered(at: 31) == true)
        #expect(plan.due(at: 32.9, seen: 20) == nil)
        #expect(plan.due(at: 33, seen: 20) == .after(20))
        plan.caughtUp()
        #expect(!plan.holdsLive)
        #expect(plan.unansweredInARow == 0)
        #expect(plan.due(at: 100, seen: 25) == nil)
    }

    @Test func pausesDoubleToTheLongestThenTheCallersWayApplies() {
        var plan = ReconnectCatchUp(known: 3)
        plan.connected(at: 0)
        plan.connected(at: 1)
        #expect(plan.due(at: 1, seen: 3) == .after(3))
        var now = 1.0
        for pause in [1.0, 2, 4, 8, 8] {
            #expect(plan.unanswered(at: now) == true)
            #expect(plan.due(at: now + pause - 0.01, seen: 3) == nil, "pause \(pause)")
            now += pause
            #expect(plan.due(at: now, seen: 3) == .after(3), "pause \(pause)")
        }
        #expect(plan.unansweredInARow == ReconnectCatchUp.unansweredLimit - 1)
        #expect(plan.unanswered(at: now) == false)
        plan.giveUp()
        #expect(!plan.holdsLive)
        #expect(plan.due(at: now + 100, seen: 3) == nil)
    }

    @Test func aReconnectWhileHeldAsksAgainAtOnce() {
        var plan = ReconnectCatchUp(known: 0)
        plan.connected(at: 0)
        plan.connected(at: 5)
        #expect(plan.due(at: 5, seen: 9) == .after(9))
        #expect(plan.unanswered(at: 15) == true)
        plan.connected(at: 15.5)
        #expect(plan.holdsLive)
        #expect(plan.due(at: 15.5, seen: 9) == .after(9))
    }
}
