import Foundation
import RoadSaveTestKit
import SystemKit
import Testing
import ZeroMQ

/// Runs blocking ZeroMQ code on a dedicated thread and awaits its result, so no thread of Swift's cooperative pool ever
/// blocks in libzmq (DESIGN-NOTES pitfall 1). Sockets are created, used and closed inside `body` (pitfall 2).
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Throws (failing the test with `message`) unless `condition` holds; for checks inside `onThread` bodies.
func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw TestFailure(message()) }
}

/// Hands a non-Sendable value (a socket) across threads once its owner has finished with it. Only for tests that inspect a
/// socket after its reactor has exited (`wait()` orders the accesses).
final class Unchecked<Value>: @unchecked Sendable {
    var value: Value?
    init(_ value: Value? = nil) { self.value = value }
}

enum Transport: String, CaseIterable, Sendable {
    case inproc, tcp

    /// An endpoint to bind: a unique inproc name, or TCP loopback on a free port.
    func bindEndpoint(_ name: String) -> String {
        switch self {
        case .inproc: "inproc://\(name)-\(UUID().uuidString)"
        case .tcp: "tcp://127.0.0.1:*"
        }
    }
}

/// Binds `socket` and returns the resolved endpoint to connect to.
func bindAny(_ socket: ZMQSocket, _ transport: Transport, _ name: String) throws -> String {
    try socket.bind(transport.bindEndpoint(name))
    let endpoint = socket.lastEndpoint
    try require(!endpoint.isEmpty && !endpoint.hasSuffix(":*"), "lastEndpoint not resolved: '\(endpoint)'")
    return endpoint
}

func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

func text(_ frames: [[UInt8]]?) -> [String]? {
    frames?.map { String(decoding: $0, as: UTF8.self) }
}

/// Runs `body` on a fresh thread and reports whether it finished within `timeout` seconds (for calls that could hang,
/// like `zmq_ctx_term`).
func finishes(within timeout: Double, _ body: @escaping @Sendable () -> Void) async -> Bool {
    let done = Locked(false)
    Thread {
        body()
        done.withLock { $0 = true }
    }.start()
    return await eventually(timeout: timeout) { done.current }
}

/// `reactor.run(body)`, failing instead of hanging the whole test run if the reactor never answers (a bug).
func answer<T: Sendable>(
    _ reactor: Reactor, timeout: Double = 60,
    _ body: @escaping @Sendable (ReactorLoop) throws -> T
) async throws -> T {
    let result = Locked<Result<T, any Error>?>(nil)
    Task {
        do {
            let value = try await reactor.run(body)
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
    }
    guard await eventually(timeout: timeout, { result.current != nil }), let outcome = result.current else {
        throw TestFailure("reactor \(reactor.name) did not run the work within \(timeout) s")
    }
    return try outcome.get()
}

/// The error that ended `reactor` (nil for a normal stop), awaited with `finished()` or, with `blocking`, from a plain
/// thread with `wait()`. Throws instead of hanging if the loop does not end within `timeout`.
func exitError(of reactor: Reactor, within timeout: Double = 60, blocking: Bool = false) async throws -> (any Error)? {
    let result = Locked<Result<(any Error)?, Never>?>(nil)
    if blocking {
        Thread {
            let error = reactor.wait()
            result.withLock { $0 = .success(error) }
        }.start()
    } else {
        Task {
            let error = await reactor.finished()
            result.withLock { $0 = .success(error) }
        }
    }
    guard await eventually(timeout: timeout, { result.current != nil }), let outcome = result.current else {
        throw TestFailure("reactor \(reactor.name) did not stop within \(timeout) s")
    }
    return outcome.get()
}
