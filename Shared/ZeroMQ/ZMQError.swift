import CZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A failed libzmq call: the errno value, the call that failed (with its argument), and `zmq_strerror`'s text.
///
/// Three codes are not failures and callers usually branch on them:
/// - `isTryAgain` (`EAGAIN`): nothing to receive now / could not send now (non-blocking call or timeout expired);
///   `ZMQSocket.send` and `receive` turn it into `false` / `nil` instead of throwing.
/// - `isTerminated` (`ETERM`): the context is shutting down; close the socket and leave, a normal exit.
/// - `isInterrupted` (`EINTR`): a signal arrived; this module already retries it everywhere.
public struct ZMQError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The errno value (libzmq's own codes such as `ETERM` are above `ZMQ_HAUSNUMERO`).
    public var code: Int32
    /// The call that failed, e.g. `zmq_bind(tcp://*:5550)`.
    public var operation: String
    /// `zmq_strerror(code)`.
    public var message: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
        self.message = String(cString: zmq_strerror(code))
    }

    public init(code: Int32, operation: String, message: String) {
        self.code = code
        self.operation = operation
        self.message = message
    }

    /// The error of the libzmq call that just failed on this thread (`zmq_errno()`).
    static func last(_ operation: @autoclosure () -> String) -> ZMQError {
        ZMQError(code: zmq_errno(), operation: operation())
    }

    /// `EAGAIN`: nothing now (non-blocking call or timeout), not a failure.
    public var isTryAgain: Bool { code == EAGAIN }
    /// `ETERM`: the context was shut down or terminated; a normal exit.
    public var isTerminated: Bool { code == ETERM }
    /// `EINTR`: interrupted by a signal (retried inside this module, so rarely seen).
    public var isInterrupted: Bool { code == EINTR }
    /// `EHOSTUNREACH`: a ROUTER with `setRouterMandatory(true)` has no peer with that routing id.
    public var isHostUnreachable: Bool { code == EHOSTUNREACH }
    /// `ENOTSOCK`: the socket was already closed.
    public var isClosedSocket: Bool { code == ENOTSOCK }

    public var description: String { "\(operation): \(message) (errno \(code))" }
}
