import Logging
import Metrics
import ZeroMQ

/// How every service shell runs its reactor: the metrics endpoint is served from before the loop starts (so that
/// /healthz answers while a large store loads) until the loop has ended, `setUp` runs on the reactor's thread, and
/// the ZeroMQ context is terminated, then `ended` runs, before `run` returns or throws the loop's failure.
public enum ServiceLoop {
    public static func run(
        _ reactor: Reactor, context: ZMQContext, metricsEndpoint: MetricsEndpoint?, log: Log,
        ended: () -> Void = {},
        setUp: @escaping @Sendable (ReactorLoop, ServiceMetrics) throws -> Void
    ) throws {
        let metrics = try ServiceMetrics(endpoint: metricsEndpoint, log: log)
        defer { metrics.stop() }
        reactor.start { loop in try setUp(loop, metrics) }
        let failure = reactor.wait()
        // Returns only once libzmq has closed the sockets: a listener closed later would unlink the ipc file a new
        // instance bound meanwhile.
        context.terminate()
        ended()
        if let failure { throw failure }
    }
}
