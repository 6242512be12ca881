// Acknowledgement.decode, both content types (the first byte chooses: even JSON, odd MessagePack).
// Property: an acknowledgement read is encoded and read again to an equal one, in either content type.
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let first = input.first else { return 0 }
    let contentType: ContentType = first & 1 == 0 ? .json : .msgpack
    guard let ack = try? Acknowledgement.decode(input.dropFirst(), contentType: contentType) else { return 0 }
    for type in ContentType.allCases {
        let again = try? Acknowledgement.decode(ack.encode(as: type), contentType: type)
        require(again == ack, "acknowledgement round trip (\(type)) changed \(ack) into \(String(describing: again))")
    }
    return 0
}
