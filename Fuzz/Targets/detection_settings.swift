// DetectionSettings as the platform's settings document (JSONDecoder, as PlatformHTTP reads it) on arbitrary bytes.
// Properties: settings read are valid (validate() passes) and survive being written and read again.
import Foundation
import RoadSaveModel

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Data(bytes(data, size))
    guard let settings = try? JSONDecoder().decode(DetectionSettings.self, from: input) else { return 0 }
    do {
        try settings.validate()
    } catch {
        require(false, "settings that fail validation were accepted: \(error)")
    }
    do {
        let again = try JSONDecoder().decode(DetectionSettings.self, from: try JSONEncoder().encode(settings))
        require(again == settings, "settings round trip changed them")
    } catch {
        require(false, "settings written by JSONEncoder do not read back: \(error)")
    }
    return 0
}
