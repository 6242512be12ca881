import Metrics
import Testing

@Suite("Health and readiness answers")
struct MetricsBoardTests {
    @Test func beforeTheFirstPostTheServiceIsAliveButNotReady() {
        let board = MetricsBoard(stallLimit: 30)
        #expect(board.answer(path: "/healthz", now: 100) == .text(200, "starting\n"))
        #expect(board.answer(path: "/readyz", now: 100) == .text(503, "not ready: starting\n"))
        #expect(board.answer(path: "/metrics", now: 100).body == "")
    }

    @Test func readinessSaysWhyNot() {
        let board = MetricsBoard(stallLimit: 30)
        board.publish([], notReady: ["store not open", "behind the journals by 9 s"], now: 10)
        #expect(
            board.answer(path: "/readyz", now: 11)
                == .text(503, "not ready: store not open; behind the journals by 9 s\n"))
        board.publish([.single("up", .gauge, "Up.", 1)], notReady: [], now: 12)
        #expect(board.answer(path: "/readyz", now: 12) == .text(200, "ready\n"))
        let metrics = board.answer(path: "/metrics", now: 12)
        #expect(metrics.status == 200 && metrics.contentType == PrometheusText.contentType)
        #expect(metrics.body.hasSuffix("up 1\n"))
    }

    @Test func aLoopThatStopsPostingFailsHealth() {
        let board = MetricsBoard(stallLimit: 30)
        board.publish([], notReady: [], now: 100)
        #expect(board.answer(path: "/healthz", now: 129).status == 200)
        let stalled = board.answer(path: "/healthz", now: 131)
        #expect(stalled.status == 503)
        #expect(stalled.body.contains("31 s"))
    }

    @Test func otherPathsAreNotFound() {
        #expect(MetricsBoard().answer(path: "/").status == 404)
    }
}

@Suite("Metrics endpoint setting")
struct MetricsEndpointParsingTests {
    @Test func hostsAndPorts() throws {
        #expect(try MetricsEndpoint(parsing: "127.0.0.1:9550").description == "127.0.0.1:9550")
        #expect(try MetricsEndpoint(parsing: "*:9550").description == "0.0.0.0:9550")
        #expect(try MetricsEndpoint(parsing: ":0").port == 0)
        #expect(try MetricsEndpoint(parsing: "localhost:80").host == "127.0.0.1")
        #expect(try MetricsEndpoint(parsing: "[::1]:9550").description == "[::1]:9550")
        #expect(try MetricsEndpoint(parsing: "127.0.0.1:1").isLoopback)
        #expect(try MetricsEndpoint(parsing: "[::1]:1").isLoopback)
        #expect(try !MetricsEndpoint(parsing: "*:1").isLoopback)
        #expect(try !MetricsEndpoint(parsing: "10.0.0.5:1").isLoopback)
    }

    @Test func badEndpointsSayWhatIsExpected() {
        for text in ["9550", "host:9550", "127.0.0.1:70000", "127.0.0.1:x", "[::1:9550"] {
            #expect(throws: MetricsEndpoint.Invalid.self, "\(text)") { try MetricsEndpoint(parsing: text) }
        }
        do {
            _ = try MetricsEndpoint(parsing: "host:9550")
        } catch {
            #expect(error.description.contains("\"host\" is not an IP address"))
        }
    }
}
