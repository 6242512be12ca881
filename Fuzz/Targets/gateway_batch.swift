// Ingest's GatewayBatch (a whole ROUTER message from a gateway) on arbitrary frames: the input is split into frames,
// each a 2-byte little-endian length and its bytes (see FuzzSupport). GatewayBatch.swift is compiled into this target.
// Properties: only records of known applications are kept; the acknowledgement counts every element or says why the
// batch is unreadable; the reply goes back to the sender's routing frames and its acknowledgement reads back equal
// in the batch's content type. The record count the rate limit is charged (`recordCount`, read without decoding)
// is that of the records read, whenever the batch could be read. A header (the optional fourth frame) kept is one that
// reads back equal. Rejections come in the batch's order, and the bytes kept for the journal read back as the records.
import RoadSaveModel
import Wire

let applications: Set<String> = ["app-1", "a"]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let message = frames(bytes(data, size)[...])
    var charged: Int?
    let batch = GatewayBatch(
        message: message, applications: applications, maximumBatch: 1000,
        rateLimit: { count in
            charged = count
            return nil
        })
    require(
        batch.records.allSatisfy { applications.contains($0.device.app) }, "a record of an unknown application was kept"
    )
    require(batch.acknowledgement.accepted == batch.records.count, "accepted is not the number of records kept")
    require(batch.records.count <= 1000, "more than maximumBatch records kept")
    if batch.unreadable != nil {
        require(
            batch.records.isEmpty && batch.acknowledgement.rejected.count == 1
                && batch.acknowledgement.rejected[0].index == -1, "an unreadable batch is not answered as one")
    }
    if let header = batch.header {
        require(batch.unreadable == nil, "an unreadable batch kept its header")
        let again = try? GatewayBatchHeader.decode(header.encode(as: batch.contentType), contentType: batch.contentType)
        require(again == header, "the header does not read back: \(header)")
    }
    if batch.unreadable == nil {
        let elements = batch.records.count + batch.acknowledgement.rejected.count
        require(
            charged == elements, "the rate limit was charged \(String(describing: charged)) for \(elements) records")
    }
    let indexes = batch.acknowledgement.rejected.map(\.index)
    require(indexes == indexes.sorted(), "the rejections are not in the batch's order: \(indexes)")
    if let encoded = batch.encoded {
        // The bytes the journal would store are exactly the records kept, in order.
        require(
            encoded.ranges.count == batch.records.count,
            "\(encoded.ranges.count) ranges kept for \(batch.records.count) records")
        let stored =
            (try? MessagePack.decodeRecords(MessagePackFraming.array(of: encoded.ranges, in: encoded.body))) ?? []
        require(
            stored.count == batch.records.count && zip(stored, batch.records).allSatisfy { (try? $0.0.get()) == $0.1 },
            "the bytes kept do not read back as the records kept")
    }
    let reply = batch.reply
    if message.isEmpty {
        require(reply.isEmpty, "a reply to nobody")
        return 0
    }
    require(reply.count >= 3 && reply[0] == message[0], "the reply is not addressed to the sender")
    let ack = try? Acknowledgement.decode(reply[reply.count - 1], contentType: batch.contentType)
    require(ack == batch.acknowledgement, "the reply's acknowledgement does not read back")
    return 0
}
