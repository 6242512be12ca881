import Foundation
import Logging
import NotifierSinks
import ServiceKit
import Storage
import SystemKit
import ZeroMQ

/// notifier: pulls detection's events from its outbox feeds, stores them durably, and delivers each through every
/// configured sink from that sink's own outbox: a ZeroMQ PUB socket for downstream subscribers (frames
/// `[<event>.<app>.<user>, JSON, position]`, PROTOCOL §7), webhooks and NDJSON. Subscribers that were away ask the
/// catch-up endpoint for what they missed.
///
/// The flow, all on one reactor thread:
/// 1. One fetch outstanding per detection feed. Each reply's events and the feed's new position are stored in one
///    transaction (an eventID already stored is dropped, across restarts), and only then is the next fetch sent,
///    acknowledging that position: detection deletes its copies only of what is committed here.
/// 2. Storing an event adds an outbox row per sink. Each sink reads its outbox in position order, a window at a time
///    (never the whole backlog in memory), and a row is deleted when the sink took the event.
/// 3. Events no sink still needs are deleted after the retention age (the catch-up window).
///
/// The shell is `Sendable` as the compiler checks it: its own properties are immutable, and what the service changes
/// (`NotifierServing`) is reached only on the reactor thread, through a `ReactorBound`.
public final class NotifierService: Sendable {
    public let configuration: NotifierConfiguration
    private let log: Log
    private let context: ZMQContext
    private let reactor: Reactor
    private let serving: ReactorBound<NotifierServing>
    /// The figures of the "stopped" line, taken as the loop ends (the line is logged once libzmq let go).
    private let stoppedFigures = Locked((stored: 0, duplicates: 0, delivered: 0))

    /// Most outbox entries in one sink's hands.
    static var window: Int { NotifierServing.window }

    public convenience init(configuration: NotifierConfiguration) throws {
        try self.init(configuration: configuration, libzmqVersion: zmqVersion())
    }

    /// `libzmqVersion`: what the live socket's choice (`LiveFiltering`) is made for; the tests give another.
    init(configuration: NotifierConfiguration, libzmqVersion: (major: Int32, minor: Int32, patch: Int32)) throws {
        self.configuration = configuration
        log = Log(category: "notifier", minimumLevel: configuration.logLevel)
        _ = try DataDirectory.prepare(configuration.dataDirectory)
        let ndjsonSink: NDJSONSink?
        if let path = configuration.ndjsonPath {
            ndjsonSink = try NDJSONSink(
                path: path, format: configuration.ndjsonFormat,
                log: Log(category: "ndjson", minimumLevel: configuration.logLevel))
        } else {
            ndjsonSink = nil
        }
        context = try ZMQContext()
        reactor = Reactor(name: "notifier", context: context, linkTimings: configuration.linkTimings)
        serving = ReactorBound(
            handingOver: NotifierServing(
                configuration: configuration, libzmqVersion: libzmqVersion,
                log: log, ndjsonSink: ndjsonSink, reactor: reactor),
            to: reactor)
    }

    /// The store's file.
    public var storePath: String { DataDirectory.file(NotifierStore.fileName, in: configuration.dataDirectory) }

    public func run() throws {
        try ServiceLoop.run(
            reactor, context: context, metricsEndpoint: configuration.metricsEndpoint, log: log,
            ended: {
                // Also when the loop failed; the figures were taken on its thread as it stopped.
                let (stored, duplicates, delivered) = stoppedFigures.withLock { $0 }
                log.info(
                    "stopped",
                    [
                        "stored": String(stored), "duplicatesDropped": String(duplicates),
                        "delivered": String(delivered),
                    ])
            }
        ) { [serving, stoppedFigures] loop, metrics in
            loop.onStop {
                let counters = serving.value.counters
                stoppedFigures.withLock {
                    $0 = (counters.stored, counters.duplicates, counters.deliveredBySink.values.reduce(0, +))
                }
            }
            try serving.value.start(loop, metrics: metrics)
        }
    }

    /// Stops gracefully: no more fetches, the sinks finish what is in flight (briefly), then the reactor stops.
    public func stop() {
        reactor.post { [serving] loop in serving.value.beginStopping(loop) }
    }

    /// The endpoints bound (with the ports picked for `*`), once running: for tests and logs.
    public func boundEndpoints() async throws -> (publish: String?, catchUp: String?) {
        try await reactor.run { [serving] _ in
            (serving.value.publisher?.lastEndpoint, serving.value.catchUpSocket?.lastEndpoint)
        }
    }

    /// Entries each sink holds in memory now (read from its outbox, not yet settled), by sink key: what the outbox
    /// windows bound, whatever the backlog on disk. For tests and diagnostics.
    func entriesInHand() async throws -> [String: Int] {
        try await reactor.run { [serving] _ in
            Dictionary(serving.value.outlets.map { ($0.key, $0.window.inHand) }, uniquingKeysWith: +)
        }
    }
}
