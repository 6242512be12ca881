import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The integration tests' machinery: the built executables, child processes whose output is read line by line as it
// comes, free loopback ports, and polling with deadlines (never fixed sleeps where a condition can be waited for).
// Everything waits with `Task.sleep`, so a test never holds a thread of Swift's cooperative pool while it polls.

/// Where things are: the repository, the Python clients in `Support/`, the built executables.
enum Build {
    /// The repository root (this file is `Tests/IntegrationTests/Harness.swift`).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let support = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support")

    /// The folder of the built executables: beside the test bundle in SwiftPM's build folder, or `ROADSAVE_BIN_DIR`.
    static let binaries: URL = {
        if let path = ProcessInfo.processInfo.environment["ROADSAVE_BIN_DIR"] { return URL(fileURLWithPath: path) }
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        // The test runner may be inside the .xctest bundle.
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("roadsave-ingest").path) {
                return folder
            }
            folder = folder.deletingLastPathComponent()
        }
        return repository.appendingPathComponent(".build/debug")
    }()

    static func executable(_ name: String) -> URL { binaries.appendingPathComponent(name) }

    /// `python3` from the PATH, through env (as a user would run the scripts).
    static let env = URL(fileURLWithPath: "/usr/bin/env")
}

/// Seconds on a monotonic clock.
func now() -> Double { ProcessInfo.processInfo.systemUptime }

/// Waits until `condition` holds or `timeout` seconds have passed, checking every `interval`; true when it held.
func eventually(timeout: Double, interval: Double = 0.05, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = now() + timeout
    while true {
        if try condition() { return true }
        if now() >= deadline { return false }
        try? await Task.sleep(nanoseconds: UInt64(interval * 1e9))
    }
}

/// Lets at most `slots` holders run at once: the tests each start several processes, and this machine has 2 cores.
actor Gate {
    static let pipelines = Gate(slots: 3)

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(slots: Int) {
        free = slots
    }

    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Runs `body` holding one of the pipeline slots.
func withPipelineSlot<T>(_ body: () async throws -> T) async throws -> T {
    await Gate.pipelines.acquire()
    do {
        let result = try await body()
        await Gate.pipelines.release()
        return result
    } catch {
        await Gate.pipelines.release()
        throw error
    }
}

final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}

/// Free TCP ports on loopback, random in 20000…32000, below the kernel's ephemeral range (32768 and up) where
/// outgoing connections take their ports; never handed out twice in one test run (each test has its own services).
enum Ports {
    private static let handedOut = Locked(Set<Int>())

    static func reserve(_ count: Int) -> [Int] {
        var ports: [Int] = []
        while ports.count < count {
            let port = Int.random(in: 20000...32000)
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh, isFree(port) { ports.append(port) }
        }
        return ports
    }

    /// `count` consecutive free ports (for `roadsave up --base-port P`, which takes P…P+count-1); the first returned.
    static func reserveRange(_ count: Int) -> Int {
        while true {
            let first = Int.random(in: 20000...(32000 - count))
            let range = first..<(first + count)
            let fresh = handedOut.withLock { used in
                guard range.allSatisfy({ !used.contains($0) }) else { return false }
                used.formUnion(range)
                return true
            }
            if fresh, range.allSatisfy(isFree) { return first }
        }
    }

    /// Whether a listening socket could be bound to 127.0.0.1:port now.
    static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return bound == 0
    }

    /// Whether something accepts TCP connections on 127.0.0.1:port.
    static func isListening(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return connected == 0
    }
}

/// A process of its own (a service, a Python client), with its standard output and error collected line by line,
/// each line stamped with the monotonic time it was read. Stopped with SIGKILL by `kill()` (tests call it in a
/// `defer`), or with any signal by `signal(_:)`.
final class Child: @unchecked Sendable {
    struct Line: Sendable {
        let time: Double
        let text: String
    }

