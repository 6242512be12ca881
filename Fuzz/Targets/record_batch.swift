// RecordBatch.decodeBatch, both content types (the first byte chooses: even JSON, odd MessagePack).
// Properties: the acknowledgement counts every element; each accepted record, written again in the same content type,
// reads back equal (MessagePack carries doubles exactly) or, for JSON (which rounds to PROTOCOL §2's precision),
// reads back to a record that then stays the same.
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let first = input.first else { return 0 }
    let contentType: ContentType = first & 1 == 0 ? .json : .msgpack
    guard let batch = try? RecordBatch.decodeBatch(Array(input.dropFirst()), contentType: contentType) else { return 0 }

    let ack = batch.acknowledgement
    require(
        ack.accepted + ack.rejected.count == batch.records.count, "the acknowledgement does not count every element")
    require(batch.records.map(\.index) == Array(0..<batch.records.count), "slots are not numbered in order")
    let accepted = batch.accepted
    guard !accepted.isEmpty else { return 0 }

    let body = RecordBatch.encodeBatch(accepted, as: contentType)
    guard let again = try? RecordBatch.decodeBatch(body, contentType: contentType) else {
        require(false, "a batch of accepted records could not be read again (\(contentType))")
        return 0
    }
    if contentType == .msgpack {
        require(again.accepted == accepted, "MessagePack batch round trip changed the records")
    } else {
        require(again.records.count == accepted.count, "JSON batch round trip lost records")
        let rounded = again.accepted
        let third = try? RecordBatch.decodeBatch(RecordBatch.encodeBatch(rounded, as: .json), contentType: .json)
        require(third?.accepted == rounded, "JSON batch round trip is not stable after one rounding")
    }
    return 0
}
