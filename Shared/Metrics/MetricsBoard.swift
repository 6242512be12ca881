import Foundation
import SystemKit

/// What a service last said about itself, for the HTTP thread to serve: its metrics, rendered, and whether it is
/// ready. The service's own thread posts here (`publish`); the HTTP thread only reads, so a scrape never touches the
/// service's state and never waits for its loop.
public final class MetricsBoard: Sendable {
    public struct Snapshot: Sendable {
        public var metrics: String
        /// Why the service is not ready; empty when it is.
        public var notReady: [String]
        /// When this was posted (monotonic seconds).
        public var postedAt: Double
    }

    /// Without a post for this long, the service's loop is taken to be stuck: /healthz fails.
    public let stallLimit: Double
    private let snapshot = Locked<Snapshot?>(nil)

    public init(stallLimit: Double = 30) {
        self.stallLimit = stallLimit
    }

    public static func now() -> Double { MonotonicClock.now() }

    public func publish(_ families: [MetricFamily], notReady: [String], now: Double = MetricsBoard.now()) {
        let posted = Snapshot(metrics: PrometheusText.render(families), notReady: notReady, postedAt: now)
        snapshot.withLock { $0 = posted }
    }

    public var latest: Snapshot? { snapshot.withLock { $0 } }

    /// An HTTP answer for `path`: /metrics, /healthz or /readyz.
    public func answer(path: String, now: Double = MetricsBoard.now()) -> HTTPAnswer {
        let current = latest
        switch path {
        case "/metrics":
            // Before the first post there is nothing to say yet, which is not an error of the scrape.
            return HTTPAnswer(status: 200, contentType: PrometheusText.contentType, body: current?.metrics ?? "")
        case "/healthz":
            guard let current else { return .text(200, "starting\n") }
            let silent = now - current.postedAt
            if silent > stallLimit {
                return .text(503, "stalled: the service's loop has not reported for \(Int(silent)) s\n")
            }
            return .text(200, "ok\n")
        case "/readyz":
            guard let current else { return .text(503, "not ready: starting\n") }
            if current.notReady.isEmpty { return .text(200, "ready\n") }
            return .text(503, "not ready: " + current.notReady.joined(separator: "; ") + "\n")
        default:
            return .text(404, "not found: \(path) (try /metrics, /healthz or /readyz)\n")
        }
    }
}

/// A status, a content type and a body: all an HTTP answer of the metrics endpoint needs.
public struct HTTPAnswer: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: String

    public static func text(_ status: Int, _ body: String) -> HTTPAnswer {
        HTTPAnswer(status: status, contentType: "text/plain; charset=utf-8", body: body)
    }
}
