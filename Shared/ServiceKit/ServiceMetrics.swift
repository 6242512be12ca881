import CommandSettings
import Foundation
import Logging
import Metrics
import ZeroMQ

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A service's /metrics, /healthz and /readyz (`--metrics-endpoint`): the HTTP server, started before the service's
/// loop so that /healthz answers while a large store loads, and the loop's periodic post of what the service says
/// about itself. Scrapes read the last post, never the service's state: values are at most `postInterval` old.
/// `Sendable`: made and stopped on the service's calling thread, started on its reactor thread.
public final class ServiceMetrics: Sendable {
    /// `--metrics-endpoint`: nil when unset (or empty).
    public static let spec = Setting<MetricsEndpoint?>(
        flag: "--metrics-endpoint", environment: "ROADSAVE_METRICS_ENDPOINT", key: "metricsEndpoint", default: nil,
        shown: nil,
        help:
            "HOST:PORT to serve /metrics (Prometheus), /healthz and /readyz on over HTTP (127.0.0.1:9550, *:9550); unset: none"
    ) {
        text, flag throws(CommandLineOptions.UsageError) in
        guard !text.isEmpty else { return nil }
        do {
            return try MetricsEndpoint(parsing: text)
        } catch {
            throw .init("\(flag): \(error)")
        }
    }

    /// The endpoint of `--metrics-endpoint`, nil when unset.
    public static func endpoint(_ source: ServiceConfiguration) throws(CommandLineOptions.UsageError)
        -> MetricsEndpoint?
    {
        try source.value(spec)
    }

    /// How often the loop posts its metrics and readiness.
    public static let postInterval = 0.5

    public let board = MetricsBoard()
    private let server: MetricsHTTPServer?
    private let startedAt = Date().timeIntervalSince1970

    /// Serves `endpoint` (when given) from now on; throws when it cannot be listened on (a port in use).
    public init(endpoint: MetricsEndpoint?, log: Log) throws {
        guard let endpoint else {
            server = nil
            return
        }
        let server = try MetricsHTTPServer(endpoint: endpoint, board: board)
        self.server = server
        log.info(
            "metrics listening",
            [
                "endpoint": "http://\(endpoint.host):\(server.port)",
                "paths": "/metrics /healthz /readyz",
            ])
        if !endpoint.isLoopback {
            // Counters and endpoint names only, nothing of a device; still, say who can read them.
            log.warning(
                "the metrics endpoint is plain HTTP without authentication, open to whoever reaches "
                    + "\(endpoint): keep it on a private network or behind the scraper's proxy")
        }
    }

    /// Posts now and every `postInterval` on `loop` what `collect` says: the service's metrics and why it is not ready
    /// (nothing when it is), with the process's figures and those of the loop's outside sockets
    /// (`OutsideSockets.families`, named `roadsave_<service>_connections_…`). Without an endpoint nothing is collected.
    public func start(
        on loop: ReactorLoop, service: String,
        collect: @escaping () -> (families: [MetricFamily], notReady: [String])
    ) {
        guard server != nil else { return }
        let post = { [board, startedAt, weak loop] in
            let (families, notReady) = collect()
            let sockets = loop?.value(OutsideSockets.self)?.families(service: service) ?? []
            board.publish(families + sockets + ProcessMetrics.families(startedAt: startedAt), notReady: notReady)
        }
        post()
        _ = loop.every(Self.postInterval, post)
    }

    /// Stops serving (the process is ending).
    public func stop() {
        server?.stop()
    }
}

/// The process's own figures, as Prometheus clients name them.
enum ProcessMetrics {
    static func families(startedAt: Double) -> [MetricFamily] {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        var families: [MetricFamily] = [
            .single("process_cpu_seconds_total", .counter, "User and system CPU time spent in seconds.", cpu),
            .single(
                "process_start_time_seconds", .gauge, "Start time of the process since unix epoch in seconds.",
                startedAt),
        ]
        if let resident = residentBytes() {
            families.append(
                .single("process_resident_memory_bytes", .gauge, "Resident memory size in bytes.", resident))
        }
        return families
    }

    /// From /proc/self/statm: the second field is resident pages.
    private static func residentBytes() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return nil }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
    }
}
