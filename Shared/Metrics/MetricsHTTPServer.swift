import CMicroHTTPD

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The services' small HTTP endpoint (libmicrohttpd, on its own thread): GET /metrics, /healthz and /readyz,
/// answered from a `MetricsBoard`. Anything else is 404; a method other than GET or HEAD is 405.
public final class MetricsHTTPServer: @unchecked Sendable {
    // @unchecked: `daemon` is set in init and cleared in stop(), which the owner calls once, from one thread.
    public let endpoint: MetricsEndpoint
    /// The port listened on (the system's choice when the endpoint said 0).
    public let port: UInt16
    private var daemon: OpaquePointer?
    private let board: Unmanaged<MetricsBoard>

    /// Few scrapers are expected; a flood of connections must not take threads or memory from the service.
    static let connectionLimit: UInt32 = 32
    static let idleTimeoutSeconds: UInt32 = 10

    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(endpoint: MetricsEndpoint, board: MetricsBoard) throws(StartFailure) {
        self.endpoint = endpoint
        self.board = Unmanaged.passRetained(board)
        let context = self.board.toOpaque()
        let started = endpoint.withSocketAddress { address in
            roadsave_http_start(address, Self.handle, context, Self.connectionLimit, Self.idleTimeoutSeconds)
        }
        guard let started else {
            let reason = String(cString: strerror(errno))
            self.board.release()
            throw StartFailure(description: "cannot serve metrics on \(endpoint): \(reason)")
        }
        daemon = started
        port = roadsave_http_port(started)
    }

    deinit { stop() }

    /// Closes the listening socket and the connections, and waits for the HTTP thread to end.
    public func stop() {
        guard let daemon else { return }
        MHD_stop_daemon(daemon)
        self.daemon = nil
        board.release()
    }

    private static let handle: MHD_AccessHandlerCallback = { context, connection, url, method, _, _, _, _ in
        let board = Unmanaged<MetricsBoard>.fromOpaque(context!).takeUnretainedValue()
        let verb = method.map { String(cString: $0) } ?? ""
        let answer: HTTPAnswer
        if verb == "GET" || verb == "HEAD" {
            answer = board.answer(path: url.map { String(cString: $0) } ?? "/")
        } else {
            answer = .text(405, "method \(verb) not allowed: use GET\n")
        }
        let body = Array(answer.body.utf8)
        let response = body.withUnsafeBytes { roadsave_http_response_copy($0.baseAddress, $0.count) }
        guard let response else { return .NO }
        MHD_add_response_header(response, "Content-Type", answer.contentType)
        MHD_add_response_header(response, "Cache-Control", "no-store")
        if answer.status == 405 { MHD_add_response_header(response, "Allow", "GET, HEAD") }
        let queued = MHD_queue_response(connection, UInt32(answer.status), response)
        MHD_destroy_response(response)
        return queued
    }
}
