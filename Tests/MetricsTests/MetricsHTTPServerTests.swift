import Foundation
import Metrics
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The libmicrohttpd server for real, on a loopback port the system picks.
@Suite("Metrics HTTP server")
struct MetricsHTTPServerTests {
    private func get(_ port: UInt16, _ path: String, method: String = "GET") async throws -> (Int, String, String?) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        return (http.statusCode, String(decoding: data, as: UTF8.self), http.value(forHTTPHeaderField: "Content-Type"))
    }

    @Test func servesTheBoard() async throws {
        // A busy machine may take long between the post and the last request: no stall is meant here.
        let board = MetricsBoard(stallLimit: 3600)
        let server = try MetricsHTTPServer(endpoint: try MetricsEndpoint(parsing: "127.0.0.1:0"), board: board)
        defer { server.stop() }
        #expect(server.port != 0)
        board.publish([.single("answers_total", .counter, "Answers.", 42)], notReady: ["warming up"])

        let (status, body, type) = try await get(server.port, "/metrics")
        #expect(status == 200)
        #expect(type == PrometheusText.contentType)
        #expect(body.contains("\nanswers_total 42\n"))
        let (ready, reason, _) = try await get(server.port, "/readyz")
        #expect(ready == 503 && reason == "not ready: warming up\n")
        #expect(try await get(server.port, "/healthz").0 == 200)
        #expect(try await get(server.port, "/nothing").0 == 404)
        #expect(try await get(server.port, "/metrics", method: "POST").0 == 405)
    }

    @Test func aPortInUseIsAClearError() throws {
        let first = try MetricsHTTPServer(endpoint: try MetricsEndpoint(parsing: "127.0.0.1:0"), board: MetricsBoard())
        defer { first.stop() }
        #expect {
            try MetricsHTTPServer(
                endpoint: try MetricsEndpoint(parsing: "127.0.0.1:\(first.port)"), board: MetricsBoard())
        } throws: { error in
            "\(error)".contains("cannot serve metrics on 127.0.0.1:\(first.port)")
        }
    }

    @Test func stoppingClosesThePort() async throws {
        let server = try MetricsHTTPServer(endpoint: try MetricsEndpoint(parsing: "127.0.0.1:0"), board: MetricsBoard())
        let port = server.port
        server.stop()
        await #expect(throws: (any Error).self) { _ = try await get(port, "/healthz") }
    }
}
