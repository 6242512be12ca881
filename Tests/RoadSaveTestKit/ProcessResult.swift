import Foundation

/// What a process that ran to its end left: its status (`128 + signal` when a signal ended it) and both outputs.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }

    public var lines: [String] { stdout.split(separator: "\n").map(String.init) }
    public var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }

    /// The JSON objects on standard output.
    public var objects: [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}

extension ChildProcess {
    /// Runs `executable ARGUMENTS` to its end with exactly `environment` (this process's when nil) and collects both
    /// outputs. Killed after `limit` seconds, a bound on a hang (then it throws), not a timing.
    public static func run(
        _ executable: URL, _ arguments: [String], input: Data? = nil,
        environment: [String: String]? = nil, limit: Double = 60
    ) async throws -> ProcessResult {
        let child = try ChildProcess(
            name: executable.lastPathComponent, executable: executable, arguments: arguments,
            exactEnvironment: environment ?? ProcessInfo.processInfo.environment, input: input)
        defer { child.kill() }
        guard let status = await child.waitForExit(timeout: limit) else {
            throw TestFailure(
                "\(executable.lastPathComponent) \(arguments.joined(separator: " ")) still running after "
                    + "\(limit) s\nstderr: \(child.stderrText)")
        }
        return ProcessResult(status: status, stdout: child.stdoutText, stderr: child.stderrText)
    }
}
