import Foundation
import RoadSaveTestKit
import Testing

/// The public face of RoadSaveClient, from the symbol graph of the built module as `swift symbolgraph-extract` writes
/// it for docc (`scripts/client-docs.sh` makes the API reference from the same graph): every public symbol declared in
/// `Shared/RoadSaveClient` has a doc comment of its own (not one inherited from a protocol), and no public declaration
/// names a type of another of the package's modules but the model's (no ZeroMQ socket, context or timing, no wire
/// type).
@Suite struct DocumentationTests {
    /// The public symbols of the graph.
    static func publicSymbols() async throws -> [[String: Any]] {
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
        var symbols: [[String: Any]] = []
        let files = try FileManager.default.contentsOfDirectory(atPath: output.path).filter {
            $0.hasPrefix("RoadSaveClient") && $0.hasSuffix(".symbols.json")
        }
        for file in files {
            let data = try Data(contentsOf: output.appendingPathComponent(file))
            let graph = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            symbols += graph["symbols"] as? [[String: Any]] ?? []
        }
        return symbols
    }

    static func name(_ symbol: [String: Any]) -> String {
        (symbol["pathComponents"] as? [String] ?? []).joined(separator: ".")
    }

    @Test func everyPublicSymbolHasADocComment() async throws {
        var undocumented: [String] = []
        var documented = 0
        for symbol in try await Self.publicSymbols() {
            // Declared in the library's sources (members the compiler makes, as hashValue, have no place).
            guard let location = symbol["location"] as? [String: Any], let uri = location["uri"] as? String,
                uri.contains("Shared/RoadSaveClient/")
            else { continue }
            let name = Self.name(symbol)
            if symbol["docComment"] == nil {
                undocumented.append("\(name) (\(uri.split(separator: "/").last ?? ""))")
            } else {
                documented += 1
            }
        }
        #expect(undocumented.isEmpty, "public symbols without a doc comment: \(undocumented)")
        #expect(documented > 50, "\(documented) documented symbols found: is the graph the library's?")
    }

    /// The modules whose types a public signature may name: the library's, the model's, the standard library's.
    static let allowedModules: Set<String> = ["RoadSaveClient", "RoadSaveModel", "Swift", "_Concurrency"]

    @Test func noPublicSignatureNamesAnInternalType() async throws {
        var leaks: [String] = []
        for symbol in try await Self.publicSymbols() {
            for fragment in symbol["declarationFragments"] as? [[String: Any]] ?? [] {
                guard fragment["kind"] as? String == "typeIdentifier",
                    let usr = fragment["preciseIdentifier"] as? String, let module = Self.module(ofUSR: usr)
                else { continue }
                if !Self.allowedModules.contains(module) {
                    leaks.append("\(Self.name(symbol)): \(fragment["spelling"] as? String ?? usr) (\(module))")
                }
            }
        }
        #expect(leaks.isEmpty, "public declarations naming other modules' types: \(leaks)")
    }

    /// The module a type's USR names (`s:7ZeroMQ9ZMQSocketC` → ZeroMQ); nil for the standard library's short forms
    /// (`s:Si`, `s:SS`, `s:Sq`).
    static func module(ofUSR usr: String) -> String? {
        guard usr.hasPrefix("s:") else { return nil }
        let rest = usr.dropFirst(2)
        let digits = rest.prefix { $0.isNumber }
        guard let length = Int(digits), length > 0 else { return nil }
        return String(rest.dropFirst(digits.count).prefix(length))
    }
}
