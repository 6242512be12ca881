import SystemKit
import Wire
import ZeroMQ

/// A gateway's links to its ingests (one with a single endpoint), and the batches on their way, on the engine's
/// thread.
///
/// One thread serves every link: each round polls all the sockets at once (`zmq_poll`, at most 100 ms), so a link
/// whose ingest is down, or whose window is full, never keeps the others from taking their acknowledgements, sending
/// again and sending their headers. That is simpler than a thread per link (no queues between threads, every socket
/// stays on the thread that made it). A batch waits for a link whose window is full before the next is taken
/// (memory stays bounded, as with one ingest): the other links then finish what they have on their way, and go on
/// once the full one has room again.
final class GatewayLinks {
    let settings: GatewaySettings
    let links: [IngestLink]
    /// Polled beside the sockets: a call posted to the engine wakes the round.
    private let wake: Int32
    /// Asked every round: the caller cancelled, or the gateway is closing.
    private let shouldStop: () -> Bool

    init(
        settings: GatewaySettings, context: ZMQContext, runID: String, wake: Int32, shouldStop: @escaping () -> Bool
    ) throws(RoadSaveClientError) {
        self.settings = settings
        self.wake = wake
        self.shouldStop = shouldStop
        var links: [IngestLink] = []
        for (index, endpoint) in settings.endpoints.enumerated() {
            do {
                links.append(
                    try IngestLink(endpoint: endpoint, index: index, context: context, runID: runID, settings: settings)
                )
            } catch {
                for link in links { link.close() }
                throw .connectionFailed(endpoint: endpoint, reason: "cannot connect to \(endpoint): \(error)")
            }
        }
        self.links = links
    }

    func close() {
        for link in links { link.close() }
    }

    /// A record was read into the batch being built for ingest `ingest`; false when it is behind a watermark already
    /// sent to it. Every other link's stream moves on with it too (`GatewayWatermark.observe`).
    func noteRead(_ t: Double, for ingest: Int) -> Bool {
        for link in links where link.index != ingest { link.noteReadElsewhere(t) }
        return links[ingest].noteRead(t)
    }

    /// The records read for ingest `ingest` since its last seal are batch `number`.
    func seal(_ number: Int, for ingest: Int) { links[ingest].seal(number) }

    /// The acknowledgements taken and not yet handed out (`takeCompleted`). Kept here rather than returned, so that
    /// those taken in the round that then fails (another link's batch out of attempts) still count.
    private var completed: [RoadSaveGateway.Receipt] = []

    /// The acknowledgements that came since the last call, from every link.
    func takeCompleted() -> [RoadSaveGateway.Receipt] {
        defer { completed = [] }
        return completed
    }

    /// The batch sent first of those awaiting acknowledgement on any link.
    var oldestWaiting: GatewayBatch? { links.lazy.compactMap(\.oldestWaiting).first }

    /// Sends `batch` to ingest `ingest` once its link has room, taking the acknowledgements that come meanwhile (from
    /// every link). Throws when a batch got no acknowledgement after its attempts, or when asked to stop.
    func submit(_ batch: GatewayBatch, number: Int?, to ingest: Int) throws(RoadSaveClientError) {
        let link = links[ingest]
        while !link.hasRoom(for: batch) { try service(until: nil) }
        try link.send(batch, number: number)
        // Acknowledgements already there are taken without waiting.
        try service(until: MonotonicClock.now())
    }

    /// Waits until the monotonic time `deadline` (pacing), taking acknowledgements meanwhile.
    func wait(until deadline: Double) throws(RoadSaveClientError) {
        while MonotonicClock.now() < deadline {
            try service(until: deadline)
        }
    }

    /// Waits for every batch's acknowledgement; then, with watermarks, a last header to each ingest says how far its
    /// stream has come (that it is over, when it ends the stream), and waits for its acknowledgement too. A link sends
    /// its last header as soon as its own batches are acknowledged, whatever the others still wait for.
    func finish() throws(RoadSaveClientError) {
        var ended = links.map { !$0.sendsHeaders }
        while true {
            for link in links where !ended[link.index] && link.waiting == 0 {
                ended[link.index] = true
                try link.send(GatewayBatch(), number: nil)
            }
            if !ended.contains(false) && links.allSatisfy({ $0.waiting == 0 }) { return }
            try service(until: nil)
        }
    }

    /// One round over every link: sends what is due again, waits for acknowledgements (until `deadline`, or at most
    /// 100 ms and the next re-send or timeout when nil), takes every acknowledgement that came, and counts the sends
    /// that timed out. `idle`: the engine has no call in hand, and a call posted ends the wait (inside a call the
    /// posted byte waits in the pipe until the call is done, or every round would end at once).
    func service(until deadline: Double?, idle: Bool = false) throws(RoadSaveClientError) {
        if shouldStop() { throw .closed }
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
        if idle, self.wake >= 0 { items.append(ZMQPollItem(fileDescriptor: self.wake)) }
        let ready: [ZMQPollEvents]
        do {
            ready = try ZMQPoller.poll(items, timeoutMilliseconds: min(milliseconds, 100))
        } catch {
            throw .connectionFailed(endpoint: settings.endpoints[0], reason: "waiting for acknowledgements: \(error)")
        }
        for (link, range) in zip(links, ranges) { try link.take(ready[range], into: &completed) }
    }
}
