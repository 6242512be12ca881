import CZeroMQ
import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What to wait for / what happened, as in `zmq_pollitem_t.events` / `revents`.
public struct ZMQPollEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }

    public static let readable = ZMQPollEvents(rawValue: Int16(ZMQ_POLLIN))
    public static let writable = ZMQPollEvents(rawValue: Int16(ZMQ_POLLOUT))
    /// Only reported for plain file descriptors.
    public static let error = ZMQPollEvents(rawValue: Int16(ZMQ_POLLERR))
}

/// One thing to poll: a ZeroMQ socket or a plain file descriptor (a pipe, eventfd, TCP socket…).
public struct ZMQPollItem {
    public enum Target {
        case socket(ZMQSocket)
        case fileDescriptor(Int32)
    }

    public var target: Target
    public var events: ZMQPollEvents

    public init(_ socket: ZMQSocket, events: ZMQPollEvents = .readable) {
        target = .socket(socket)
        self.events = events
    }

    public init(fileDescriptor: Int32, events: ZMQPollEvents = .readable) {
        target = .fileDescriptor(fileDescriptor)
        self.events = events
    }
}

/// `zmq_poll` over sockets and file descriptors, on the calling thread (which blocks: use it from a dedicated thread such
/// as a `Reactor`'s, never from async code).
///
///     var poller = ZMQPoller()
///     poller.add(pull)
///     poller.add(fileDescriptor: pipeReadEnd)
///     let ready = try poller.poll(timeoutMilliseconds: 500)   // [ZMQPollEvents], one per item, in order
///     if ready[0].contains(.readable) { … pull.receive(dontWait: true) … }
///
/// `EINTR` is retried with the time that remains. A socket of a shut-down context makes `poll` throw `ETERM`.
/// Sockets must be open and owned by the polling thread.
public struct ZMQPoller {
    public var items: [ZMQPollItem]

    public init(_ items: [ZMQPollItem] = []) {
        self.items = items
    }

    public mutating func add(_ socket: ZMQSocket, events: ZMQPollEvents = .readable) {
        items.append(ZMQPollItem(socket, events: events))
    }

    public mutating func add(fileDescriptor: Int32, events: ZMQPollEvents = .readable) {
        items.append(ZMQPollItem(fileDescriptor: fileDescriptor, events: events))
    }

    /// Waits until an item is ready or `timeoutMilliseconds` pass (0 = just look, -1 = no limit).
    /// Returns the events that happened, one entry per item (all empty on timeout).
    public func poll(timeoutMilliseconds: Int) throws(ZMQError) -> [ZMQPollEvents] {
        try Self.poll(items, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// One-shot form of `poll(timeoutMilliseconds:)`.
    public static func poll(_ items: [ZMQPollItem], timeoutMilliseconds: Int) throws(ZMQError) -> [ZMQPollEvents] {
        var raw = [zmq_pollitem_t]()
        raw.reserveCapacity(items.count)
        for item in items {
            switch item.target {
            case .socket(let socket):
                guard let handle = socket.rawHandle else {
                    throw ZMQError(code: ENOTSOCK, operation: "zmq_poll(closed \(socket.type) socket)")
                }
                raw.append(zmq_pollitem_t(socket: handle, fd: 0, events: item.events.rawValue, revents: 0))
            case .fileDescriptor(let fd):
                raw.append(zmq_pollitem_t(socket: nil, fd: fd, events: item.events.rawValue, revents: 0))
            }
        }
        let count = raw.count
        let result: Result<Void, ZMQError> = raw.withUnsafeMutableBufferPointer { buffer in
            do throws(ZMQError) {
                _ = try pollRaw(buffer.baseAddress, count: count, timeoutMilliseconds: timeoutMilliseconds)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
        return raw.map { ZMQPollEvents(rawValue: $0.revents) }
    }

    /// `zmq_poll` on raw items, retrying `EINTR` with the remaining time. Returns how many items are ready (0 on timeout).
    static func pollRaw(
        _ items: UnsafeMutablePointer<zmq_pollitem_t>?, count: Int,
        timeoutMilliseconds: Int
    ) throws(ZMQError) -> Int {
        let deadline = timeoutMilliseconds > 0 ? MonotonicClock.now() + Double(timeoutMilliseconds) / 1000 : 0
        var timeout = timeoutMilliseconds
        while true {
            let rc = zmq_poll(items, Int32(count), timeout)
            if rc >= 0 { return Int(rc) }
            let code = zmq_errno()
            guard code == EINTR else { throw ZMQError(code: code, operation: "zmq_poll") }
            if timeoutMilliseconds > 0 {
                let remaining = ((deadline - MonotonicClock.now()) * 1000).rounded(.up)
                timeout = max(0, Int(remaining))
            }
        }
    }
}
