import DetectionEngine
import Foundation
import Logging
import PlatformHTTP
import RecordCodecs
import ServiceKit
import ZeroMQ

/// detection: the shell around `DetectionCore`, which decides everything (the re-run after a restart, reading the
/// journals, the clock for silent devices, what must be stored before it leaves, checkpoints, control commands, the
/// stop). The shell keeps what the core must not touch: the sockets (the journals' feeds, the control socket, the
/// outbox feed the notifier reads), the store (`DetectionStore`, with the devices that left memory), the platform
/// calls (async tasks whose answers are posted back) and the clocks. Everything runs on one reactor thread.
///
/// Durability: every input the fleet takes that is not in a journal (platform answers, control commands, clock
/// ticks) and every range of journal records is written to the store, with the events they gave, before those
/// events can leave. A checkpoint of the whole fleet is taken every few seconds. A restart loads the checkpoint and
/// re-runs the inputs after it: the fleet is deterministic and event IDs derive from content, so the re-run gives the
/// same events with the same IDs, and the notifier drops those it already has.
///
/// The shell is `Sendable` as the compiler checks it: its own properties are immutable, and what the service changes
/// (`DetectionServing`) is reached only on the reactor thread, through a `ReactorBound`.
public final class DetectionService: Sendable {
    public let configuration: DetectionConfiguration
    private let log: Log
    private let context: ZMQContext
    private let reactor: Reactor
    private let serving: ReactorBound<DetectionServing>

    /// `platform` replaces the one the configuration describes (tests use a scripted one).
    public init(configuration: DetectionConfiguration, platform: (any Platform)? = nil) throws {
        self.configuration = configuration
        log = Log(category: "detection", minimumLevel: configuration.logLevel)
        let platform = try platform ?? configuration.makePlatform()
        context = try ZMQContext()
        reactor = Reactor(name: "detection", context: context, linkTimings: configuration.linkTimings)
        serving = ReactorBound(
            handingOver: DetectionServing(
                configuration: configuration, log: log, platform: platform,
                reactor: reactor),
            to: reactor)
    }

    public func run() throws {
        try ServiceLoop.run(reactor, context: context, metricsEndpoint: configuration.metricsEndpoint, log: log) {
            [serving] loop, metrics in try serving.value.setUp(loop, metrics: metrics)
        }
    }

    /// Graceful stop: no more records are read, platform calls in flight get up to `stopGrace` seconds and their
    /// answers are stored, a last checkpoint is taken, then the sockets close. Nothing buffered is lost: reorder
    /// buffers are part of the checkpoint.
    public func stop() {
        reactor.post { [serving] loop in serving.value.stop(loop) }
    }

    /// For tests of recovery: stops the loop as a crash would leave things, without the graceful stop's wait for
    /// platform calls or its last checkpoint (what is stored stays; work posted to the loop already still runs).
    func abandonForTest() {
        reactor.stop()
    }

    /// A checkpoint row's JSON (`DetectionServing.checkpointJSON`).
    static func checkpointJSON<Value: Encodable>(
        _ value: Value,
        _ encoder: StreamingJSONEncoder = StreamingJSONEncoder()
    ) throws -> [UInt8] {
        try DetectionServing.checkpointJSON(value, encoder)
    }
}
