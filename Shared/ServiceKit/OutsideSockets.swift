import Logging
import Metrics
import ZeroMQ

/// What every socket that takes outside connections gets (gateways, control, subscribers, catch-up), in one line where
/// the service creates it, before `bind`: a handshake timeout of `handshakeTimeout` instead of libzmq's 30 s (a
/// connection that never finishes the ZMTP handshake holds a descriptor and memory until then), and a `SocketMonitor`
/// whose closed connections are logged with the peer address and a reason: handshake failures as warnings, other
/// closes as info, at most `LogBudget`'s lines a minute per service and then a count. The monitors stay in the loop's
/// values (`OutsideSockets`), where `ServiceMetrics` reads their counters for /metrics (`families(service:)`).
public final class OutsideSockets {
    /// `ZMQ_HANDSHAKE_IVL` of outside sockets: the greeting, a CURVE handshake and the ZAP answer take a few round
    /// trips; 5 s leaves room for slow links and frees a silent connection six times sooner than libzmq's default.
    public static let handshakeTimeoutMilliseconds: Int32 = 5000

    public private(set) var monitors: [SocketMonitor] = []
    private var budget = LogBudget()
    private let log: Log

    private init(log: Log) {
        self.log = log
    }

    /// Sets the handshake timeout on `socket` and starts its monitor. Call on the loop's thread, before `bind`.
    public static func watch(_ socket: ZMQSocket, name: String, loop: ReactorLoop, log: Log) throws {
        try socket.setHandshakeTimeout(milliseconds: handshakeTimeoutMilliseconds)
        let sockets =
            loop.value(OutsideSockets.self)
            ?? {
                let sockets = OutsideSockets(log: log)
                loop.setValue(sockets)
                _ = loop.every(sockets.budget.window) { [unowned sockets] in
                    sockets.reportHeldBack(sockets.budget.roll(at: loop.now))
                }
                return sockets
            }()
        let monitor = try SocketMonitor(socket, name: name, loop: loop) { [unowned sockets] closed in
            sockets.logClosed(closed, socket: name, loop: loop)
        }
        sockets.monitors.append(monitor)
    }

    /// Counters by socket name, for metrics.
    public var counters: [(name: String, counters: SocketMonitor.Counters)] {
        monitors.map { ($0.name, $0.counters) }
    }

    /// The monitors' counters as /metrics shows them, labelled by socket (`roadsave_<service>_connections_…`):
    /// connections accepted and open, accepts that failed, and handshakes by outcome. A rise in failed handshakes is
    /// a client with a wrong key or a scanner; open connections that only grow are clients that never close theirs.
    public func families(service: String) -> [MetricFamily] {
        let prefix = "roadsave_\(service)_connections"
        let counters = counters
        func family(_ name: String, _ kind: MetricFamily.Kind, _ help: String, _ value: (SocketMonitor.Counters) -> Int)
            -> MetricFamily
        {
            MetricFamily(
                name: "\(prefix)_\(name)", help: help, kind: kind,
                samples: counters.map { .init(labels: [("socket", $0.name)], value: Double(value($0.counters))) })
        }
        let outcomes: [(String, (SocketMonitor.Counters) -> Int)] = [
            ("succeeded", \.handshakesSucceeded), ("refused", \.handshakesFailedAuth),
            ("not_finished", \.handshakesFailedNoDetail),
        ]
        return [
            family("accepted_total", .counter, "Connections accepted on a socket that takes outside connections.") {
                $0.accepted
            },
            family("accept_failed_total", .counter, "Accepts that failed (out of descriptors, for one).") {
                $0.acceptFailed
            },
            family("open", .gauge, "Connections open now.") { $0.open },
            MetricFamily(
                name: "\(prefix)_handshakes_total",
                help: "ZMTP/CURVE handshakes by outcome: succeeded, refused (by the key allow-list), not_finished "
                    + "(timed out, the peer left, or not ZMTP).",
                kind: .counter,
                samples: counters.flatMap { socket in
                    outcomes.map { outcome, value in
                        .init(
                            labels: [("socket", socket.name), ("outcome", outcome)],
                            value: Double(value(socket.counters)))
                    }
                }),
        ]
    }

    private func logClosed(_ closed: SocketMonitor.Closed, socket: String, loop: ReactorLoop) {
        let (write, heldBack) = budget.admit(at: loop.now)
        reportHeldBack(heldBack)
        guard write else { return }
        let maximum = monitors.first { $0.name == socket }?.maximumMessageBytes
        let fields: KeyValuePairs<String, String> = [
            "socket": socket, "peer": closed.peer,
            "after": closed.seconds.map { String(Double(Int($0 * 1000)) / 1000) + "s" } ?? "-",
            "reason": closed.ending.reason(maximumMessageBytes: maximum),
        ]
        if closed.ending.isHandshakeFailure {
            log.warning("handshake failed", fields)
        } else {
            log.info("connection closed", fields)
        }
    }

    private func reportHeldBack(_ count: Int) {
        guard count > 0 else { return }
        log.warning(
            "connection log lines held back",
            [
                "count": String(count), "window": "\(Int(budget.window))s",
                "limit": String(budget.limit),
            ])
    }
}
