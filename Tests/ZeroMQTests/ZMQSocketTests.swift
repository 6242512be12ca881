import CZeroMQ
import Foundation
import RoadSaveTestKit
import SystemKit
import Testing
import ZeroMQ

@Suite("ZMQSocket", .timeLimit(.minutes(1)))
struct ZMQSocketTests {
    @Test("PUSH/PULL single frame", arguments: Transport.allCases)
    func pushPullSingleFrame(_ transport: Transport) async throws {
        let received = try await onThread {
            let context = try ZMQContext()
            defer { context.terminate() }
            let pull = try ZMQSocket(context, .pull)
            defer { pull.close() }
            try pull.setReceiveTimeout(milliseconds: 5000)
            let endpoint = try bindAny(pull, transport, "push-pull-single")
            let push = try ZMQSocket(context, .push)
            defer { push.close() }
            try push.connect(endpoint)
            try require(try push.send(["hello"]), "send returned false")
            return text(try pull.receive())
        }
        #expect(received == ["hello"])
    }

    @Test("PUSH/PULL multipart with empty frames and a 1 MiB frame", arguments: Transport.allCases)
    func pushPullMultipart(_ transport: Transport) async throws {
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let frames: [[UInt8]] = [[], bytes("topic."), [], big, [0], []]
        let received = try await onThread {
            let context = try ZMQContext()
            defer { context.terminate() }
            let pull = try ZMQSocket(context, .pull)
            defer { pull.close() }
            try pull.setReceiveTimeout(milliseconds: 5000)
            let endpoint = try bindAny(pull, transport, "push-pull-multi")
            let push = try ZMQSocket(context, .push)
            defer { push.close() }
            try push.connect(endpoint)
            try require(try push.send(frames), "send returned false")
            try require(try push.send([[UInt8]()]), "send of one empty frame returned false")
            let first = try pull.receive()
            let second = try pull.receive()
            return [first, second]
        }
        #expect(received[0]?.count == frames.count)
        #expect(received[0]?.map(\.count) == frames.map(\.count))
        #expect(received[0] == frames)
        #expect(received[1] == [[]])
    }

    @Test("ROUTER/DEALER round trip with identity frames", arguments: Transport.allCases)
    func routerDealer(_ transport: Transport) async throws {
        let (atRouter, atDealer) = try await onThread {
            let context = try ZMQContext()
            defer { context.terminate() }
            let router = try ZMQSocket(context, .router)
            defer { router.close() }
            try router.setReceiveTimeout(milliseconds: 5000)
            let endpoint = try bindAny(router, transport, "router-dealer")
            let dealer = try ZMQSocket(context, .dealer)
            defer { dealer.close() }
            try dealer.setReceiveTimeout(milliseconds: 5000)
            try dealer.setIdentity(bytes("gateway-7"))
            try require(try dealer.identity() == bytes("gateway-7"), "identity not read back")
            try dealer.connect(endpoint)
            try dealer.send(["batch-1", "application/json", "[]"])
            let request = try pull(router)
            try require(request.count == 4, "ROUTER got \(request.count) frames")
            // Reply through the routing id the ROUTER saw.
            try router.send([request[0], request[1], bytes("{\"accepted\":0}")])
            let reply = try pull(dealer)
            return (text(request)!, text(reply)!)
        }
        #expect(atRouter == ["gateway-7", "batch-1", "application/json", "[]"])
        #expect(atDealer == ["batch-1", "{\"accepted\":0}"])
    }

    private func pull(_ socket: ZMQSocket) throws -> [[UInt8]] {
        guard let frames = try socket.receive() else { throw TestFailure("receive timed out") }
        return frames
    }

