import RoadSaveModel
import Wire

/// Which of several sensor-ingests a gateway sends a device's records to: the one at index
/// `DeviceShard.of(device, shards: endpoints.count)` of its list, in the order given. One device always goes to one
/// ingest, so its records sit in one journal in the order they were sent, under one stream's watermarks.
///
/// The hash is the wire protocol's (PROTOCOL §1: 64-bit FNV-1a of app, 0xFF, user; `DeviceShard`), so gateways
/// written in other languages route alike, provided every gateway lists the ingests in the same order. A different
/// list (another ingest, another order) moves devices between journals: change it only once the gateways have drained.
public struct IngestRoute: Sendable, Equatable {
    public enum ListError: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        /// The same endpoint twice would put two streams of one gateway name, with different promises, in one journal.
        case repeated(String)

        public var description: String {
            switch self {
            case .empty: "no ingest to send to"
            case .repeated(let endpoint): "\(endpoint) is listed twice (each ingest once)"
            }
        }
    }

    /// The ingests' endpoints, in the order every gateway lists them.
    public let endpoints: [String]

    /// Every device to the one ingest.
    public init(endpoint: String) {
        endpoints = [endpoint]
    }

    public init(endpoints: [String]) throws(ListError) {
        guard !endpoints.isEmpty else { throw .empty }
        var seen = Set<String>()
        for endpoint in endpoints where !seen.insert(endpoint).inserted { throw .repeated(endpoint) }
        self.endpoints = endpoints
    }

    /// The index in `endpoints` of the ingest that takes `device`'s records.
    public func index(of device: DeviceID) -> Int {
        // With one ingest there is no hash to compute (every record of a send would pay for it).
        endpoints.count == 1 ? 0 : DeviceShard.of(device, shards: endpoints.count)
    }

    /// The endpoint of the ingest that takes `device`'s records.
    public func endpoint(of device: DeviceID) -> String { endpoints[index(of: device)] }
}
