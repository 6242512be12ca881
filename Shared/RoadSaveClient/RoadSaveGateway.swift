import GatewayKit
import SystemKit
import Wire
import ZeroMQ

/// A device gateway: sends sensor records to sensor-ingest in batches and keeps each until its acknowledgement says
/// it is on disk (PROTOCOL §7, gateway batch).
///
/// Records go into a batch per ingest; a full batch is sent (`send` suspends while its ingest's window of batches
/// awaiting acknowledgement is full, so memory stays bounded); each acknowledgement comes back as a `Receipt`, with
/// the records sensor-ingest refused and why. A batch without an answer within the timeout is sent again (same
/// batchID); one refused for the rate limit or because the journal could not store it, after the pause the ingest
/// asks for; those on a connection that ended, on the new one as soon as it is up, before any newer batch of their
/// devices. Every batch carries a watermark (the oldest time of everything not acknowledged besides itself, and the
/// newest time given less the disorder bound), so detection orders the records exactly as a replay would, whatever
/// the transport did; `finish()` says the stream is over. The ZeroMQ work runs on a thread of its own.
///
///     let gateway = try RoadSaveGateway(.init(endpoints: ["tcp://ingest:5550"]))
///     for try await records in phones { receipts += try await gateway.send(records) }
///     receipts += try await gateway.finish()
public final class RoadSaveGateway: Sendable {
    /// What the gateway was made with.
    public let configuration: Configuration
    private let engine: GatewayEngine
    /// Records handed to `send` so far: each one's number.
    private let numbered = Locked(0)

    /// A gateway for `configuration`: the endpoints, sizes and times are checked and the key files read now
    /// (`invalidConfiguration`, `unusableKey`); it connects at once, on its own thread.
    public convenience init(_ configuration: Configuration) throws(RoadSaveClientError) {
        try self.init(configuration, interruption: nil, notices: nil)
    }

    /// A gateway for the commands built on the library: `interruption` is asked every round (SIGINT, SIGTERM), and
    /// `notices` tells what happens, for their log.
    package init(
        _ configuration: Configuration, interruption: (@Sendable () -> Int32?)?,
        notices: (@Sendable (GatewayNotice) -> Void)?
    ) throws(RoadSaveClientError) {
        let settings = try Self.settings(configuration, interruption: interruption, notices: notices)
        self.configuration = configuration
        engine = GatewayEngine(settings: settings)
    }

    deinit {
        engine.inbox.post(.close)
    }

    /// Gives the gateway `records`, in the order their devices recorded them: a batch that fills up is sent, and
    /// the call suspends while that batch's ingest has its window full. Returns the receipts of the batches
    /// acknowledged since the last call that returned receipts. Throws when a batch gets no acknowledgement after its
    /// attempts (`notAcknowledged`) or the ingest refuses the key (`keyRefused`); the gateway is then failed, and
    /// `takeReceipts()` still returns what was acknowledged before. Cancelling the calling task closes the gateway.
    public func send(_ records: [SensorRecord]) async throws(RoadSaveClientError) -> [Receipt] {
        let first = numbered.withLock { count -> Int in
            defer { count += records.count }
            return count + 1
        }
        let items = records.enumerated().map { GatewayItem(record: $1, number: first + $0) }
        return try await call { .add(items, $0) }
    }

    /// `send(_:)` with the caller's numbers and, for records read from MessagePack, their bytes as read.
    package func send(items: [GatewayItem]) async throws(RoadSaveClientError) -> [Receipt] {
        try await call { .add(items, $0) }
    }

    /// Sends the batches being built now, full or not (what a gateway does when its phones fall quiet), and returns
    /// the receipts that came meanwhile.
    public func flush() async throws(RoadSaveClientError) -> [Receipt] {
        try await call { .flush($0) }
    }

