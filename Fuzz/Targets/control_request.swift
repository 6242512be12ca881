// ControlRequest(json:) (detection's control socket) on arbitrary bytes.
// Properties: a request read has a non-empty app, the arguments its command needs, and survives the Codable round
// trip through which the detection store keeps it in its input log.
import DetectionEngine
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let request = try? ControlRequest(json: input) else { return 0 }
    require(!request.app.isEmpty, "a request without an app was accepted")
    require(request.user.map { !$0.isEmpty } ?? true, "an empty user was accepted")
    if request.command == .setDetectionMode { require(request.detectionMode != nil, "setDetectionMode without a mode") }
    if request.command == .setAutoTripDetection {
        require(request.enabled != nil, "setAutoTripDetection without enabled")
    }
    do {
        let stored = try JSONEncoder().encode(request)
        let again = try JSONDecoder().decode(ControlRequest.self, from: stored)
        require(again == request, "Codable round trip changed \(request) into \(again)")
    } catch {
        require(false, "Codable round trip failed: \(error)")
    }
    return 0
}
