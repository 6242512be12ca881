import Foundation

#if canImport(Glibc)
    import Glibc
    import SystemKit
#endif

/// A process of its own (a service, `roadsave`, a Python client), with its standard output and error read by two
/// threads as they come, line by line, each line stamped with the monotonic time it was read. Stopped with SIGKILL by
/// `kill()` (tests call it in a `defer`), or with any signal by `signal(_:)`. Waiting is done with `Task.sleep` polls
/// with a bound, so no thread of Swift's cooperative pool blocks on a child and a hung child cannot hang the run.
public final class ChildProcess: @unchecked Sendable { // Sendable: outputs are behind `Locked`; Process is thread-safe
    public struct Line: Sendable {
        public let time: Double
        public let text: String
    }

    /// What was read so far: the lines, and the bytes as written (for tests that compare output byte for byte).
    private struct Output {
        var stdout: [Line] = []
        var stderr: [Line] = []
        var stdoutBytes = Data()
        var stderrBytes = Data()
        var openStreams = 2
    }

    public let name: String
    public let arguments: [String]
    public let process = Process()
    private let output = Locked(Output())
    private let exit = Locked<Double?>(nil)

    /// `environment` is added to this process's environment less every `ROADSAVE_*` variable of the caller's (so a
    /// developer's settings cannot leak into a test). `input`, when given, is written to its standard input, which is
    /// then closed.
    public convenience init(
        name: String, executable: URL, arguments: [String], environment: [String: String] = [:],
        input: Data? = nil
    ) throws {
        try self.init(
            name: name, executable: executable, arguments: arguments,
            exactEnvironment: Self.environment(adding: environment), input: input)
    }

    /// Started with exactly `exactEnvironment`.
    public init(
        name: String, executable: URL, arguments: [String], exactEnvironment: [String: String],
        input: Data? = nil
    ) throws {
        self.name = name
        self.arguments = arguments
        process.executableURL = executable
        process.arguments = arguments
        process.environment = exactEnvironment
        let out = Pipe()
        let err = Pipe()
        let stdin = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        let exit = self.exit
        process.terminationHandler = { _ in exit.withLock { $0 = now() } }
        try process.run()
        if let input { writeInBackground(input, to: stdin.fileHandleForWriting) }
        read(out.fileHandleForReading, toStandardOutput: true)
        read(err.fileHandleForReading, toStandardOutput: false)
    }

    /// This process's environment without its `ROADSAVE_*` variables, with `variables` added.
    public static func environment(adding variables: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ROADSAVE_") }
        environment.merge(variables) { $1 }
        return environment
    }

    /// A Python script, run by the `python3` on the PATH.
    public static func python(_ script: URL, _ arguments: [String], name: String? = nil) throws -> ChildProcess {
        try ChildProcess(
            name: name ?? script.lastPathComponent, executable: Executables.env,
            arguments: ["python3", script.path] + arguments)
    }

    private func read(_ handle: FileHandle, toStandardOutput: Bool) {
        let output = self.output
        let thread = Thread {
            var partial = Data()
            func append(_ data: Data) {
                let line = Line(time: now(), text: String(decoding: data, as: UTF8.self))
                output.withLock { if toStandardOutput { $0.stdout.append(line) } else { $0.stderr.append(line) } }
            }
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                output.withLock {
                    if toStandardOutput { $0.stdoutBytes.append(chunk) } else { $0.stderrBytes.append(chunk) }
                }
                partial.append(chunk)
                while let newline = partial.firstIndex(of: 0x0A) {
                    append(partial[partial.startIndex..<newline])
                    partial.removeSubrange(partial.startIndex...newline)
                }
            }
            if !partial.isEmpty { append(partial) }
            output.withLock { $0.openStreams -= 1 }
        }
        thread.name = "\(name) output"
        thread.start()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var stdout: [Line] { output.current.stdout }
    public var stderr: [Line] { output.current.stderr }
    /// Standard output's lines, as text.
    public var lines: [String] { stdout.map(\.text) }
    /// Standard output as it was written.
    public var stdoutText: String { String(decoding: output.current.stdoutBytes, as: UTF8.self) }
    /// Standard error as it was written.
    public var stderrText: String { String(decoding: output.current.stderrBytes, as: UTF8.self) }

    /// The JSON values printed on standard output, one a line, with the time each was read.
    public var jsonLines: [(time: Double, value: Any)] {
        stdout.compactMap { line in
            guard
                let value = try? JSONSerialization.jsonObject(with: Data(line.text.utf8), options: [.fragmentsAllowed])
            else { return nil }
            return (line.time, value)
        }
    }

    public func signal(_ number: Int32) {
        if process.isRunning { Glibc.kill(process.processIdentifier, number) }
    }

    /// Waits until standard output has a line for which `match` holds; returns it (nil after `timeout` seconds or
    /// once the process ended without one).
    public func waitForLine(timeout: Double, _ match: (String) -> Bool) async -> String? {
        _ = await eventually(timeout: timeout) { lines.contains(where: match) || !process.isRunning }
        if !process.isRunning {
            // Let the readers take what was written last.
            _ = await eventually(timeout: 2, interval: 0.01) { output.current.openStreams == 0 }
        }
        return lines.first(where: match)
    }

    /// Waits for the process to end; its exit status (or `128 + signal` when a signal ended it), nil on a timeout.
    public func waitForExit(timeout: Double) async -> Int32? {
        guard await eventually(timeout: timeout, interval: 0.02, { !process.isRunning }) else { return nil }
        // Let the readers take what was written last.
        _ = await eventually(timeout: 2, interval: 0.01) { output.current.openStreams == 0 }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    /// When the process ended (monotonic seconds, noted by Foundation's termination handler, not by a test that
    /// may be waiting for a thread), nil while it runs.
    public var exitedAt: Double? { exit.current }

    /// Whether it ended by a signal rather than an exit.
    public var endedBySignal: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    /// SIGKILL (when still running) and reap. Safe to call more than once.
    public func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The last lines of both outputs, for failure messages.
    public func tail(_ count: Int = 25) -> String {
        let lines = output.current
        let text =
            (lines.stdout.suffix(count).map { "  out: " + $0.text }
                + lines.stderr.suffix(count).map { "  err: " + $0.text })
        let state = process.isRunning ? "running" : "ended (\(process.terminationStatus))"
        return "--- \(name) [\(state)]\n" + text.map { String($0.prefix(400)) }.joined(separator: "\n")
    }
}
