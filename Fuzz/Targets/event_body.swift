// EventBody.decode (detection's outbox items as the notifier reads them) on arbitrary bytes.
// Property: an event read is encoded and read again to an equal event.
import RoadSaveModel
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let event = try? EventBody.decode(input) else { return 0 }
    require(!event.device.app.isEmpty && !event.device.user.isEmpty, "an event without a device was accepted")
    let again = try? EventBody.decode(EventBody.encode(event))
    require(again == event, "event body round trip changed \(event) into \(String(describing: again))")
    return 0
}