    @Test("ROUTER_MANDATORY: sending to an unknown peer throws EHOSTUNREACH")
    func routerMandatory() async throws {
        let error = try await onThread { () -> ZMQError? in
            let context = try ZMQContext()
            defer { context.terminate() }
            let router = try ZMQSocket(context, .router)
            defer { router.close() }
            try router.setRouterMandatory(true)
            try router.bind("inproc://mandatory")
            do throws(ZMQError) {
                try router.send(["nobody", "hello"])
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.isHostUnreachable == true)
        #expect(error?.code == EHOSTUNREACH)
    }

    @Test("PUB/SUB prefix subscriptions, after a slow-joiner handshake", arguments: Transport.allCases)
    func pubSub(_ transport: Transport) async throws {
        let received = try await onThread { () -> [[String]] in
            let context = try ZMQContext()
            defer { context.terminate() }
            let pub = try ZMQSocket(context, .pub)
            defer { pub.close() }
            let endpoint = try bindAny(pub, transport, "pub-sub")
            let sub = try ZMQSocket(context, .sub)
            defer { sub.close() }
            try sub.setReceiveTimeout(milliseconds: 5000)
            try sub.subscribe("crashDetected.")
            try sub.subscribe(bytes("tripDidEnd.app-1."))
            try sub.subscribe("sync")
            try sub.connect(endpoint)

            // Slow joiner: the subscription reaches the PUB some time after connect. Publish a sync message until one
            // arrives, with a deadline, instead of sleeping a fixed time.
            let deadline = MonotonicClock.now() + 5
            var joined = false
            while !joined && MonotonicClock.now() < deadline {
                try pub.send(["sync"])
                Thread.sleep(forTimeInterval: 0.005)
                while let frames = try sub.receive(dontWait: true) {
                    if text(frames) == ["sync"] { joined = true }
                }
            }
            try require(joined, "SUB never joined")

            try sub.unsubscribe("sync")
            try pub.send(["tripDidStart.app-1.u1", "{}"]) // not subscribed
            try pub.send(["crashDetected.app-1.u1", "c1"]) // subscribed
            try pub.send(["crashDetectedX", "no"]) // prefix must match exactly
            try pub.send(["tripDidEnd.app-2.u1", "other app"]) // other app
            try pub.send(["tripDidEnd.app-1.u9", "t1"]) // subscribed
            try pub.send(["crashDetected.app-2.u3", ""]) // subscribed, empty body
            try pub.send(["crashDetected.end"])

            var got: [[String]] = []
            while true {
                guard let frames = try sub.receive() else { throw TestFailure("receive timed out") }
                let message = text(frames)!
                if message == ["sync"] { continue } // sent before the unsubscribe reached the PUB
                got.append(message)
                if message == ["crashDetected.end"] { break }
            }
            return got
        }
        #expect(
            received == [
                ["crashDetected.app-1.u1", "c1"],
                ["tripDidEnd.app-1.u9", "t1"],
                ["crashDetected.app-2.u3", ""],
                ["crashDetected.end"],
            ])
    }

    @Test("REQ/REP", arguments: Transport.allCases)
    func reqRep(_ transport: Transport) async throws {
        let (request, reply) = try await onThread {
            let context = try ZMQContext()
            defer { context.terminate() }
            let rep = try ZMQSocket(context, .rep)
            defer { rep.close() }
            try rep.setReceiveTimeout(milliseconds: 5000)
            let endpoint = try bindAny(rep, transport, "req-rep")
            let req = try ZMQSocket(context, .req)
            defer { req.close() }
            try req.setReceiveTimeout(milliseconds: 5000)
            try req.connect(endpoint)
            try req.send(["{\"command\":\"configure\"}"])
            let request = try pull(rep)
            try rep.send(["{\"ok\":true}"])
            let reply = try pull(req)
            return (text(request)!, text(reply)!)
        }
        #expect(request == ["{\"command\":\"configure\"}"])
        #expect(reply == ["{\"ok\":true}"])
    }

