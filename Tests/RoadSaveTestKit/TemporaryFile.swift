import Foundation

/// A temporary file with `content`, removed by the caller (or left in the temporary folder).
public func temporaryFile(_ content: String, suffix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "roadsave-test-\(UUID().uuidString)\(suffix)")
    try content.write(to: url, atomically: true, encoding: .utf8)
    return url
}
