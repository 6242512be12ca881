import GatewayKit
import Wire
import ZeroMQ

/// What a gateway's engine needs, checked and read (keys loaded) when the gateway was made.
struct GatewaySettings: Sendable {
    var endpoints: [String]
    var route: IngestRoute
    var format: ContentType
    var batchSize: Int
    var window: Int
    var timeout: Double
    var timeoutMilliseconds: Int32
    var attempts: Int
    var pace: RoadSaveGateway.Pace?
    var keys: CurveClientKeys?
    var link: LinkTimings
    /// Headers with watermarks (nil: none), their disorder bound, stream name and end.
    var watermarks: RoadSaveGateway.Watermarks?
    /// Asked every round (at most 100 ms apart): a signal number that interrupts the gateway, or nil (the commands'
    /// SIGINT and SIGTERM; the library's callers cancel their task instead).
    var interruption: (@Sendable () -> Int32?)?
    var notices: (@Sendable (GatewayNotice) -> Void)?

    func notify(_ notice: GatewayNotice) { notices?(notice) }
}
