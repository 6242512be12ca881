import Foundation
import RoadSaveTestKit
import Testing

/// The project's executable as a separate process, as users and scripts run it (the kit's `ChildProcess`, with a
/// data directory of its own: see `RunningProcess`).
enum Roadsave {
    static var executable: URL { Executables.roadsave }

    /// A fixture of the CLI tests (`Tests/CLITests/Fixtures`).
    static func fixture(_ name: String) -> URL {
        TestPaths.target("CLITests").appendingPathComponent("Fixtures/\(name)")
    }

    typealias Result = ProcessResult

    /// Runs `roadsave ARGUMENTS` to completion (killed after `limit` seconds) and collects both outputs.
    static func run(
        _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        limit: Double = 60
    ) async throws -> Result {
        let process = try RunningProcess(arguments, input: input, environment: environment)
        defer { process.kill() }
        guard let status = await process.waitForExit(timeout: limit) else {
            throw TestFailure(
                "roadsave \(arguments.joined(separator: " ")) still running after \(limit) s\nstderr: \(process.stderr)"
            )
        }
        return Result(status: status, stdout: process.stdout, stderr: process.stderr)
    }
}

/// A `roadsave` process running in the background: the kit's `ChildProcess`, with its outputs as text.
/// Unless the environment names one, it gets a fresh data directory (`ROADSAVE_DATA_DIR`, removed by `kill()`): a
/// service locks its data directory, and tests running at once must not share (or wait for) one.
final class RunningProcess: Sendable {
    let child: ChildProcess
    /// The data directory made for this process, if the environment gave none.
    let ownDataDirectory: URL?

    /// `executable` is `roadsave` unless given (a shell standing in for a supervisor, say); `environment` is the
    /// whole environment (this process's when nil).
    init(
        _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        executable: URL = Roadsave.executable
    ) throws {
        var variables = environment ?? ProcessInfo.processInfo.environment
        if variables["ROADSAVE_DATA_DIR"] == nil {
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("roadsave-commandtest-data-\(UUID().uuidString)")
            variables["ROADSAVE_DATA_DIR"] = directory.path
            ownDataDirectory = directory
        } else {
            ownDataDirectory = nil
        }
        child = try ChildProcess(
            name: arguments.first ?? executable.lastPathComponent, executable: executable,
            arguments: arguments, exactEnvironment: variables, input: input)
    }

    var process: Process { child.process }
    var arguments: [String] { child.arguments }
    var pid: Int32 { child.pid }
    var stdout: String { child.stdoutText }
    var stderr: String { child.stderrText }
    var lines: [String] { child.lines }
    var wasSignalled: Bool { child.endedBySignal }

    func waitForLine(timeout: Double, _ match: (String) -> Bool) async -> String? {
        await child.waitForLine(timeout: timeout, match)
    }

    func waitForExit(timeout: Double) async -> Int32? { await child.waitForExit(timeout: timeout) }

    func signal(_ number: Int32) { child.signal(number) }

    /// SIGKILL if it still runs, and its own data directory removed (cleanup).
    func kill() {
        child.kill()
        if let ownDataDirectory { try? FileManager.default.removeItem(at: ownDataDirectory) }
    }
}

/// Whether a process id is alive (and not a zombie of ours).
func isAlive(_ pid: Int32) -> Bool {
    guard Foundation.kill(pid, 0) == 0 else { return false }
    // A zombie still answers kill(0): look at its state.
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return true }
    let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).prefix(1)
    return state != "Z"
}

/// Stops a service process the graceful way and checks it exits 0 within `timeout`; SIGKILL otherwise.
func stopGracefully(_ process: RunningProcess, timeout: Double = 15, sourceLocation: SourceLocation = #_sourceLocation)
    async
{
    process.signal(SIGTERM)
    let status = await process.waitForExit(timeout: timeout)
    #expect(
        status == 0,
        "roadsave \(process.arguments.first ?? "") after SIGTERM: \(status.map(String.init) ?? "still running")\nstderr: \(process.stderr.suffix(2000))",
        sourceLocation: sourceLocation)
    #expect(
        !process.wasSignalled, "roadsave \(process.arguments.first ?? "") died of its signal",
        sourceLocation: sourceLocation)
    process.kill()
}
