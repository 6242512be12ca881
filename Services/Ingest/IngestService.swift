import Logging
import ServiceKit
import ZeroMQ

/// sensor-ingest: takes batches of records from gateways (ROUTER), validates every record against PROTOCOL §2, stores
/// the accepted ones in its journal (SQLite, fsync'd) and only then acknowledges each batch (accepted count, and index,
/// field and reason of every rejected record). Detection pulls the records from the journal by position on the
/// records endpoint (a `FeedServer`). Good records of a batch with bad ones still go through; records of an unknown
/// application are refused; a batch the journal cannot store is refused whole, never acknowledged and dropped.
///
/// Group commit: every batch waiting on the gateway socket is validated, and all their records are stored in one
/// transaction, so one fsync serves many batches. Memory stays bounded under overload: the gateway socket queues at
/// most `gatewayQueueLimit` messages per gateway, and gateways wait for their acknowledgements.
///
/// The shell is `Sendable` as the compiler checks it: its own properties are immutable, and what the service changes
/// (`IngestServing`) is reached only on the reactor thread, through a `ReactorBound`.
public final class IngestService: Sendable {
    public let configuration: IngestConfiguration
    private let log: Log
    private let context: ZMQContext
    private let reactor: Reactor
    private let serving: ReactorBound<IngestServing>

    public init(configuration: IngestConfiguration) throws {
        self.configuration = configuration
        log = Log(category: "ingest", minimumLevel: configuration.logLevel)
        context = try ZMQContext()
        reactor = Reactor(name: "ingest", context: context, linkTimings: configuration.linkTimings)
        serving = ReactorBound(
            handingOver: IngestServing(configuration: configuration, log: log, reactor: reactor),
            to: reactor)
    }

    /// Opens the journal, binds the sockets and serves until `stop()`; throws if the journal or a socket cannot be
    /// set up (another --shards than the journal's, a data directory that is not writable, a port in use).
    public func run() throws {
        try ServiceLoop.run(reactor, context: context, metricsEndpoint: configuration.metricsEndpoint, log: log) {
            [serving] loop, metrics in try serving.value.setUp(loop, metrics: metrics)
        }
    }

    /// Graceful stop: the loop stops taking batches, finishes the group in hand and closes the journal and sockets.
    public func stop() {
        reactor.stop()
    }
}
