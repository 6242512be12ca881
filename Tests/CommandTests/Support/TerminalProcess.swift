import Foundation
import RoadSaveTestKit

/// `roadsave` with its standard error on a pseudo-terminal (as a person at a terminal runs it) or on a pipe, standard
/// output on a pipe, standard input fed from `input`; the progress line is drawn by the count rather than by the
/// clock, so that whether it shows does not depend on the machine's speed.
final class TerminalProcess: @unchecked Sendable { // Sendable: the outputs are guarded by `lock`
    struct Result {
        var status: Int32
        var stdout: String
        /// What reached standard error: the terminal's bytes (the line discipline turns "\n" into "\r\n") or the pipe's.
        var stderr: String
    }

    private let lock = NSLock()
    private var output = Data()
    private var errors = Data()
    private var open = 2

    /// Runs `roadsave ARGUMENTS` to its end (killed after `limit` seconds).
    static func run(
        _ arguments: [String], stderrIsTerminal: Bool, input: Data? = nil,
        limit: Double = 120
    ) async throws -> Result {
        try await TerminalProcess().run(arguments, stderrIsTerminal: stderrIsTerminal, input: input, limit: limit)
    }

    private func run(_ arguments: [String], stderrIsTerminal: Bool, input: Data?, limit: Double) async throws -> Result
    {
        let process = Process()
        process.executableURL = Roadsave.executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["TERM"] = "xterm"
        // The meter draws at its first count and every 500th, not by the clock (`ProgressMeter.Timing.drawEvery`):
        // a fast machine finishes before the clock's first drawing. Set for the pipe too, which must stay clean.
        environment["ROADSAVE_PROGRESS_EVERY"] = "500"
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin

        // The terminal: a pseudo-terminal's controller end is read here; the other end is the child's stderr.
        var controller: Int32 = -1
        var errorPipe: Pipe?
        if stderrIsTerminal {
            controller = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
            guard controller >= 0, grantpt(controller) == 0, unlockpt(controller) == 0, let name = ptsname(controller)
            else {
                throw TestFailure("no pseudo-terminal: \(String(cString: strerror(errno)))")
            }
            let terminal = Foundation.open(String(cString: name), O_RDWR | O_NOCTTY | O_CLOEXEC)
            guard terminal >= 0 else {
                throw TestFailure("cannot open the pseudo-terminal: \(String(cString: strerror(errno)))")
            }
            process.standardError = FileHandle(fileDescriptor: terminal, closeOnDealloc: true)
        } else {
            let pipe = Pipe()
            process.standardError = pipe
            errorPipe = pipe
        }
        try process.run()
        // Only the child keeps the terminal open now, so the controller reads EIO (the end) once it exits.
        if stderrIsTerminal { try (process.standardError as? FileHandle)?.close() }

        if let input { writeInBackground(input, to: stdin.fileHandleForWriting) }
        Thread { [self] in
            let data = out.fileHandleForReading.readDataToEndOfFile()
            lock.withLock {
                output = data
                open -= 1
            }
        }.start()
        if let errorPipe {
            Thread { [self] in
                let data = errorPipe.fileHandleForReading.readDataToEndOfFile()
                lock.withLock {
                    errors = data
                    open -= 1
                }
            }.start()
        } else {
            let controller = controller
            Thread { [self] in
                var chunk = [UInt8](repeating: 0, count: 4096)
                while true {
                    let count = read(controller, &chunk, chunk.count)
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    lock.withLock { errors.append(contentsOf: chunk[..<count]) }
                }
                close(controller)
                lock.withLock { open -= 1 }
            }.start()
        }

        let deadline = Date().addingTimeInterval(limit)
        while process.isRunning {
            if Date() >= deadline {
                kill(process.processIdentifier, SIGKILL)
                throw TestFailure("roadsave \(arguments.joined(separator: " ")) still running after \(limit) s")
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        let drained = Date().addingTimeInterval(5)
        while lock.withLock({ open > 0 }) && Date() < drained { try await Task.sleep(nanoseconds: 10_000_000) }
        return lock.withLock {
            Result(
                status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
                stderr: String(decoding: errors, as: UTF8.self))
        }
    }
}

// The pseudo-terminal calls of glibc's <stdlib.h>, which Swift's Glibc module leaves out (they sit behind
// _XOPEN_SOURCE); plain C functions of ints and a char pointer, so they are declared here by their symbols.
// swift-format-ignore: AlwaysUseLowerCamelCase
@_silgen_name("posix_openpt") private func posix_openpt(_ flags: Int32) -> Int32
@_silgen_name("grantpt") private func grantpt(_ descriptor: Int32) -> Int32
@_silgen_name("unlockpt") private func unlockpt(_ descriptor: Int32) -> Int32
@_silgen_name("ptsname") private func ptsname(_ descriptor: Int32) -> UnsafeMutablePointer<CChar>?