    let name: String
    let process = Process()
    private let output = Locked((stdout: [Line](), stderr: [Line](), openStreams: 2))
    private let exit = Locked<Double?>(nil)

    /// `environment` is added to this process's environment, without any `ROADSAVE_*` variable of the caller's
    /// (so a developer's settings cannot leak into a test).
    init(name: String, executable: URL, arguments: [String], environment: [String: String] = [:]) throws {
        self.name = name
        process.executableURL = executable
        process.arguments = arguments
        var variables = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ROADSAVE_") }
        variables.merge(environment) { $1 }
        process.environment = variables
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let exit = self.exit
        process.terminationHandler = { _ in exit.withLock { $0 = now() } }
        try process.run()
        read(out.fileHandleForReading, toStandardOutput: true)
        read(err.fileHandleForReading, toStandardOutput: false)
    }

    /// A Python script of `Support/`.
    static func python(_ script: String, _ arguments: [String], name: String? = nil) throws -> Child {
        try Child(name: name ?? script, executable: Build.env,
                  arguments: ["python3", Build.support.appendingPathComponent(script).path] + arguments)
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

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    var stdout: [Line] { output.current.stdout }
    var stderr: [Line] { output.current.stderr }

    /// The JSON values printed on standard output, one a line, with the time each was read.
    var jsonLines: [(time: Double, value: Any)] {
        stdout.compactMap { line in
            guard let value = try? JSONSerialization.jsonObject(with: Data(line.text.utf8), options: [.fragmentsAllowed])
            else { return nil }
            return (line.time, value)
        }
    }

    func signal(_ number: Int32) {
        if process.isRunning { Glibc.kill(process.processIdentifier, number) }
    }

    /// Waits for the process to end; its exit status (or `128 + signal` when a signal ended it), nil on a timeout.
    func waitForExit(timeout: Double) async -> Int32? {
        guard await eventually(timeout: timeout, interval: 0.02, { !process.isRunning }) else { return nil }
        // Let the readers take what was written last.
        _ = await eventually(timeout: 2, interval: 0.01) { output.current.openStreams == 0 }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    /// When the process ended (monotonic seconds, noted by Foundation's termination handler, not by a test that
    /// may be waiting for a thread), nil while it runs.
    var exitedAt: Double? { exit.current }

    /// Whether it ended by a signal rather than an exit.
    var endedBySignal: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    /// SIGKILL (when still running) and reap. Safe to call more than once.
    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The last lines of both outputs, for failure messages.
    func tail(_ count: Int = 25) -> String {
        let lines = output.current
        let text = (lines.stdout.suffix(count).map { "  out: " + $0.text } + lines.stderr.suffix(count).map { "  err: " + $0.text })
        let state = process.isRunning ? "running" : "ended (\(process.terminationStatus))"
        return "--- \(name) [\(state)]\n" + text.map { String($0.prefix(400)) }.joined(separator: "\n")
    }
}

/// A temporary file, removed by the caller (or left in the temporary folder).
func temporaryFile(_ content: String, suffix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-it-\(UUID().uuidString)\(suffix)")
    try content.write(to: url, atomically: true, encoding: .utf8)
    return url
}

/// A JSON object's member, for the tests' dictionary-shaped JSON.
extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func number(_ key: String) -> Double? { (self[key] as? NSNumber)?.doubleValue }
    func bool(_ key: String) -> Bool? {
        guard let number = self[key] as? NSNumber else { return self[key] as? Bool }
        // JSONSerialization gives booleans as NSNumber; only true/false come from a JSON boolean here.
        return number.boolValue
    }
}

/// Serialises a JSON object with sorted keys (one line).
func jsonLine(_ object: Any) -> String {
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    return String(decoding: data, as: UTF8.self)
}

/// SplitMix64: the moments of fault tests, from a seed the test prints so that a failing run can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    /// `ROADSAVE_TEST_SEED` when set (to replay a run), else a new one.
    static func seed() -> UInt64 {
        ProcessInfo.processInfo.environment["ROADSAVE_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
