// Reading the recordings' containers. Foundation on Linux has no gzip, tar or zip support and outside packages are not
// allowed, so the converters run the system tools (gzip, tar and python3's zipfile module) through `Process`.

import Foundation

/// Why a recording could not be converted.
public enum RecordingError: Error, CustomStringConvertible, Equatable {
    /// The file does not exist or cannot be read.
    case unreadable(file: String, reason: String)
    /// An external tool failed (for example gzip on a file that is not gzip-compressed).
    case toolFailed(tool: String, file: String, message: String)
    /// The file was read but its content is not what the dataset's format says.
    case malformed(file: String, reason: String)
    /// `--trial` named a trial the archive does not hold.
    case unknownTrial(name: String, available: [String])

    public var description: String {
        switch self {
        case .unreadable(let file, let reason): return "cannot read \(file): \(reason)"
        case .toolFailed(let tool, let file, let message): return "\(tool) failed on \(file): \(message)"
        case .malformed(let file, let reason): return "\(file) is not in the expected format: \(reason)"
        case .unknownTrial(let name, let available):
            return "no trial named \(name) in the archive (available: \(available.joined(separator: ", ")))"
        }
    }
}

enum ExternalTool {
    /// Runs `tool arguments…` found on PATH (through /usr/bin/env) and returns its standard output.
    /// Throws `toolFailed` with the tool's own error text when it exits non-zero.
    static func run(_ tool: String, _ arguments: [String], file: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw RecordingError.toolFailed(tool: tool, file: file, message: "cannot start: \(error)")
        }
        // stdout is drained before waiting so a large output cannot fill the pipe and block the tool; the tools'
        // error output is a line or two, which the pipe buffer holds until it is read below.
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = errorText.trimmingCharacters(in: .whitespacesAndNewlines)
            throw RecordingError.toolFailed(
                tool: tool, file: file,
                message: message.isEmpty ? "exit status \(process.terminationStatus)" : message)
        }
        return data
    }
}

/// Reads a recording's text, decompressing `.gz` files with `gzip -dc` (files without `.gz` are read as they are).
public enum RecordingFile {
    public static func text(of url: URL) throws -> String {
        String(decoding: try data(of: url), as: UTF8.self)
    }

    /// The recording's bytes, decompressed the same way (for the JSON datasets, which are parsed as bytes).
    public static func data(of url: URL) throws -> Data {
        try checkReadable(url)
        if url.pathExtension == "gz" {
            return try ExternalTool.run("gzip", ["-dc", url.path], file: url.path)
        }
        do { return try Data(contentsOf: url) } catch {
            throw RecordingError.unreadable(file: url.path, reason: error.localizedDescription)
        }
    }

    /// Fails with a reason a person can act on (missing, a folder, no permission) before any tool runs.
    public static func checkReadable(_ url: URL) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw RecordingError.unreadable(file: url.path, reason: "no such file")
        }
        guard !isDirectory.boolValue else {
            throw RecordingError.unreadable(file: url.path, reason: "it is a directory")
        }
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            throw RecordingError.unreadable(file: url.path, reason: "permission denied")
        }
    }
}

/// A scratch folder under the system temporary directory, removed when the work is done.
enum ScratchDirectory {
    static func with<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("roadsave-recordings-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder)
    }
}

/// Splits text into lines, accepting \n and \r\n endings and dropping empty lines.
func textLines(_ text: String) -> [Substring] {
    text.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
}

/// Splits one CSV/TSV line into fields and strips surrounding double quotes. The recordings never put the separator
/// inside a quoted field, so no quote-aware parsing is needed.
func fields(_ line: Substring, separator: Character = ",") -> [Substring] {
    line.split(separator: separator, omittingEmptySubsequences: false).map { field in
        var field = field
        if field.count >= 2, field.first == "\"", field.last == "\"" {
            field = field.dropFirst().dropLast()
        }
        return field
    }
}
