import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What async code posts to an engine thread, and the pipe that wakes the thread's `zmq_poll` when something was
/// posted (a self-pipe: a byte written per post, the read end polled beside the sockets), so a call is taken at once,
/// not at the next 100 ms round.
final class EngineInbox<Message: Sendable>: Sendable {
    private let queue = Locked<(messages: [Message], shut: Bool)>(([], false))
    /// The pipe's ends, non-blocking; -1 when `pipe` failed (the engine then finds posts at its next round).
    let readEnd: Int32
    private let writeEnd: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
            readEnd = ends[0]
            writeEnd = ends[1]
        } else {
            readEnd = -1
            writeEnd = -1
        }
    }

    deinit {
        if readEnd >= 0 { close(readEnd) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// From anywhere: queues `message` and wakes the engine. False, and `message` dropped, once the engine ended.
    @discardableResult
    func post(_ message: Message) -> Bool {
        let queued = queue.withLock { queue -> Bool in
            guard !queue.shut else { return false }
            queue.messages.append(message)
            return true
        }
        if queued, writeEnd >= 0 {
            var byte: UInt8 = 1
            _ = write(writeEnd, &byte, 1)
        }
        return queued
    }

    /// On the engine thread: what was posted, first posted first; empties the pipe.
    func take() -> [Message] {
        if readEnd >= 0 {
            var bytes = [UInt8](repeating: 0, count: 64)
            while read(readEnd, &bytes, bytes.count) > 0 {}
        }
        return queue.withLock { queue in
            defer { queue.messages = [] }
            return queue.messages
        }
    }

    /// On the engine thread, as it ends: later posts are refused; what was posted and not taken is dropped.
    func shut() {
        let dropped = queue.withLock { queue in
            defer { queue = ([], true) }
            return queue.messages
        }
        _ = dropped // released here, outside the lock (a message's reply answers `closed` as it goes)
    }
}
