import Foundation
import RoadSaveTestKit
import SystemKit
import Testing
import ZeroMQ

/// The OS name of the calling thread (what `top -H` and debuggers show).
/// (Plain open/read on this thread: nothing that could hop to another thread.)
private func currentThreadName() -> String {
    let fd = open("/proc/thread-self/comm", O_RDONLY)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 64)
    let count = read(fd, &buffer, buffer.count)
    guard count > 0 else { return "" }
    return String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .newlines)
}

/// CPU time used by the calling thread, in seconds.
private func threadCPUTime() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Starts a reactor and waits until `setup` has run (work posted after start runs after setup).
private func started(
    _ name: String, _ context: ZMQContext,
    _ setup: @escaping @Sendable (ReactorLoop) throws -> Void = { _ in }
) async throws -> Reactor {
    let reactor = Reactor(name: name, context: context)
    reactor.start(setup)
    try await answer(reactor) { _ in }
    return reactor
}

/// Stops `reactor`, awaits its end, and terminates `context` (which hangs if a socket were left open).
private func shutDown(_ reactor: Reactor, _ context: ZMQContext) async throws {
    reactor.stop()
    let error = try await exitError(of: reactor)
    #expect(error == nil)
    #expect(await finishes(within: 60) { context.terminate() }, "zmq_ctx_term hung: a socket was left open")
}

@Suite("Reactor", .timeLimit(.minutes(1)))
struct ReactorTests {
    @Test("setup, posts, timers and readable handlers all run on the reactor's named thread")
    func handlersOnReactorThread() async throws {
        let context = try ZMQContext()
        let endpoint = "inproc://reactor-thread-\(UUID().uuidString)"
        let seen = Locked<[String: (thread: pthread_t, name: String)]>([:])
        let record = { @Sendable (what: String) in
            let entry = (pthread_self(), currentThreadName())
            seen.withLock { $0[what] = entry }
        }
        let reactor = try await started("zmq-test-reactor-thread", context) { loop in
            record("setup")
            let pull = try loop.socket(.pull)
            try pull.bind(endpoint)
            loop.onReadable(pull) { socket in
                while (try? socket.receive(dontWait: true)) != nil {}
                record("readable")
            }
            loop.schedule(after: 0.01) { record("timer") }
            loop.onStop { record("stop") }
        }
        #expect(reactor.post { _ in record("post") })
        let isOnThread = try await answer(reactor) { _ in reactor.isOnReactorThread }
        #expect(isOnThread)
        #expect(!reactor.isOnReactorThread)

        try await onThread {
            let context2 = context
            let push = try ZMQSocket(context2, .push)
            defer { push.close() }
            try push.connect(endpoint)
            try require(try push.send(["wake"]), "send failed")
        }
        #expect(await eventually { seen.current.count == 4 })
        reactor.stop()
        #expect(try await exitError(of: reactor, blocking: true) == nil) // wait() from a plain thread

        let entries = seen.current
        #expect(Set(entries.keys) == ["setup", "post", "timer", "readable", "stop"])
        let setupThread = try #require(entries["setup"]).thread
        #expect(pthread_equal(setupThread, pthread_self()) == 0)
        for (what, entry) in entries {
            #expect(pthread_equal(entry.thread, setupThread) != 0, "\(what) ran on another thread")
            #expect(entry.name == "zmq-test-reacto", "\(what) ran on a thread named '\(entry.name)'") // 15 bytes
        }
        #expect(await finishes(within: 60) { context.terminate() })
    }

    @Test("post from many threads and tasks: every closure runs exactly once, in per-poster order")
    func postOrdering() async throws {
        let context = try ZMQContext()
        let reactor = try await started("post-order", context)
        let log = Locked<[(poster: Int, index: Int)]>([])
        let perPoster = 2000
        let threadPosters = 4
        let taskPosters = 4

        let threadsDone = Locked(0)
        for poster in 0..<threadPosters {
            Thread {
                for index in 0..<perPoster {
                    let accepted = reactor.post { _ in log.withLock { $0.append((poster, index)) } }
                    precondition(accepted)
                }
                threadsDone.withLock { $0 += 1 }
            }.start()
        }
        await withTaskGroup(of: Void.self) { group in
            for poster in threadPosters..<(threadPosters + taskPosters) {
                group.addTask {
                    for index in 0..<perPoster {
                        reactor.post { _ in log.withLock { $0.append((poster, index)) } }
                        if index % 100 == 0 { await Task.yield() }
                    }
                }
            }
        }
        #expect(await eventually { threadsDone.current == threadPosters })
        try await answer(reactor) { _ in } // posted after everything above: when it runs, all of those have run

        let entries = log.current
        #expect(entries.count == perPoster * (threadPosters + taskPosters))
        var next = [Int](repeating: 0, count: threadPosters + taskPosters)
        var outOfOrder = 0
        for entry in entries {
            if entry.index != next[entry.poster] { outOfOrder += 1 }
            next[entry.poster] = entry.index + 1
        }
        #expect(outOfOrder == 0)
        #expect(next == [Int](repeating: perPoster, count: threadPosters + taskPosters))
        try await shutDown(reactor, context)
    }

