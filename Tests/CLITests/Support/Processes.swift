import Foundation

/// Runs the project's executables (and helper scripts) as separate processes, as users and scripts do.
enum Processes {
    /// The built `roadsave` executable: beside the test bundle in SwiftPM's build folder, or `ROADSAVE_BIN`.
    static var roadsave: URL {
        if let path = ProcessInfo.processInfo.environment["ROADSAVE_BIN"] { return URL(fileURLWithPath: path) }
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        // The test runner may be inside the .xctest bundle.
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("roadsave")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return folder.appendingPathComponent("roadsave")
    }

    static let testsFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    static func fixture(_ name: String) -> URL { testsFolder.appendingPathComponent("Fixtures/\(name)") }
    static func support(_ name: String) -> URL { testsFolder.appendingPathComponent("Support/\(name)") }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        /// The JSON objects on standard output.
        var objects: [[String: Any]] {
            lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

    /// Runs to completion, with optional standard input, and collects both outputs.
    static func run(_ executable: URL, _ arguments: [String], input: Data? = nil) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe(), err = Pipe(), stdin = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            stdin.fileHandleForWriting.write(input)
            try stdin.fileHandleForWriting.close()
        }
        // Read both pipes concurrently so a chatty process can't fill one and block.
        let errorData = LockedData()
        let reader = Thread { errorData.set(err.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        let outputData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !errorData.done { usleep(1000) }
        return Result(status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self),
                      stderr: String(decoding: errorData.value, as: UTF8.self))
    }

    static func roadsave(_ arguments: String..., input: Data? = nil) throws -> Result {
        try run(roadsave, arguments, input: input)
    }

    /// A temporary file with the given content, removed by the caller.
    static func temporaryFile(_ content: String, suffix: String = ".json") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-test-\(UUID().uuidString)\(suffix)")
        try content.write(to: url, atomically: true, encoding: .utf8)
        return url
    }
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private var finished = false
    func set(_ value: Data) { lock.withLock { data = value; finished = true } }
    var done: Bool { lock.withLock { finished } }
    var value: Data { lock.withLock { data } }
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
