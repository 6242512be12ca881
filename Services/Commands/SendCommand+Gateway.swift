import GatewayKit
import Logging
import ServiceKit
import SystemKit
import TerminalProgress
import Wire
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension SendCommand {
    /// The gateway's links to the ingests of --endpoint (one with a single endpoint), and the batches on their way.
    ///
    /// One thread serves every link: each round polls all the sockets at once (`zmq_poll`, at most 100 ms), so a link
    /// whose ingest is down, or whose window is full, never keeps the others from taking their acknowledgements,
    /// sending again and sending their headers. That is simpler than a thread per link (no queues between threads,
    /// every socket stays on the thread that made it, nothing to make Sendable). The reader still waits for a link
    /// whose window is full before it reads on (memory stays bounded, as with one ingest): the other links then
    /// finish what they have on their way, and go on once the full one has room again.
    final class Gateway {
        let options: Options
        let log: Log
        private let context: ZMQContext
        let links: [IngestLink]

        init(options: Options, log: Log) throws(CommandExit) {
            self.options = options
            self.log = log
            let runID = "gw-\(getpid())-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
            var links: [IngestLink] = []
            do {
                context = try ZMQContext()
            } catch {
                throw CommandExit(1, "cannot connect to \(options.endpoints[0]): \(error)")
            }
            for (index, endpoint) in options.endpoints.enumerated() {
                do {
                    links.append(
                        try IngestLink(
                            endpoint: endpoint, index: index, context: context, runID: runID,
                            options: options, log: log))
                } catch {
                    for link in links { link.close() }
                    throw CommandExit(1, "cannot connect to \(endpoint): \(error)")
                }
            }
            self.links = links
        }

        func close() {
            for link in links { link.close() }
            context.terminate()
        }

        /// A record was read into the batch being built for ingest `ingest`; false when it is behind a watermark
        /// already sent to it. Every other link's stream moves on with it too (`GatewayWatermark.observe`).
        func noteRead(_ t: Double, for ingest: Int) -> Bool {
            for link in links where link.index != ingest { link.noteReadElsewhere(t) }
            return links[ingest].noteRead(t)
        }

        /// The records read for ingest `ingest` since its last seal are batch `number`.
        func seal(_ number: Int, for ingest: Int) { links[ingest].seal(number) }

        /// Rate refusals seen so far over every link.
        var rateRefusals: Int { links.reduce(0) { $0 + $1.rateRefusals } }

        /// The acknowledgements taken and not yet handed out (`takeCompleted`). Kept here rather than returned, so
        /// that those taken in the round that then fails (another link's batch out of attempts) still count.
        private var completed: [Completion] = []

        /// The acknowledgements that came since the last call, from every link.
        func takeCompleted() -> [Completion] {
            defer { completed = [] }
            return completed
        }

        /// Sends `batch` to ingest `ingest` once its link has room, taking the acknowledgements that come meanwhile
        /// (from every link). Throws (exit 1) when a batch got no acknowledgement after `--attempts` sends, or on
        /// a signal.
        func submit(_ batch: Batch, number: Int?, to ingest: Int) throws(CommandExit) {
            let link = links[ingest]
            while !link.hasRoom(for: batch) { try service(until: nil) }
            try link.send(batch, number: number)
            // Acknowledgements already there are taken without waiting.
            try service(until: MonotonicClock.now())
        }

        /// Waits until the monotonic time `deadline` (pacing), taking acknowledgements meanwhile.
        func wait(until deadline: Double, before batch: Batch) throws(CommandExit) {
            while MonotonicClock.now() < deadline {
                if SignalFlag.signal != 0 { throw interrupted(batch) }
                try service(until: deadline)
            }
        }

        /// Waits for every batch's acknowledgement; then, with watermarks, a last header to each ingest says how far
        /// its stream has come (that it is over, unless --no-end), and waits for its acknowledgement too. A link
        /// sends its last header as soon as its own batches are acknowledged, whatever the others still wait for.
        func finish() throws(CommandExit) {
            var ended = links.map { !$0.sendsHeaders }
            while true {
                for link in links where !ended[link.index] && link.waiting == 0 {
                    ended[link.index] = true
                    var last = Batch()
                    last.noun = options.numberName
                    try link.send(last, number: nil)
                }
                if !ended.contains(false) && links.allSatisfy({ $0.waiting == 0 }) { return }
                try service(until: nil)
            }
        }

        /// One round over every link: sends what is due again, waits for acknowledgements (until `deadline`, or at
        /// most 100 ms and the next resend or timeout when nil), takes every one that came, and counts the sends
        /// that timed out.
        private func service(until deadline: Double?) throws(CommandExit) {
            if SignalFlag.signal != 0, let batch = links.lazy.compactMap(\.oldestWaiting).first {
                throw interrupted(batch)
            }
            for link in links { try link.sendDue() }
            let now = MonotonicClock.now()
            var wake = deadline ?? now + 0.1
            for link in links { if let due = link.nextDue { wake = min(wake, due) } }
            let milliseconds = max(0, Int(((wake - now) * 1000).rounded(.up)))
            var items: [ZMQPollItem] = []
            var ranges: [Range<Int>] = []
            for link in links {
                let own = try link.pollItems()
                ranges.append(items.count..<(items.count + own.count))
                items += own
            }
            let ready: [ZMQPollEvents]
            do {
                ready = try ZMQPoller.poll(items, timeoutMilliseconds: min(milliseconds, 100))
            } catch {
                throw CommandExit(1, "waiting for acknowledgements: \(error)")
            }
            for (link, range) in zip(links, ranges) { try link.take(ready[range], into: &completed) }
        }

        private func interrupted(_ batch: Batch) -> CommandExit {
            CommandExit(
                1, "interrupted by \(SignalFlag.name(SignalFlag.signal)) before \(batch.lineRange) were acknowledged")
        }
    }
}
