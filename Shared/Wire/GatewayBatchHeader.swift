import RecordCodecs
import RoadSaveModel

/// The optional fourth frame of a gateway batch, `[batchID, contentType, body, header]`: the gateway's own word on
/// how far its stream has come in event time, so that detection orders a device's records by what the gateway
/// still holds rather than by how long the wire has been quiet (a low watermark, as Flink, Beam and Kafka Streams
/// have it). In the batch's content type, a map:
///
///     {"gateway": "gw-7", "watermark": 1733050000.5}   no record with t < watermark follows this batch from gw-7
///     {"gateway": "gw-7", "end": true}                  gw-7's stream ends with this batch: nothing more follows
///
/// `gateway` names the stream (1–200 bytes of UTF-8, stable while the gateway runs; a gateway that forgets what it
/// sent must take a new name). A promise counts for the records of this batch and everything after it in the
/// journal, so a gateway computes it over everything it has not had acknowledged besides this batch and everything
/// it may still read. Unknown members are ignored. A header that cannot be read refuses the batch whole (index -1,
/// field `header.…`): its records cannot be ordered by a promise nobody can read, and the gateway keeps them.
public struct GatewayBatchHeader: Sendable, Equatable {
    public enum Progress: Sendable, Equatable {
        /// No record with t below this (seconds since 1970) will follow from the stream.
        case watermark(Double)
        /// The stream is over: the same as a watermark past every time (a bounded input at its end).
        case end
    }

    public var gateway: String
    public var progress: Progress

    public static let maximumGatewayBytes = 200

    public init(gateway: String, progress: Progress) {
        self.gateway = gateway
        self.progress = progress
    }

    /// The event time below which nothing more comes: the watermark, or infinity at the end.
    public var watermark: Double {
        switch progress {
        case .watermark(let time): time
        case .end: .infinity
        }
    }

    /// The header as a `JSONValue` (the same tree in both content types).
    public var value: JSONValue {
        switch progress {
        case .watermark(let time): .object([("gateway", .string(gateway)), ("watermark", .number(time))])
        case .end: .object([("gateway", .string(gateway)), ("end", .bool(true))])
        }
    }

    public func encode(as contentType: ContentType) -> [UInt8] {
        switch contentType {
        case .json: JSONText.bytes(value)
        case .msgpack: MessagePack.encode(value)
        }
    }

    /// Reads the header frame. Throws a `RecordError` whose field names the member at fault (`header`,
    /// `header.gateway`, `header.watermark`, `header.end`). A gateway's name comes from `identifiers` when given (the
    /// same few names head every batch).
    public static func decode(_ frame: [UInt8], contentType: ContentType, identifiers: IdentifierCache? = nil)
        throws(RecordError) -> GatewayBatchHeader
    {
        if contentType == .msgpack, let common = try decodeCommon(frame, identifiers: identifiers) { return common }
        let document: JSONValue
        do {
            document =
                switch contentType {
                case .json: try JSONText.decode(frame)
                case .msgpack: try MessagePack.decode(frame)
                }
        } catch {
            throw RecordError(field: "header", reason: "unreadable: \(error)")
        }
        return try decode(document)
    }

    /// The header as gateways write it, read where it lies (no document, no tree: an allocation or three less a
    /// batch): a MessagePack map of two members, `gateway` (a string) then `watermark` (a number) or `end` (true).
    /// Nil for any other shape, which `decode` reads in full; what it returns, `decode` would.
    static func decodeCommon(_ frame: [UInt8], identifiers: IdentifierCache?) throws(RecordError)
        -> GatewayBatchHeader?
    {
        try frame.withUnsafeBufferPointer { bytes throws(RecordError) -> GatewayBatchHeader? in
            guard let base = bytes.baseAddress else { return nil }
            var cursor = MessagePackCursor(base, count: bytes.count)
            guard cursor.byte() == 0x82, let key = cursor.string(), MessagePackCursor.equals(key, "gateway"),
                let name = cursor.string(), !name.isEmpty
            else { return nil }
            guard let second = cursor.string() else { return nil }
            var end = false
            var watermark: Double?
            if MessagePackCursor.equals(second, "watermark") {
                guard let time = cursor.number() else { return nil }
                watermark = time
            } else if MessagePackCursor.equals(second, "end") {
                guard cursor.byte() == 0xC3 else { return nil }
                end = true
            } else {
                return nil
            }
            guard cursor.offset == bytes.count else { return nil }
            let ascii = !name.contains { $0 >= 0x80 }
            let gateway =
                identifiers?.string(name.baseAddress!, name.count, ascii: ascii)
                ?? (ascii ? String(decoding: name, as: UTF8.self) : String(validating: name, as: UTF8.self))
            guard let gateway else { return nil }
            return try checked(gateway: gateway, end: end, watermark: watermark)
        }
    }

    public static func decode(_ document: JSONValue) throws(RecordError) -> GatewayBatchHeader {
        guard case .object = document else {
            throw RecordError(
                field: "header", reason: "expected a map with gateway and watermark, found \(document.typeName)")
        }
        guard let gatewayValue = document["gateway"] else {
            throw RecordError(field: "header.gateway", reason: "missing: a header names the gateway's stream")
        }
        guard case .string(let gateway) = gatewayValue else {
            throw RecordError(field: "header.gateway", reason: "expected a string, found \(gatewayValue.typeName)")
        }
        try check(gateway: gateway)
        let end: Bool
        switch document["end"] {
        case nil, .null?, .bool(false)?:
            end = false
        case .bool(true)?:
            end = true
        case let other?:
            throw RecordError(field: "header.end", reason: "expected true or false, found \(other.typeName)")
        }
        var watermark: Double?
        if !end, let watermarkValue = document["watermark"] {
            guard case .number(let number) = watermarkValue else {
                throw RecordError(
                    field: "header.watermark",
                    reason: "expected a number (seconds since 1970), found \(watermarkValue.typeName)")
            }
            watermark = number
        }
        return try checked(gateway: gateway, end: end, watermark: watermark)
    }

    /// The header of a gateway's stream name and its promise, read from a map whichever way: the gateway 1 to
    /// `maximumGatewayBytes` bytes, and `end`, or else a watermark within the times records may have.
    public static func checked(gateway: String, end: Bool, watermark: Double?) throws(RecordError)
        -> GatewayBatchHeader
    {
        try check(gateway: gateway)
        if end { return GatewayBatchHeader(gateway: gateway, progress: .end) }
        guard let watermark else {
            throw RecordError(
                field: "header.watermark", reason: "missing: a header carries a watermark or \"end\": true")
        }
        guard watermark.isFinite, watermark >= 0, watermark <= RecordDecoding.latestTime else {
            throw RecordError(
                field: "header.watermark",
                reason: "\(watermark) is not a time between 1970 and 2100 in seconds since 1970")
        }
        return GatewayBatchHeader(gateway: gateway, progress: .watermark(watermark))
    }

    private static func check(gateway: String) throws(RecordError) {
        guard !gateway.isEmpty, gateway.utf8.count <= maximumGatewayBytes else {
            throw RecordError(
                field: "header.gateway", reason: "must be 1 to \(maximumGatewayBytes) bytes, got \(gateway.utf8.count)")
        }
    }
}