    @Test("REQ out of turn throws EFSM")
    func reqOutOfTurn() async throws {
        let error = try await onThread { () -> ZMQError? in
            let context = try ZMQContext()
            defer { context.terminate() }
            let req = try ZMQSocket(context, .req)
            defer { req.close() }
            do throws(ZMQError) {
                _ = try req.receive(dontWait: true)
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.code == EFSM)
        #expect(error?.operation.hasPrefix("zmq_msg_recv") == true)
    }

    @Test("receive(dontWait:) gives nil when nothing is waiting; a receive timeout gives nil after the timeout")
    func receiveNothing() async throws {
        let (immediate, timedOut, elapsed) = try await onThread {
            let context = try ZMQContext()
            defer { context.terminate() }
            let pull = try ZMQSocket(context, .pull)
            defer { pull.close() }
            try pull.bind("inproc://empty")
            let immediate = try pull.receive(dontWait: true)
            try pull.setReceiveTimeout(milliseconds: 100)
            let start = MonotonicClock.now()
            let timedOut = try pull.receive()
            return (immediate, timedOut, MonotonicClock.now() - start)
        }
        #expect(immediate == nil)
        #expect(timedOut == nil)
        #expect(elapsed >= 0.09 && elapsed < 3)
    }

    @Test("connecting to a malformed endpoint throws with the operation and zmq_strerror text")
    func malformedEndpoint() async throws {
        let errors = try await onThread { () -> [ZMQError] in
            let context = try ZMQContext()
            defer { context.terminate() }
            let dealer = try ZMQSocket(context, .dealer)
            defer { dealer.close() }
            var errors: [ZMQError] = []
            for endpoint in ["not-an-endpoint", "bogus://somewhere:1", "tcp://127.0.0.1"] {
                do throws(ZMQError) {
                    try dealer.connect(endpoint)
                } catch {
                    errors.append(error)
                }
            }
            return errors
        }
        try #require(errors.count == 3)
        #expect(errors[0].code == EINVAL)
        #expect(errors[0].operation == "zmq_connect(not-an-endpoint)")
        #expect(errors[0].message == String(cString: zmq_strerror(EINVAL)))
        #expect(errors[0].message == String(cString: strerror(EINVAL)))
        #expect(errors[0].description.contains("zmq_connect(not-an-endpoint)"))
        #expect(errors[0].description.contains(errors[0].message))
        #expect(errors[1].code == EPROTONOSUPPORT)
        #expect(errors[1].operation == "zmq_connect(bogus://somewhere:1)")
        #expect(errors[1].message == String(cString: strerror(EPROTONOSUPPORT)))
        #expect(errors[2].code == EINVAL)
        #expect(!errors[2].isTryAgain && !errors[2].isTerminated && !errors[2].isInterrupted)
    }

    @Test("binding an address in use throws EADDRINUSE")
    func addressInUse() async throws {
        let (endpoint, error) = try await onThread { () -> (String, ZMQError?) in
            let context = try ZMQContext()
            defer { context.terminate() }
            let first = try ZMQSocket(context, .router)
            defer { first.close() }
            let endpoint = try bindAny(first, .tcp, "in-use")
            let second = try ZMQSocket(context, .router)
            defer { second.close() }
            do throws(ZMQError) {
                try second.bind(endpoint)
                return (endpoint, nil)
            } catch {
                return (endpoint, error)
            }
        }
        let failure = try #require(error)
        #expect(failure.code == EADDRINUSE)
        #expect(failure.operation == "zmq_bind(\(endpoint))")
        #expect(failure.message == String(cString: strerror(EADDRINUSE)))
    }

    @Test("a DEALER with no peer: send returns false on EAGAIN (dontWait, a send timeout, the default timeout)")
    func sendTimeoutWithoutPeer() async throws {
        let results = try await onThread { () -> [(sent: Bool, elapsed: Double)] in
            let context = try ZMQContext()
            defer { context.terminate() }
            let dealer = try ZMQSocket(context, .dealer)
            defer { dealer.close() }
            var results: [(Bool, Double)] = []
            var start = MonotonicClock.now()
            results.append((try dealer.send(["a"], dontWait: true), MonotonicClock.now() - start))
            try dealer.setSendTimeout(milliseconds: 100)
            start = MonotonicClock.now()
            results.append((try dealer.send(["b", "c"]), MonotonicClock.now() - start))
            let fresh = try ZMQSocket(context, .push) // default ZMQ_SNDTIMEO
            defer { fresh.close() }
            start = MonotonicClock.now()
            results.append((try fresh.send(["d"]), MonotonicClock.now() - start))
            return results
        }
        #expect(results.map(\.sent) == [false, false, false])
        #expect(results[0].elapsed < 0.5)
        #expect(results[1].elapsed >= 0.09 && results[1].elapsed < 3)
        #expect(results[2].elapsed >= Double(ZMQSocket.defaultSendTimeout) / 1000 - 0.01 && results[2].elapsed < 5)
    }

    @Test("new sockets carry ZMQ_LINGER 0 and the default send timeout; options read back")
    func defaults() async throws {
        let values = try await onThread { () -> [Int32] in
            let context = try ZMQContext()
            defer { context.terminate() }
            let socket = try ZMQSocket(context, .dealer)
            defer { socket.close() }
            var values = [
                try socket.int32Option(ZMQ_LINGER), try socket.int32Option(ZMQ_SNDTIMEO),
                try socket.int32Option(ZMQ_RCVTIMEO),
            ]
            try socket.setLinger(milliseconds: 250)
            try socket.setSendHighWaterMark(10)
            try socket.setReceiveHighWaterMark(20)
            try socket.setImmediate(true)
            try socket.setHeartbeat(interval: 1000, timeout: 3000, ttl: 5000)
            values += [
                try socket.int32Option(ZMQ_LINGER), try socket.int32Option(ZMQ_SNDHWM),
                try socket.int32Option(ZMQ_RCVHWM), try socket.int32Option(ZMQ_IMMEDIATE),
                try socket.int32Option(ZMQ_HEARTBEAT_IVL), try socket.int32Option(ZMQ_HEARTBEAT_TIMEOUT),
            ]
            return values
        }
        #expect(values == [0, 1000, -1, 250, 10, 20, 1, 1000, 3000])
        #expect(ZMQSocket.defaultLinger == 0)
    }

    @Test("a closed socket throws ENOTSOCK; close is idempotent")
    func closedSocket() async throws {
        let error = try await onThread { () -> ZMQError? in
            let context = try ZMQContext()
            defer { context.terminate() }
            let socket = try ZMQSocket(context, .push)
            socket.close()
            socket.close()
            try require(socket.isClosed && socket.lastEndpoint.isEmpty, "not closed")
            do throws(ZMQError) {
                try socket.send(["x"])
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.isClosedSocket == true)
    }

    @Test("context shutdown makes a blocked receive (no timeout) throw ETERM")
    func shutdownUnblocksReceive() async throws {
        let context = try ZMQContext()
        let ready = Locked(false)
        let outcome = Locked<(error: ZMQError?, at: Double)?>(nil)
        Thread {
            do {
                let pull = try ZMQSocket(context, .pull) // no receive timeout: blocks until shutdown
                defer { pull.close() } // closing lets zmq_ctx_term finish
                try pull.bind("inproc://blocked")
                ready.withLock { $0 = true }
                _ = try pull.receive()
                outcome.withLock { $0 = (nil, MonotonicClock.now()) }
            } catch {
                outcome.withLock { $0 = (error as? ZMQError, MonotonicClock.now()) }
            }
        }.start()
        #expect(await eventually { ready.current })
        try await Task.sleep(for: .milliseconds(100)) // let it block
        #expect(outcome.current == nil)
        let shutdownAt = MonotonicClock.now()
        context.shutdown()
        // The receive has no timeout: without the shutdown it would never return. The bound is only for a busy machine.
        #expect(await eventually(timeout: 60) { outcome.current != nil })
        let result = try #require(outcome.current)
        #expect(result.error?.isTerminated == true)
        #expect(result.error?.code == ETERM)
        #expect(result.at >= shutdownAt)
        #expect(context.isShutDown)
        #expect(await finishes(within: 60) { context.terminate() })
        // A shut-down context refuses new sockets with ETERM.
        #expect(throws: ZMQError.self) { _ = try ZMQSocket(context, .pull) }
    }

    @Test("ZMQPoller over a socket and a pipe")
    func poller() async throws {
        let (idle, idleElapsed, fdReady, socketReady) = try await onThread {
            let context = try ZMQContext()
            defer { context.terminate() }
            let pull = try ZMQSocket(context, .pull)
            defer { pull.close() }
            let endpoint = try bindAny(pull, .tcp, "poller")
            let push = try ZMQSocket(context, .push)
            defer { push.close() }
            try push.connect(endpoint)
            var fds: [Int32] = [-1, -1]
            try require(pipe(&fds) == 0, "pipe failed")
            defer {
                close(fds[0])
                close(fds[1])
            }

            var poller = ZMQPoller()
            poller.add(pull)
            poller.add(fileDescriptor: fds[0])
            let start = MonotonicClock.now()
            let idle = try poller.poll(timeoutMilliseconds: 50)
            let idleElapsed = MonotonicClock.now() - start

            var byte: UInt8 = 1
            try require(write(fds[1], &byte, 1) == 1, "write failed")
            let fdReady = try poller.poll(timeoutMilliseconds: 2000)
            _ = read(fds[0], &byte, 1)

            try push.send(["ping"])
            var socketReady: [ZMQPollEvents] = []
            let deadline = MonotonicClock.now() + 5
            while MonotonicClock.now() < deadline {
                socketReady = try ZMQPoller.poll(
                    [ZMQPollItem(pull), ZMQPollItem(fileDescriptor: fds[0])],
                    timeoutMilliseconds: 1000)
                if socketReady[0].contains(.readable) { break }
            }
            try require(text(try pull.receive(dontWait: true)) == ["ping"], "message not there after poll")
            return (idle, idleElapsed, fdReady, socketReady)
        }
        #expect(idle == [[], []])
        #expect(idleElapsed >= 0.045 && idleElapsed < 3)
        #expect(fdReady == [[], .readable])
        #expect(socketReady == [.readable, []])
    }

    @Test("CurveZMQ: an encrypted PUSH/PULL round trip", .enabled(if: ZMQCurve.isAvailable))
    func curve() async throws {
        let received = try await onThread {
            let server = try ZMQCurve.keyPair()
            let client = try ZMQCurve.keyPair()
            try require(server.publicKey.utf8.count == 40 && server.secretKey.utf8.count == 40, "Z85 keys are 40 chars")
            let context = try ZMQContext()
            defer { context.terminate() }
            let pull = try ZMQSocket(context, .pull)
            defer { pull.close() }
            try pull.setReceiveTimeout(milliseconds: 5000)
            try pull.setCurveServer(secretKey: bytes(server.secretKey))
            let endpoint = try bindAny(pull, .tcp, "curve")
            let push = try ZMQSocket(context, .push)
            defer { push.close() }
            try push.setCurveClient(
                serverPublicKey: bytes(server.publicKey), publicKey: bytes(client.publicKey),
                secretKey: bytes(client.secretKey))
            try push.connect(endpoint)
            try push.send(["secret", "payload"])
            return text(try pull.receive())
        }
        #expect(received == ["secret", "payload"])
    }

    @Test("ZMQError classifies EAGAIN, ETERM and EINTR")
    func errorFlags() {
        #expect(ZMQError(code: EAGAIN, operation: "x").isTryAgain)
        #expect(ZMQError(code: ETERM, operation: "x").isTerminated)
        #expect(ZMQError(code: ETERM, operation: "x").message == "Context was terminated")
        #expect(ZMQError(code: EINTR, operation: "x").isInterrupted)
        #expect(!ZMQError(code: EINVAL, operation: "x").isTryAgain)
        #expect(ZMQError(code: EINVAL, operation: "a") != ZMQError(code: EINVAL, operation: "b"))
        #expect(zmqVersion().major == 4)
    }
}
