// JSONParser on arbitrary bytes.
// Properties: a parsed value written as JSON text parses back equal, and so does its MessagePack form.
import RecordCodecs
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let value = try? JSONParser.parse(input) else { return 0 }
    let text = JSONText.encode(value)
    let again = try? JSONParser.parse(text)
    require(again == value, "JSON text round trip changed \(value) (written \(text))")
    let packed = try? MessagePack.decode(MessagePack.encode(value))
    require(packed == value, "MessagePack round trip of a JSON value changed \(value)")
    return 0
}
