/// A gateway batch's frames as a ROUTER receives them (PROTOCOL §7): `[identity, (empty delimiter,) batchID,
/// contentType, body (, header)]`. One reading for sensor-ingest and for the benchmark's bare server, so that the
/// baseline takes exactly what gateways send.
public struct GatewayFrames {
    /// The reply's routing frames: the gateway's identity, and the empty delimiter when the gateway sent one (a REQ
    /// client).
    public var replyPrefix: ArraySlice<[UInt8]>
    /// The frames after the routing ones: `[batchID, contentType, body]` or `[batchID, contentType, body, header]`
    /// when the message is well formed (`isWellFormed`).
    public var parts: ArraySlice<[UInt8]>

    public init(message: [[UInt8]]) {
        // Slices of the message, not copies of it (an allocation less a gateway batch each).
        var rest = message.dropFirst()
        // A REQ client's empty delimiter: [delimiter, batchID, contentType, body (, header)]. A DEALER sends none, and
        // four frames from it are a batch with a header.
        if rest.count == 5 || (rest.count == 4 && rest.first!.isEmpty), rest.first!.isEmpty {
            rest.removeFirst()
        }
        replyPrefix = message[..<rest.startIndex]
        parts = rest
    }

    public var isWellFormed: Bool { parts.count == 3 || parts.count == 4 }
    /// The gateway's batch ID (empty when the message has no frame for it).
    public var batchID: [UInt8] { parts.first ?? [] }
    /// The content type's frame and the body (only when `isWellFormed`).
    public var contentType: [UInt8] { parts[parts.startIndex + 1] }
    public var body: [UInt8] { parts[parts.startIndex + 2] }
    /// The header frame (`GatewayBatchHeader`), nil when absent or empty.
    public var header: [UInt8]? {
        parts.count == 4 && !parts[parts.startIndex + 3].isEmpty ? parts[parts.startIndex + 3] : nil
    }
}
