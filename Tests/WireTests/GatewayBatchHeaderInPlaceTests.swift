import RecordCodecs
import RoadSaveModel
import Testing

@testable import Wire

/// The header as gateways write it is read where it lies (`GatewayBatchHeader.decodeCommon`): whatever it reads, or
/// refuses, must be what reading the whole document gives.
@Suite struct GatewayBatchHeaderInPlaceTests {
    static let long = String(repeating: "g", count: GatewayBatchHeader.maximumGatewayBytes)
    static let tooLong = String(repeating: "g", count: GatewayBatchHeader.maximumGatewayBytes + 1)

    /// Headers of every shape: the common ones (which the reader in place takes) and others (which it leaves).
    static let documents: [(JSONValue, common: Bool)] = [
        (.object([("gateway", .string("gw-7")), ("watermark", .number(1_772_433_000.25))]), true),
        (.object([("gateway", .string("gw-7")), ("watermark", .number(1_772_433_000))]), true),
        (.object([("gateway", .string("gw-7")), ("watermark", .number(0))]), true),
        (.object([("gateway", .string("a gateway named at length")), ("end", .bool(true))]), true),
        (.object([("gateway", .string("passerelle-é")), ("watermark", .number(12.5))]), true),
        (.object([("gateway", .string(long)), ("watermark", .number(12.5))]), true),
        // Refused by the checks both readers share: too long a name, a time past 2100.
        (.object([("gateway", .string(tooLong)), ("watermark", .number(12.5))]), true),
        (.object([("gateway", .string("gw")), ("watermark", .number(5e9))]), true),
        // Other shapes: read (or refused) by the document.
        (.object([("gateway", .string("gw")), ("watermark", .number(-1))]), false),
        (.object([("gateway", .string("")), ("watermark", .number(1))]), false),
        (.object([("watermark", .number(1)), ("gateway", .string("gw"))]), false),
        (.object([("gateway", .string("gw")), ("end", .bool(false))]), false),
        (.object([("gateway", .string("gw")), ("watermark", .number(1)), ("end", .bool(false))]), false),
        (.object([("gateway", .number(7)), ("watermark", .number(1))]), false),
        (.object([("gateway", .string("gw")), ("watermark", .string("soon"))]), false),
        (.object([("gateway", .string("gw"))]), false),
        (.array([.string("gw")]), false),
    ]

    static func outcome(_ read: () throws(RecordError) -> GatewayBatchHeader) -> String {
        do { return "\(try read())" } catch { return "error \(error.field): \(error.reason)" }
    }

    @Test func theReaderInPlaceAgreesWithTheDocument() throws {
        let identifiers = IdentifierCache()
        for (document, common) in Self.documents {
            let frame = MessagePack.encode(document)
            // Taken: read, or refused by the checks (which throw); left: nil.
            let taken: Bool
            do { taken = try GatewayBatchHeader.decodeCommon(frame, identifiers: identifiers) != nil } catch {
                taken = true
            }
            #expect(taken == common, "\(document)")
            if common {
                // Twice: the second time the name comes from the cache.
                for _ in 0..<2 {
                    #expect(
                        Self.outcome { () throws(RecordError) in
                            try GatewayBatchHeader.decode(frame, contentType: .msgpack, identifiers: identifiers)
                        } == Self.outcome { () throws(RecordError) in try GatewayBatchHeader.decode(document) },
                        "\(document)")
                }
            }
            #expect(
                Self.outcome { () throws(RecordError) in try GatewayBatchHeader.decode(frame, contentType: .msgpack) }
                    == Self.outcome { () throws(RecordError) in try GatewayBatchHeader.decode(document) },
                "\(document)")
        }
    }

    @Test func aHeaderCutShortOrWithBytesAfterItIsLeftToTheDocument() throws {
        let frame = MessagePack.encode(
            .object([("gateway", .string("gw-7")), ("watermark", .number(1_772_433_000.25))]))
        for end in 0..<frame.count {
            #expect(try GatewayBatchHeader.decodeCommon(Array(frame[..<end]), identifiers: nil) == nil, "\(end) bytes")
        }
        #expect(try GatewayBatchHeader.decodeCommon(frame + [0xC0], identifiers: nil) == nil)
        #expect(throws: RecordError.self) {
            try GatewayBatchHeader.decode(Array(frame.dropLast()), contentType: .msgpack)
        }
    }
}
