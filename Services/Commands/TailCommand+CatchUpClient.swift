import Logging
import NotifierService
import ServiceKit
import SystemKit
import Wire
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension TailCommand {
    /// A DEALER to the notifier's catch-up endpoint, one request at a time.
    final class CatchUpClient {
        let endpoint: String
        private let socket: ZMQSocket
        /// Seconds to wait for one answer (besides the long-poll's own wait).
        static let patience = 10.0
        /// The wait of each `--via-catch-up` long-poll.
        static let longPollMilliseconds = 25_000

        init(context: ZMQContext, endpoint: String, keys: ClientCurveKeys?, link: LinkTimings) throws {
            self.endpoint = endpoint
            socket = try ZMQSocket(context, .dealer, linger: 0)
            try keys?.apply(to: socket)
            try socket.setLinkTimings(link)
            try socket.connect(endpoint)
        }

        func close() {
            socket.close()
        }

        /// Prints the events after `start` (and before `before`, when given), page by page, until the reply reaches
        /// the head (or `before`). False when tail should end (a signal, the count reached, standard output closed).
        /// With `waitMilliseconds`, each request is a long-poll: a reply with nothing new comes when the wait ends.
        func read(
            after start: CatchUpRequest.Start, before: UInt64?, into printer: inout Printer, options: Options,
            log: Log, waitMilliseconds: Int? = nil
        ) throws(CommandExit) -> Bool {
            var start = start
            while true {
                let reply = try request(
                    CatchUpRequest(
                        start: start, prefix: options.catchUpPrefix,
                        waitMilliseconds: waitMilliseconds))
                for entry in reply.events {
                    if let before, entry.position >= before { return true }
                    if let seen = printer.seen, entry.position <= seen { continue }
                    guard options.accepts(entry.topic) else {
                        printer.skip(entry.position)
                        continue
                    }
                    guard printer.print(position: entry.position, body: JSONText.encode(entry.event)) else {
                        return false
                    }
                }
                // Everything up to `next` was examined.
                if let before { printer.skip(min(reply.next, before - 1)) } else { printer.skip(reply.next) }
                log.debug("caught up", ["to": String(reply.next), "head": String(reply.head)])
                if reply.next >= reply.head || (before.map { reply.next >= $0 - 1 } ?? false) { return true }
                start = .position(reply.next)
                if SignalFlag.signal != 0 { return false }
            }
        }

        /// The newest position in the notifier's stream now.
        func head() throws(CommandExit) -> UInt64 {
            try request(CatchUpRequest(start: .position(0), max: 1)).head
        }

        private func request(_ request: CatchUpRequest) throws(CommandExit) -> CatchUpReply {
            do {
                // The empty delimiter, as a REQ socket sends it.
                _ = try socket.send([[], request.json()])
                let deadline = MonotonicClock.now() + Self.patience + Double(request.waitMilliseconds ?? 0) / 1000
                while MonotonicClock.now() < deadline {
                    if SignalFlag.signal != 0 { throw CommandExit(0, "") }
                    let ready = try ZMQPoller.poll([ZMQPollItem(socket)], timeoutMilliseconds: 100)
                    guard ready.first?.contains(.readable) == true, let frames = try socket.receive(dontWait: true),
                        let last = frames.last
                    else { continue }
                    return try CatchUpReply(json: last)
                }
            } catch let exit as CommandExit {
                throw exit
            } catch let problem as CatchUpRequest.Problem {
                throw CommandExit(1, "catch-up from \(endpoint): \(problem.message)")
            } catch {
                throw CommandExit(1, "catch-up from \(endpoint) failed: \(error)")
            }
            throw CommandExit(
                1,
                "no answer from the catch-up endpoint \(endpoint) within "
                    + "\(Int(Self.patience) + (request.waitMilliseconds ?? 0) / 1000) s")
        }
    }
}
