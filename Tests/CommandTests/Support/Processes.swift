import Foundation
import Testing

/// The project's executable as a separate process, as users and scripts run it (after Tests/CLITests/Support).
/// Waiting is done with `Task.sleep` polls, so no thread of Swift's cooperative pool blocks on a child.
enum Roadsave {
    /// The built `roadsave` executable: beside the test bundle in SwiftPM's build folder, or `ROADSAVE_BIN`.
    static var executable: URL {
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
        .deletingLastPathComponent()
    /// A fixture of the CLI tests (`Tests/CLITests/Fixtures`).
    static func fixture(_ name: String) -> URL { testsFolder.appendingPathComponent("CLITests/Fixtures/\(name)") }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var lines: [String] { stdout.split(separator: "\n").map(String.init) }
        var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
        /// The JSON objects on standard output.
        var objects: [[String: Any]] {
            lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

    /// Runs `roadsave ARGUMENTS` to completion (killed after `limit` seconds) and collects both outputs.
    static func run(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
                    limit: Double = 60) async throws -> Result {
        let process = try RunningProcess(arguments, input: input, environment: environment)
        defer { process.kill() }
        guard let status = await process.waitForExit(timeout: limit) else {
            throw TestFailure("roadsave \(arguments.joined(separator: " ")) still running after \(limit) s\nstderr: \(process.stderr)")
        }
        return Result(status: status, stdout: process.stdout, stderr: process.stderr)
    }

    /// A temporary file with the given content, removed by the caller.
    static func temporaryFile(_ content: String, suffix: String = ".ndjson") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("roadsave-commandtest-\(UUID().uuidString)\(suffix)")
        try content.write(to: url, atomically: true, encoding: .utf8)
        return url
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A `roadsave` process running in the background; its outputs are read as they come by two threads.
/// Unless the environment names one, it gets a fresh data directory (`ROADSAVE_DATA_DIR`, removed by `kill()`): a
/// service locks its data directory, and tests running at once must not share (or wait for) one.
final class RunningProcess: @unchecked Sendable {  // Sendable: outputs are guarded by `lock`; `process` is thread-safe
    let process = Process()
    let arguments: [String]
    /// The data directory made for this process, if the environment gave none.
    let ownDataDirectory: URL?
    private let lock = NSLock()
    private var output = Data()
    private var errors = Data()
    private var openPipes = 2

    /// `executable` is `roadsave` unless given (a shell standing in for a supervisor, say).
    init(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
         executable: URL = Roadsave.executable) throws {
        self.arguments = arguments
        process.executableURL = executable
        process.arguments = arguments
        var variables = environment ?? ProcessInfo.processInfo.environment
        if variables["ROADSAVE_DATA_DIR"] == nil {
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("roadsave-commandtest-data-\(UUID().uuidString)")
            variables["ROADSAVE_DATA_DIR"] = directory.path
            ownDataDirectory = directory
        } else {
            ownDataDirectory = nil
        }
        process.environment = variables
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            let writer = stdin.fileHandleForWriting
            Thread {
                writer.write(input)
                try? writer.close()
            }.start()
        }
        for (handle, isError) in [(out.fileHandleForReading, false), (err.fileHandleForReading, true)] {
            Thread { [self] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    lock.withLock {
                        if isError { errors.append(chunk) } else { output.append(chunk) }
                    }
                }
                lock.withLock { openPipes -= 1 }
            }.start()
        }
    }

    var pid: Int32 { process.processIdentifier }
    var stdout: String { lock.withLock { String(decoding: output, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: errors, as: UTF8.self) } }
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    /// Waits until standard output has a line for which `match` holds; returns it (nil after `timeout` or the process's
    /// end).
    func waitForLine(timeout: Double, _ match: (String) -> Bool) async -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = lines.first(where: match) { return line }
            if !process.isRunning {
                try? await Task.sleep(nanoseconds: 50_000_000)
                return lines.first(where: match)
            }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
        return nil
    }

    /// The exit status once the process ended and its outputs are read; nil if it still runs after `timeout`.
    func waitForExit(timeout: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() >= deadline { return nil }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        let drained = Date().addingTimeInterval(5)
        while lock.withLock({ openPipes > 0 }) && Date() < drained {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return process.terminationStatus
    }

    /// Whether it exited with a signal (rather than a status).
    var wasSignalled: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    func signal(_ number: Int32) {
        if process.isRunning { Foundation.kill(process.processIdentifier, number) }
    }

    /// SIGKILL if it still runs, and its own data directory removed (cleanup).
    func kill() {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if let ownDataDirectory { try? FileManager.default.removeItem(at: ownDataDirectory) }
    }
}

/// Loopback ports for one test: a random block of `count` consecutive ports in 20000–32000 (below the kernel's ephemeral range) that are free now.
enum Ports {
    static func block(_ count: Int) -> Int {
        for _ in 0..<200 {
            let base = Int.random(in: 20_000...(32_000 - count))
            if (base..<(base + count)).allSatisfy(isFree) { return base }
        }
        return Int.random(in: 20_000...(32_000 - count))
    }

    static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }

    static func tcp(_ port: Int) -> String { "tcp://127.0.0.1:\(port)" }
}

/// Whether a process id is alive (and not a zombie of ours).
func isAlive(_ pid: Int32) -> Bool {
    guard Foundation.kill(pid, 0) == 0 else { return false }
    // A zombie still answers kill(0): look at its state.
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return true }
    let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).prefix(1)
    return state != "Z"
}

/// Stops a service process the graceful way and checks it exits 0 within `timeout`; SIGKILL otherwise.
func stopGracefully(_ process: RunningProcess, timeout: Double = 15, sourceLocation: SourceLocation = #_sourceLocation) async {
    process.signal(SIGTERM)
    let status = await process.waitForExit(timeout: timeout)
    #expect(status == 0, "roadsave \(process.arguments.first ?? "") after SIGTERM: \(status.map(String.init) ?? "still running")\nstderr: \(process.stderr.suffix(2000))",
            sourceLocation: sourceLocation)
    #expect(!process.wasSignalled, "roadsave \(process.arguments.first ?? "") died of its signal", sourceLocation: sourceLocation)
    process.kill()
}
