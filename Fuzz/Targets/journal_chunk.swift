// A journal feed item (JournalChunk(item:)): a records array as it is, or the header map ending with the records
// that ingest writes for a batch that had a gateway header. Property: what was read is written and read again to an
// equal chunk, and its records are the bytes they were; detection's reading in place (JournalChunk.parts) reads
// the same chunk, or fails with the same error.
import RecordCodecs
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let item = bytes(data, size)
    var inPlace: (chunk: JournalChunk?, error: String?) = (nil, nil)
    do {
        let parts = try item.withUnsafeBytes { try JournalChunk.parts(of: $0, identifiers: IdentifierCache()) }
        inPlace.chunk = JournalChunk(records: Array(item[parts.records]), header: parts.header, shard: parts.shard)
    } catch {
        inPlace.error = "\(error)"
    }
    var document: (chunk: JournalChunk?, error: String?) = (nil, nil)
    do {
        document.chunk = try JournalChunk(item: item)
    } catch {
        document.error = "\(error)"
    }
    require(
        inPlace.chunk == document.chunk && inPlace.error == document.error,
        "in place \(inPlace), as a document \(document)")
    guard let chunk = try? JournalChunk(item: item) else { return 0 }
    if chunk.header == nil { require(chunk.records == item, "an item without a header is not the records as they are") }
    let again = try? JournalChunk(item: chunk.item)
    require(again == chunk, "journal chunk round trip changed \(chunk) into \(String(describing: again))")
    // The records may still be anything: their decoder must answer, not crash.
    _ = try? RecordBatch.decodeBatch(chunk.records, contentType: .msgpack)
    return 0
}