    @Test("one-shot timers fire in deadline order, not early, roughly on time; cancel works")
    func timers() async throws {
        let context = try ZMQContext()
        let fired = Locked<[(name: String, after: Double)]>([])
        let reactor = try await started("timers", context) { loop in
            let start = loop.now
            let mark = { (name: String) in { fired.withLock { $0.append((name, loop.now - start)) } } }
            loop.schedule(after: 0.15, mark("c"))
            loop.schedule(after: 0.05, mark("a"))
            loop.schedule(at: start + 0.12, mark("at"))
            loop.schedule(after: 0.10, mark("b"))
            let cancelled = loop.schedule(after: 0.07, mark("cancelled"))
            loop.cancel(cancelled)
            #expect(!loop.isScheduled(cancelled))
            // A timer cancelled by an earlier timer due in the same round must not fire either.
            // (Same deadline: scheduling order decides, so the canceller runs first.)
            var victim: TimerID?
            loop.schedule(at: start + 0.2) { if let victim { loop.cancel(victim) } }
            victim = loop.schedule(at: start + 0.2, mark("victim"))
            loop.schedule(after: 0) { fired.withLock { $0.append(("zero", loop.now - start)) } }
        }
        #expect(await eventually { fired.current.count >= 5 })
        try await Task.sleep(for: .milliseconds(150))
        let entries = fired.current
        #expect(entries.map(\.name) == ["zero", "a", "b", "at", "c"])
        let expected = ["zero": 0.0, "a": 0.05, "b": 0.10, "at": 0.12, "c": 0.15]
        for entry in entries {
            let due = expected[entry.name] ?? 0
            #expect(entry.after >= due - 0.0005, "\(entry.name) fired early: \(entry.after) < \(due)")
            #expect(entry.after < due + 1.0, "\(entry.name) fired late: \(entry.after)")
        }
        try await shutDown(reactor, context)
    }

    @Test("many random timers, some cancelled: the rest fire once each, in deadline order")
    func randomTimers() async throws {
        let context = try ZMQContext()
        let fired = Locked<[Int]>([])
        let expectedOrder = Locked<[Int]>([])
        let reactor = try await started("random-timers", context) { loop in
            let base = loop.now + 0.01
            var generator = SystemRandomNumberGenerator()
            var plan: [(delay: Double, index: Int)] = []
            var ids: [TimerID] = []
            for index in 0..<300 {
                let delay = Double(Int.random(in: 0...200, using: &generator)) / 1000
                plan.append((delay, index))
                ids.append(loop.schedule(at: base + delay) { fired.withLock { $0.append(index) } })
            }
            var kept = Set(0..<300)
            for index in stride(from: 0, to: 300, by: 3) {
                loop.cancel(ids[index])
                kept.remove(index)
            }
            // Equal delays keep scheduling order.
            let order = plan.filter { kept.contains($0.index) }
                .sorted { ($0.delay, $0.index) < ($1.delay, $1.index) }.map(\.index)
            expectedOrder.withLock { $0 = order }
        }
        #expect(await eventually { fired.current.count >= 200 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(fired.current == expectedOrder.current)
        try await shutDown(reactor, context)
    }

