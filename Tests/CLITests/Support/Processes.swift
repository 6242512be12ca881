import Foundation
import RoadSaveTestKit

/// `roadsave` run as users and scripts run it (a process of the kit's), and the CLI tests' fixtures and helpers.
enum Processes {
    static let testsFolder = TestPaths.target("CLITests")
    static func fixture(_ name: String) -> URL { testsFolder.appendingPathComponent("Fixtures/\(name)") }
    static func support(_ name: String) -> URL { testsFolder.appendingPathComponent("Support/\(name)") }

    /// `roadsave ARGUMENTS` to its end, with optional standard input; killed after 300 s, a bound on a hang.
    static func roadsave(_ arguments: String..., input: Data? = nil) async throws -> ProcessResult {
        try await ChildProcess.run(Executables.roadsave, arguments, input: input, limit: 300)
    }
}

/// The stub platform (Support/stub_platform.py) running on a free loopback port.
final class StubPlatform {
    let process = Process()
    let port: Int
    private let output = Pipe()

    init(_ arguments: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Processes.support("stub_platform.py").path] + arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Stops the stub and returns the requests it logged.
    func stop() -> [[String: Any]] {
        // SIGKILL: the stub unblocks SIGTERM itself, but a kill cannot be blocked by anything it inherited.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}