    /// Sends what is left, waits for every acknowledgement, and ends the stream (with watermarks: a last header says
    /// it is over, unless `Watermarks.endsStream` is false); returns the receipts not returned yet. The gateway is
    /// closed then: later calls throw `closed` (more records are a new stream, another gateway's).
    public func finish() async throws(RoadSaveClientError) -> [Receipt] {
        try await call { .finish($0) }
    }

    /// The receipts of the batches acknowledged since the last call that returned receipts, without sending anything
    /// (also after a failure: what was acknowledged before it).
    public func takeReceipts() async -> [Receipt] {
        (try? await call { .receipts($0) }) ?? []
    }

    /// Closes the connections at once: batches not acknowledged are not sent again (and were perhaps not stored).
    public func close() {
        engine.inbox.post(.close)
    }

    /// Batches handed to the ingests so far, in all and per ingest (for `roadsave send`'s summary).
    package var batchCounts: (total: Int, byIngest: [Int]) {
        engine.snapshot.withLock { ($0.batches, $0.batchesByIngest) }
    }

    /// The numbers of the first and last record of the oldest batch awaiting acknowledgement, if any.
    package var oldestUnacknowledged: ClosedRange<Int>? {
        engine.snapshot.withLock { $0.oldestWaiting }
    }

    private func call(
        _ make: (EngineReply<[Receipt]>) -> GatewayEngine.Call
    ) async throws(RoadSaveClientError) -> [Receipt] {
        let engine = engine
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Refused once the engine ended: the reply, dropped, answers `closed`.
                engine.inbox.post(make(EngineReply(continuation)))
            }
        } onCancel: {
            engine.cancel()
        }
        return try result.get()
    }

    /// The engine's settings, checked.
    private static func settings(
        _ configuration: Configuration, interruption: (@Sendable () -> Int32?)?,
        notices: (@Sendable (GatewayNotice) -> Void)?
    ) throws(RoadSaveClientError) -> GatewaySettings {
        for endpoint in configuration.endpoints {
            if let problem = ZMQEndpoint.problem(endpoint, connecting: true) {
                throw .invalidConfiguration("endpoints: \(problem)")
            }
        }
        let route: IngestRoute
        do {
            route = try IngestRoute(endpoints: configuration.endpoints)
        } catch {
            throw .invalidConfiguration("endpoints: \(error)")
        }
        func check<T: Comparable>(_ name: String, _ value: T, _ range: ClosedRange<T>) throws(RoadSaveClientError) {
            guard range.contains(value) else {
                throw .invalidConfiguration("\(name): \(value) is outside \(range.lowerBound)…\(range.upperBound)")
            }
        }
        try check("batchSize", configuration.batchSize, 1...RecordBatch.maximumRecords)
        try check("window", configuration.window, 1...1000)
        try check("timeout", configuration.timeout, 0.05...3600)
        try check("attempts", configuration.attempts, 1...100)
        if let watermarks = configuration.watermarks {
            try check("watermarks.maximumDisorder", watermarks.maximumDisorder, 0...3600)
            if let name = watermarks.streamName,
                name.isEmpty || name.utf8.count > GatewayBatchHeader.maximumGatewayBytes
            {
                throw .invalidConfiguration(
                    "watermarks.streamName must be 1 to \(GatewayBatchHeader.maximumGatewayBytes) bytes")
            }
        }
        if case .recordsPerSecond(let rate)? = configuration.pace {
            try check("pace", rate, 0.001...10_000_000)
        }
        return GatewaySettings(
            endpoints: configuration.endpoints, route: route,
            format: configuration.format == .json ? .json : .msgpack, batchSize: configuration.batchSize,
            window: configuration.window, timeout: configuration.timeout,
            timeoutMilliseconds: Int32(max(1, (configuration.timeout * 1000).rounded())),
            attempts: configuration.attempts, pace: configuration.pace, keys: try configuration.keys?.load(),
            link: try configuration.link.checked(), watermarks: configuration.watermarks, interruption: interruption,
            notices: notices)
    }
}