    @Test("every repeats at its interval until cancelled (also from inside its own handler)")
    func repeating() async throws {
        let context = try ZMQContext()
        let ticks = Locked<[Double]>([])
        let other = Locked(0)
        let reactor = try await started("every", context) { loop in
            let start = loop.now
            var own: TimerID?
            own = loop.every(0.02) {
                let count = ticks.withLock {
                    $0.append(loop.now - start)
                    return $0.count
                }
                if count == 5, let own { loop.cancel(own) }
            }
            let second = loop.every(0.01) { other.withLock { $0 += 1 } }
            loop.schedule(after: 0.1) { loop.cancel(second) }
        }
        #expect(await eventually { ticks.current.count >= 5 })
        let otherAtCancel = other.current
        try await Task.sleep(for: .milliseconds(120))
        let times = ticks.current
        #expect(times.count == 5)
        for (index, time) in times.enumerated() {
            let due = 0.02 * Double(index + 1)
            #expect(time >= due - 0.0005, "tick \(index) early: \(time)")
            #expect(time < due + 1.0, "tick \(index) late: \(time)")
        }
        // Ten intervals before its cancel: at most ten ticks (a late loop skips the ticks it missed, never bunches
        // them), at least one however late the loop ran. That it repeats is `own`'s five ticks.
        #expect(otherAtCancel >= 1 && otherAtCancel <= 10, "\(otherAtCancel)")
        #expect(other.current == otherAtCancel)
        try await shutDown(reactor, context)
    }

    @Test("an idle reactor sleeps in zmq_poll (no spinning), and wakes for timers and posts")
    func idleDoesNotSpin() async throws {
        let context = try ZMQContext()
        let reactor = try await started("idle", context) { loop in
            let pull = try loop.socket(.pull)
            try pull.bind("inproc://idle-\(UUID().uuidString)")
            loop.onReadable(pull) { _ in }
            loop.schedule(after: 60) {}
            loop.every(0.05) {}
        }
        let before = try await answer(reactor) { _ in threadCPUTime() }
        try await Task.sleep(for: .milliseconds(400))
        let after = try await answer(reactor) { _ in threadCPUTime() }
        #expect(after - before < 0.1, "the reactor thread used \(after - before) s of CPU in 0.4 s")
        try await shutDown(reactor, context)
    }

    @Test("stop(): accepted posts still run, onStop runs, sockets close, wait() returns, later posts are refused")
    func stopClosesEverything() async throws {
        let context = try ZMQContext()
        let socketBox = Unchecked<ZMQSocket>()
        let events = Locked<[String]>([])
        let reactor = try await started("stopper", context) { loop in
            let router = try loop.socket(.router)
            _ = try bindAny(router, .tcp, "stop")
            loop.onReadable(router) { _ in }
            let spare = try loop.socket(.dealer) // owned though never polled
            socketBox.value = router
            loop.onStop {
                events.withLock { $0.append("onStop router open: \(!router.isClosed) spare open: \(!spare.isClosed)") }
            }
        }
        let ran = Locked(0)
        for _ in 0..<100 { reactor.post { _ in ran.withLock { $0 += 1 } } }
        reactor.stop()
        #expect(reactor.isStopped)
        #expect(!reactor.post { _ in ran.withLock { $0 += 1000 } })

        let error = try await exitError(of: reactor, blocking: true)
        #expect(error == nil)
        #expect(ran.current == 100)
        #expect(events.current == ["onStop router open: true spare open: true"])
        #expect(socketBox.value?.isClosed == true)
        #expect(!reactor.post { _ in })
        await #expect(throws: ReactorError.stopped) { try await answer(reactor) { _ in 1 } } // refused at once
        #expect(try await exitError(of: reactor, within: 60) == nil) // already finished: finished() returns at once
        #expect(try await exitError(of: reactor, within: 60, blocking: true) == nil) // and so does wait()
        #expect(await finishes(within: 60) { context.terminate() }, "zmq_ctx_term hung: a socket was left open")
    }

    @Test("loop.stop() from a handler ends the loop")
    func stopFromHandler() async throws {
        let context = try ZMQContext()
        let reactor = Reactor(name: "self-stop", context: context)
        let count = Locked(0)
        reactor.start { loop in
            loop.every(0.01) {
                if count.withLock({
                    $0 += 1
                    return $0
                }) == 3 {
                    loop.stop()
                }
            }
        }
        #expect(try await exitError(of: reactor) == nil)
        #expect(count.current == 3)
        #expect(!reactor.post { _ in })
        context.terminate()
    }

    @Test("a throwing setup ends the loop with its error, after onStop and closing its sockets")
    func setupThrows() async throws {
        let context = try ZMQContext()
        let reactor = Reactor(name: "bad-setup", context: context)
        let stopped = Locked(false)
        reactor.start { loop in
            let pull = try loop.socket(.pull)
            try pull.bind("inproc://bad-setup")
            loop.onStop { stopped.withLock { $0 = true } }
            try pull.connect("nonsense") // throws ZMQError EINVAL
        }
        let error = try await exitError(of: reactor)
        let zmqError = try #require(error as? ZMQError)
        #expect(zmqError.code == EINVAL)
        #expect(zmqError.operation == "zmq_connect(nonsense)")
        #expect(stopped.current)
        #expect(await finishes(within: 60) { context.terminate() })
    }

