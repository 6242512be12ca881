import Foundation
import RoadSaveTestKit
import Testing

/// Every public symbol of RoadSaveClient declared in `Shared/RoadSaveClient` has a doc comment of its own (not one
/// inherited from a protocol): the symbol graph of the built module, as `swift symbolgraph-extract` writes it for
/// docc (`scripts/client-docs.sh` makes the API reference from the same graph).
@Suite struct DocumentationTests {
    @Test func everyPublicSymbolHasADocComment() async throws {
        let repository = TestPaths.repository
        let modules = repository.appendingPathComponent(".build/debug/Modules")
        try #require(
            FileManager.default.fileExists(atPath: modules.appendingPathComponent("RoadSaveClient.swiftmodule").path),
            "no built RoadSaveClient in \(modules.path) (swift build --build-tests)")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-symbols-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: output) }
        var machine = utsname()
        uname(&machine)
        let architecture = withUnsafeBytes(of: machine.machine) {
            String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
        }
        let extract = try ChildProcess(
            name: "symbolgraph-extract", executable: Executables.env,
            arguments: [
                "swift", "symbolgraph-extract", "-module-name", "RoadSaveClient", "-I", modules.path,
                "-target", "\(architecture)-unknown-linux-gnu", "-output-dir", output.path,
                "-minimum-access-level", "public", "-skip-inherited-docs",
                "-Xcc", "-fmodule-map-file=\(repository.path)/Shared/CZeroMQ/module.modulemap",
                "-Xcc", "-fmodule-map-file=\(repository.path)/Shared/CMessagePack/module.modulemap",
            ])
        defer { extract.kill() }
        try #require(await extract.waitForExit(timeout: 120) == 0, "\(extract.tail())")
        var undocumented: [String] = []
        var documented = 0
        let files = try FileManager.default.contentsOfDirectory(atPath: output.path).filter {
            $0.hasPrefix("RoadSaveClient") && $0.hasSuffix(".symbols.json")
        }
        for file in files {
            let data = try Data(contentsOf: output.appendingPathComponent(file))
            let graph = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            for symbol in graph["symbols"] as? [[String: Any]] ?? [] {
                // Declared in the library's sources (members the compiler makes, as hashValue, have no place).
                guard let location = symbol["location"] as? [String: Any], let uri = location["uri"] as? String,
                    uri.contains("Shared/RoadSaveClient/")
                else { continue }
                let name = (symbol["pathComponents"] as? [String] ?? []).joined(separator: ".")
                if symbol["docComment"] == nil {
                    undocumented.append("\(name) (\(uri.split(separator: "/").last ?? ""))")
                } else {
                    documented += 1
                }
            }
        }
        #expect(undocumented.isEmpty, "public symbols without a doc comment: \(undocumented)")
        #expect(documented > 50, "\(documented) documented symbols found: is the graph the library's?")
    }
}
