// A journal feed item (JournalChunk(item:)): a records array as it is, or the header map ending with the records
// that ingest writes for a batch that had a gateway header. Property: what was read is written and read again to an
// equal chunk, and its records are the bytes they were; detection's reading in place (JournalChunk.parts, then the
// records by MessagePack.forEachStoredRecord) reads the same header, shard and records wherever the document
// reading (then MessagePack.decodeRecords) reads the item, and a header it refuses with the same error. The records
// member is not measured in place (it is the rest of the item): where they do not end with it, or cannot be read,
// the records' reader refuses them, and only not crashing is asked.
import RecordCodecs
import RoadSaveModel
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let item = bytes(data, size)
    var inPlace: (chunk: JournalChunk?, error: String?) = (nil, nil)
    var inPlaceRecords: [Result<SensorRecord, RecordError>]?
    do {
        let identifiers = IdentifierCache()
        let parts = try item.withUnsafeBytes { try JournalChunk.parts(of: $0, identifiers: identifiers) }
        inPlace.chunk = JournalChunk(records: Array(item[parts.records]), header: parts.header, shard: parts.shard)
        var records: [Result<SensorRecord, RecordError>] = []
        let read: Void? = try? item.withUnsafeBytes {
            try MessagePack.forEachStoredRecord(
                UnsafeRawBufferPointer(rebasing: $0[parts.records]), identifiers: identifiers
            ) { _, result in records.append(result) }
        }
        if read != nil { inPlaceRecords = records }
    } catch {
        inPlace.error = "\(error)"
    }
    var document: (chunk: JournalChunk?, error: String?) = (nil, nil)
    do {
        document.chunk = try JournalChunk(item: item)
    } catch {
        document.error = "\(error)"
    }
    if inPlace.error != nil {
        require(inPlace.error == document.error, "in place \(inPlace), as a document \(document)")
    }
    if let chunk = document.chunk, let records = try? MessagePack.decodeRecords(chunk.records) {
        require(inPlace.chunk == chunk, "in place \(inPlace), as a document \(document)")
        require(
            inPlaceRecords == records,
            "records in place \(String(describing: inPlaceRecords)), as a document \(records)")
    }
    guard let chunk = try? JournalChunk(item: item) else { return 0 }
    if chunk.header == nil { require(chunk.records == item, "an item without a header is not the records as they are") }
    let again = try? JournalChunk(item: chunk.item)
    require(again == chunk, "journal chunk round trip changed \(chunk) into \(String(describing: again))")
    // The records may still be anything: their decoder must answer, not crash.
    _ = try? RecordBatch.decodeBatch(chunk.records, contentType: .msgpack)
    return 0
}