    @Test("ZMQContext.shutdown() stops its reactors (ETERM is a normal exit)")
    func contextShutdownStopsReactors() async throws {
        let context = try ZMQContext()
        let stoppedAt = Locked<[Double]>([])
        let withSockets = try await started("with-sockets", context) { loop in
            let sub = try loop.socket(.sub)
            try sub.subscribe("")
            try sub.connect("tcp://127.0.0.1:9") // never answers; fine
            loop.onReadable(sub) { _ in }
            loop.onStop { stoppedAt.withLock { $0.append(MonotonicClock.now()) } }
        }
        let withoutSockets = try await started("no-sockets", context) { loop in
            loop.onStop { stoppedAt.withLock { $0.append(MonotonicClock.now()) } }
        }
        let start = MonotonicClock.now()
        context.shutdown()
        #expect(try await exitError(of: withSockets) == nil)
        #expect(try await exitError(of: withoutSockets) == nil)
        // Both stopped by the shutdown (no timers: their polls would wait forever otherwise), within exitError's
        // generous bound rather than a second, which a busy machine can exceed.
        #expect(stoppedAt.current.count == 2)
        #expect(stoppedAt.current.allSatisfy { $0 >= start }, "\(stoppedAt.current.map { $0 - start })")
        #expect(await finishes(within: 60) { context.terminate() })

        // A reactor created on a shut-down context refuses work and its wait() returns.
        let late = Reactor(name: "late", context: context)
        late.start { _ in Issue.record("setup must not run on a shut-down context") }
        #expect(!late.post { _ in })
        #expect(try await exitError(of: late) == nil)
    }

