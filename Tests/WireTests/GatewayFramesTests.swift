import Testing

@testable import Wire

/// The frames of a gateway batch, read once for sensor-ingest and the benchmark's bare server.
struct GatewayFramesTests {
    let id: [UInt8] = Array("gw".utf8), batch: [UInt8] = Array("b-1".utf8),
        type: [UInt8] = Array("application/msgpack".utf8)
    let body: [UInt8] = [0x90], header: [UInt8] = [0x80]

    @Test func aDealersBatchWithAndWithoutItsHeader() {
        let plain = GatewayFrames(message: [id, batch, type, body])
        #expect(plain.isWellFormed && plain.replyPrefix == [id] && plain.batchID == batch && plain.body == body)
        #expect(plain.header == nil)
        let headed = GatewayFrames(message: [id, batch, type, body, header])
        #expect(headed.isWellFormed && headed.replyPrefix == [id] && headed.header == header)
    }

    @Test func aReqClientsDelimiterGoesToTheReply() {
        let plain = GatewayFrames(message: [id, [], batch, type, body])
        #expect(plain.isWellFormed && plain.replyPrefix == [id, []] && plain.batchID == batch && plain.header == nil)
        let headed = GatewayFrames(message: [id, [], batch, type, body, header])
        #expect(headed.isWellFormed && headed.replyPrefix == [id, []] && headed.header == header)
    }

    @Test func anEmptyHeaderFrameIsNoHeaderAndOtherCountsAreMalformed() {
        #expect(GatewayFrames(message: [id, batch, type, body, []]).header == nil)
        #expect(!GatewayFrames(message: [id, batch, type]).isWellFormed)
        #expect(!GatewayFrames(message: [id, batch, type, body, header, header]).isWellFormed)
        #expect(GatewayFrames(message: [id]).batchID.isEmpty)
    }
}
