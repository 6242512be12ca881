// CatchUpRequest(json:) (the notifier's catch-up endpoint, read in Wire) on arbitrary bytes.
// Properties: max stays within 1…maximumMax, waitMs within 0…maximumWait, and a request read is written and read
// again to an equal one.
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let request = try? CatchUpRequest(json: input) else { return 0 }
    require((1...CatchUpRequest.maximumMax).contains(request.max), "max \(request.max) accepted")
    if let wait = request.waitMilliseconds {
        require((0...CatchUpRequest.maximumWait).contains(wait), "waitMs \(wait) accepted")
    }
    let again = try? CatchUpRequest(json: request.json())
    require(again == request, "catch-up request round trip changed \(request) into \(String(describing: again))")
    return 0
}