    @Test("run: async code awaits a value computed on the reactor; errors come back too")
    func runFromAsync() async throws {
        let context = try ZMQContext()
        final class Counter { var value = 0 } // non-Sendable state, kept on the loop
        let reactor = try await started("run", context) { loop in
            loop.setValue(Counter())
        }
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await answer(reactor) { loop in
                        let counter = loop.value(Counter.self)!
                        counter.value += 1
                        return counter.value
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == Array(1...50))
        await #expect(throws: TestFailure.self) {
            try await answer(reactor) { _ -> Int in throw TestFailure("boom") }
        }
        #expect(try await answer(reactor) { loop in loop.value(Counter.self)?.value } == 50)
        try await shutDown(reactor, context)
    }

    @Test("async request/reply through a reactor-owned DEALER, resumed from its readable handler")
    func asyncRequestReply() async throws {
        let context = try ZMQContext()
        // The pattern for services: the reactor owns the socket; async callers post a request with a continuation, and
        // the readable handler resumes it when the matching reply arrives.
        final class Client {
            let dealer: ZMQSocket
            var pending: [UInt64: CheckedContinuation<String, any Error>] = [:]
            var nextID: UInt64 = 0
            init(dealer: ZMQSocket) { self.dealer = dealer }
        }
        let serverReactor = try await started("echo-server", context) { loop in
            let router = try loop.socket(.router)
            try router.bind("inproc://echo")
            loop.onReadable(router) { socket in
                while let frames = try? socket.receive(dontWait: true), frames.count == 3 {
                    // [peer, requestID, body] → [peer, requestID, "echo:" + body]
                    _ = try? socket.send([frames[0], frames[1], bytes("echo:") + frames[2]], dontWait: true)
                }
            }
        }
        let clientReactor = try await started("echo-client", context) { loop in
            let dealer = try loop.socket(.dealer)
            try dealer.connect("inproc://echo")
            let client = Client(dealer: dealer)
            loop.setValue(client)
            loop.onReadable(dealer) { socket in
                while let frames = try? socket.receive(dontWait: true), frames.count == 2 {
                    guard let id = UInt64(String(decoding: frames[0], as: UTF8.self)) else { continue }
                    client.pending.removeValue(forKey: id)?.resume(
                        returning: String(decoding: frames[1], as: UTF8.self))
                }
            }
            loop.onStop {
                for continuation in client.pending.values { continuation.resume(throwing: ReactorError.stopped) }
            }
        }
        @Sendable func request(_ body: String) async throws -> String {
            try await withCheckedThrowingContinuation { continuation in
                let accepted = clientReactor.post { loop in
                    let client = loop.value(Client.self)!
                    client.nextID += 1
                    let id = client.nextID
                    do {
                        if try client.dealer.send([String(id), body], dontWait: true) {
                            client.pending[id] = continuation
                            // Every request gets a deadline, so no caller waits forever on a lost reply.
                            loop.schedule(after: 5) {
                                client.pending.removeValue(forKey: id)?.resume(
                                    throwing: TestFailure("request \(id) timed out"))
                            }
                        } else {
                            continuation.resume(throwing: TestFailure("send would block"))
                        }
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
                if !accepted { continuation.resume(throwing: ReactorError.stopped) }
            }
        }
        let replies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<20 {
                group.addTask { (index, try await request("m\(index)")) }
            }
            return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
        }
        #expect(replies.count == 20)
        for index in 0..<20 { #expect(replies[index] == "echo:m\(index)") }
        clientReactor.stop()
        serverReactor.stop()
        #expect(try await exitError(of: clientReactor) == nil)
        #expect(try await exitError(of: serverReactor) == nil)
        #expect(await finishes(within: 60) { context.terminate() })
    }

    /// Issue 36: libzmq carries out a socket's commands only when the application calls into it. A send-only PUB
    /// that is unbound must drop its connections then, not at its next send (which would reach nobody): the loop
    /// watches the `ZMQ_FD` of every socket it owns, those it never reads included.
    @Test("a send-only socket's unbind drops its peers at once, with nothing sent")
    func unbindingASendOnlySocketDropsItsPeersWithoutASend() async throws {
        let context = try ZMQContext()
        let endpoint = Locked("")
        let reactor = try await started("pub-unbind", context) { loop in
            let publisher = try loop.socket(.pub)
            try publisher.bind("tcp://127.0.0.1:0")
            endpoint.withLock { $0 = publisher.lastEndpoint }
            loop.setValue(publisher)
        }
        let subscriber = try ZMQSocket(context, .sub, linger: 0)
        let watch = try ConnectionWatch(subscriber, context: context, name: "unbind-test")
        try subscriber.subscribe("")
        try subscriber.connect(endpoint.withLock { $0 })
        var seen: [ConnectionWatch.Change] = []
        let connected = await eventually(timeout: 30) {
            seen += watch.changes()
            return seen.contains(.established)
        }
        #expect(connected, "the subscriber never connected")
        try await answer(reactor) { loop in try loop.value(ZMQSocket.self)!.unbind(endpoint.withLock { $0 }) }
        let dropped = await eventually(timeout: 30) {
            seen += watch.changes()
            return seen.contains(.lost)
        }
        #expect(dropped, "the unbound PUB kept its connection (changes: \(seen))")
        watch.close()
        subscriber.close()
        reactor.stop()
        #expect(try await exitError(of: reactor) == nil)
        #expect(await finishes(within: 60) { context.terminate() })
    }

    @Test("a reactor drains a burst of 20,000 messages pushed from another thread", arguments: Transport.allCases)
    func burst(_ transport: Transport) async throws {
        let context = try ZMQContext()
        let count = Locked(0)
        let lastSeen = Locked(-1)
        let outOfOrder = Locked(0)
        let endpoint = Locked("")
        let reactor = try await started("burst", context) { loop in
            let pull = try loop.socket(.pull)
            let resolved = try bindAny(pull, transport, "burst")
            endpoint.withLock { $0 = resolved }
            loop.onReadable(pull) { socket in
                while let frames = try? socket.receive(dontWait: true) {
                    guard frames.count == 2, let value = Int(String(decoding: frames[1], as: UTF8.self)) else {
                        outOfOrder.withLock { $0 += 1 }
                        continue
                    }
                    if value != lastSeen.current + 1 { outOfOrder.withLock { $0 += 1 } }
                    lastSeen.withLock { $0 = value }
                    count.withLock { $0 += 1 }
                }
            }
        }
        let total = 20_000
        let target = endpoint.current
        try await onThread {
            let push = try ZMQSocket(context, .push)
            defer { push.close() }
            try push.setSendTimeout(milliseconds: 5000)
            // With the default linger of 0, closing right after the last send would drop what is still queued for TCP.
            try push.setLinger(milliseconds: 5000)
            try push.connect(target)
            for index in 0..<total {
                try require(try push.send(["n", String(index)]), "send timed out at \(index)")
            }
        }
        #expect(await eventually(timeout: 60) { count.current == total })
        #expect(outOfOrder.current == 0)
        try await shutDown(reactor, context)
    }
}
