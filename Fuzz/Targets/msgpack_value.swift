// MessagePack.decode and decodeRecords on arbitrary bytes.
// Properties: a decoded value encodes and decodes to an equal value, and its JSON text parses back to it; when the
// document is an array, decodeRecords reads the same elements, each to the record RecordDecoding makes of it.
import RecordCodecs
import RoadSaveModel
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    let records = try? MessagePack.decodeRecords(input)
    guard let value = try? MessagePack.decode(input) else { return 0 }

    let again = try? MessagePack.decode(MessagePack.encode(value))
    require(again == value, "MessagePack round trip changed \(value) into \(String(describing: again))")
    let text = JSONText.encode(value)
    let parsed = try? JSONText.decode(Array(text.utf8))
    require(parsed == value, "JSON text \(text) of a MessagePack value does not parse back to it")

    if case .array(let elements) = value {
        guard let records else {
            require(false, "decode read an array of \(elements.count) that decodeRecords refused")
            return 0
        }
        require(records.count == elements.count, "decodeRecords read \(records.count) of \(elements.count) elements")
        for (element, result) in zip(elements, records) {
            let direct = Result { () throws(RecordError) -> SensorRecord in try RecordDecoding.record(from: element) }
            switch (direct, result) {
            case (.success(let a), .success(let b)): require(a == b, "decodeRecords made \(b), RecordDecoding \(a)")
            case (.failure, .failure): break
            default: require(false, "decodeRecords and RecordDecoding disagree on \(element): \(result) vs \(direct)")
            }
        }
    }
    return 0
}
