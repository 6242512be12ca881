import Testing
@testable import Wire

@Suite("Sequences and heartbeats")
struct SequenceTrackerTests {
    @Test func counterStartsAtOne() {
        var counter = SequenceCounter()
        #expect(counter.last == 0)
        #expect(counter.next() == 1)
        #expect(counter.next() == 2)
        #expect(counter.last == 2)
    }

    @Test func firstInOrderGapDuplicate() {
        var tracker = SequenceTracker()
        #expect(tracker.observe(producer: "a", sequence: 1) == .first)
        #expect(tracker.observe(producer: "a", sequence: 2) == .inOrder)
        #expect(tracker.observe(producer: "a", sequence: 3) == .inOrder)
        #expect(tracker.observe(producer: "a", sequence: 7) == .gap(missing: 4...6))
        #expect(tracker.observe(producer: "a", sequence: 8) == .inOrder)
        #expect(tracker.observe(producer: "a", sequence: 10) == .gap(missing: 9...9))
        #expect(tracker.observe(producer: "a", sequence: 10) == .duplicateOrOld)
        #expect(tracker.observe(producer: "a", sequence: 5) == .duplicateOrOld)
        // A duplicate does not move the position.
        #expect(tracker.observe(producer: "a", sequence: 11) == .inOrder)
        #expect(tracker.lastSequence("a") == 11)
    }

    @Test func lateJoinerStartsAnywhere() {
        var tracker = SequenceTracker()
        #expect(tracker.observe(producer: "a", sequence: 500) == .first)
        #expect(tracker.observe(producer: "a", sequence: 501) == .inOrder)
    }

    @Test func producersAreIndependent() {
        var tracker = SequenceTracker()
        #expect(tracker.observe(producer: "a", sequence: 1) == .first)
        #expect(tracker.observe(producer: "b", sequence: 1) == .first)
        #expect(tracker.observe(producer: "a", sequence: 2) == .inOrder)
        #expect(tracker.observe(producer: "b", sequence: 3) == .gap(missing: 2...2))
        #expect(tracker.knownProducers == ["a", "b"])
    }

    @Test func sequenceOneAgainIsARestart() {
        var tracker = SequenceTracker()
        _ = tracker.observe(producer: "a", sequence: 1)
        _ = tracker.observe(producer: "a", sequence: 2)
        _ = tracker.observe(producer: "a", sequence: 3)
        #expect(tracker.observe(producer: "a", sequence: 1) == .restarted)
        #expect(tracker.observe(producer: "a", sequence: 2) == .inOrder)
        // Whatever came before: ZeroMQ does not redeliver, so a 1 from a known producer is a new counter, even
        // right after its first message…
        var other = SequenceTracker()
        _ = other.observe(producer: "b", sequence: 4)
        #expect(other.observe(producer: "b", sequence: 1) == .restarted)
        var third = SequenceTracker()
        _ = third.observe(producer: "c", sequence: 1)
        #expect(third.observe(producer: "c", sequence: 1) == .restarted)
        // …while any other number at or below the last is old.
        #expect(third.observe(producer: "c", sequence: 2) == .inOrder)
        #expect(third.observe(producer: "c", sequence: 2) == .duplicateOrOld)
    }

    @Test func heartbeatsCarryTheLastSequence() {
        var tracker = SequenceTracker()
        #expect(tracker.observeHeartbeat(producer: "a", sequence: 0) == .first)
        #expect(tracker.observe(producer: "a", sequence: 1) == .inOrder)
        #expect(tracker.observe(producer: "a", sequence: 2) == .inOrder)
        // Idle: the heartbeat repeats the last number.
        #expect(tracker.observeHeartbeat(producer: "a", sequence: 2) == .inOrder)
        #expect(tracker.observeHeartbeat(producer: "a", sequence: 2) == .inOrder)
        // Messages 3…5 were lost at the tail of a burst: only the heartbeat tells.
        #expect(tracker.observeHeartbeat(producer: "a", sequence: 5) == .gap(missing: 3...5))
        #expect(tracker.observe(producer: "a", sequence: 6) == .inOrder)
        // The producer came back with a fresh counter.
        #expect(tracker.observeHeartbeat(producer: "a", sequence: 0) == .restarted)
        #expect(tracker.observe(producer: "a", sequence: 1) == .inOrder)
    }

    @Test func headersDispatchByKind() {
        var tracker = SequenceTracker()
        let record = EnvelopeHeader(producer: "p", sequence: 1, kind: .record, sentAt: 0)
        let heartbeat = EnvelopeHeader(producer: "p", sequence: 1, kind: .heartbeat, sentAt: 0)
        let event = EnvelopeHeader(producer: "p", sequence: 2, kind: .event, sentAt: 0)
        #expect(tracker.observe(record, at: 10) == .first)
        #expect(tracker.observe(heartbeat, at: 11) == .inOrder)
        #expect(tracker.observe(event, at: 12) == .inOrder)
        #expect(tracker.lastHeard("p") == 12)
    }

    @Test func silentProducersAreDeadNotIdle() {
        var tracker = SequenceTracker()
        _ = tracker.observe(producer: "busy", sequence: 1, at: 100)
        _ = tracker.observeHeartbeat(producer: "idle", sequence: 0, at: 100)
        _ = tracker.observe(producer: "dead", sequence: 1, at: 100)
        _ = tracker.observe(producer: "untimed", sequence: 1)
        for second in 101...110 {
            _ = tracker.observe(producer: "busy", sequence: UInt64(second - 99), at: Double(second))
            if second.isMultiple(of: 3) {
                _ = tracker.observeHeartbeat(producer: "idle", sequence: 0, at: Double(second))
            }
        }
        #expect(tracker.lastHeard("busy") == 110)
        #expect(tracker.lastHeard("idle") == 108)
        #expect(tracker.lastHeard("dead") == 100)
        #expect(tracker.lastHeard("nobody") == nil)
        // Heartbeats every 3 s; dead after 3 intervals (9 s) of nothing.
        #expect(tracker.silentProducers(now: 110, after: 9) == ["dead", "untimed"])
        #expect(tracker.silentProducers(now: 109, after: 9) == ["untimed"])
        #expect(tracker.silentProducers(now: 118, after: 9) == ["dead", "idle", "untimed"])
        // A duplicate still shows the producer is alive.
        _ = tracker.observe(producer: "dead", sequence: 1, at: 117)
        #expect(tracker.silentProducers(now: 118, after: 9) == ["idle", "untimed"])
        tracker.forget(producer: "untimed")
        #expect(tracker.silentProducers(now: 118, after: 9) == ["idle"])
        #expect(tracker.observe(producer: "untimed", sequence: 9) == .first)
    }

    @Test func producerIDsPerShard() {
        #expect(EnvelopeHeader.producerID(process: "ingest-1", shard: 3) == "ingest-1#3")
    }
}
