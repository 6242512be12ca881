import Foundation
import Testing
import ZeroMQ

/// Not `Sendable`: what a service keeps on its reactor thread.
private final class Tally {
    var count = 0
}

@Suite("ReactorBound", .timeLimit(.minutes(1)))
struct ReactorBoundTests {
    @Test("the value is reached and changed on its reactor's thread, from posts and runs")
    func valueOnItsReactor() async throws {
        let context = try ZMQContext()
        let reactor = Reactor(name: "zmq-test-bound", context: context)
        let tally = ReactorBound(handingOver: Tally(), to: reactor)
        reactor.start { _ in tally.value.count += 1 }
        for _ in 0..<10 { #expect(reactor.post { _ in tally.value.count += 1 }) }
        let count = try await reactor.run { _ in tally.value.count }
        #expect(count == 11)
        #expect(try await reactor.run { _ in tally.isAccessible })
        reactor.stop()
        #expect(await reactor.finished() == nil)
        context.terminate()
    }

    @Test(
        "off its reactor's thread it is not accessible: a task, a plain thread, another reactor, after the loop ended")
    func notAccessibleElsewhere() async throws {
        let context = try ZMQContext()
        let reactor = Reactor(name: "zmq-test-bound-a", context: context)
        let other = Reactor(name: "zmq-test-bound-b", context: context)
        let tally = ReactorBound(handingOver: Tally(), to: reactor)
        // Before the reactor starts, nothing may use it either (the value was handed over).
        #expect(!tally.isAccessible)
        reactor.start { _ in }
        other.start { _ in }
        #expect(try await reactor.run { _ in tally.isAccessible })
        #expect(!tally.isAccessible)
        #expect(try await onThread { tally.isAccessible } == false)
        #expect(try await other.run { _ in tally.isAccessible } == false)
        #expect(try await other.run { _ in other.isOnReactorThread && !reactor.isOnReactorThread })
        reactor.stop()
        other.stop()
        _ = await reactor.finished()
        _ = await other.finished()
        #expect(!tally.isAccessible)
        context.terminate()
    }

    @Test("made on the reactor's thread, it binds a value made there; a weak one lets its object go")
    func madeOnTheReactor() async throws {
        let context = try ZMQContext()
        let reactor = Reactor(name: "zmq-test-bound-w", context: context)
        reactor.start { _ in }
        let released = try await reactor.run { _ -> Bool in
            var tally: Tally? = Tally()
            let strong = ReactorBound(tally!, on: reactor)
            let weak = ReactorBound(WeakReference(tally!), on: reactor)
            strong.value.count = 3
            let seen = weak.value.object?.count == 3
            tally = nil
            // `strong` still holds it; only once it is gone is the weak reference empty.
            let heldByStrong = withExtendedLifetime(strong) { weak.value.object != nil }
            return seen && heldByStrong
        }
        #expect(released)
        let empty = try await reactor.run { _ -> Bool in
            let weak = ReactorBound(WeakReference(Tally()), on: reactor)
            return weak.value.object == nil
        }
        #expect(empty)
        reactor.stop()
        _ = await reactor.finished()
        context.terminate()
    }
}
