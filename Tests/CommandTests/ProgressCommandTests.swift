import Foundation
import Recordings
import RoadSaveTestKit
import Testing

/// The progress line of `replay`, `send`, `simulate` and `convert`: on a terminal it shows (records, records/s,
/// percent and time left where known) and clears itself; with standard error on a pipe, or `--no-progress`, there
/// is none, and nothing else changes. `TerminalProcess` has the meter draw by the count (its first record and every
/// 500th), not by the clock, so a line is drawn however quickly the command ends; the clock's limits are tested
/// with an injected clock in TerminalProgressTests.
@Suite struct ProgressCommandTests {
    static let erase = "\r\u{1B}[K"

    /// A simulated fleet in a temporary file (about 18,000 records), removed by the caller.
    static func fleet(devices: Int = 10, minutes: Int = 30) async throws -> URL {
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("roadsave-progress-\(UUID().uuidString.prefix(12)).ndjson")
        let result = try await Roadsave.run([
            "simulate", "--devices", String(devices), "--duration", String(minutes),
            "--output", file.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        return file
    }

    /// The text a progress line leaves: an erase sequence or a rate.
    static func hasProgress(_ stderr: String) -> Bool {
        stderr.contains("\u{1B}[") || ["records/s", "devices/s", "trials/s"].contains { stderr.contains($0) }
    }

    /// `label`'s line was drawn, and the last thing done to it was its erasure: after the last erase sequence (the
    /// meter's `finish`) nothing draws it again, neither a drawing nor a log line written above it.
    static func drawnAndClearedAtTheEnd(
        _ stderr: String, label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            stderr.contains(erase + label + ": "), "never drawn: \(stderr.prefix(2000))",
            sourceLocation: sourceLocation)
        let afterLastErase = stderr.components(separatedBy: erase).last ?? ""
        #expect(
            stderr.contains(erase) && !afterLastErase.contains(label + ": "),
            "the line is not cleared at the end: \(stderr.suffix(300))", sourceLocation: sourceLocation)
    }

    /// Every log line starts on a row of its own: the progress text before it was erased (or it follows a line break).
    static func logLinesStartOnTheirOwnRow(_ stderr: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let pieces = stderr.components(separatedBy: "ts=20")
        for (before, _) in zip(pieces, pieces.dropFirst()) where !before.isEmpty {
            // A pseudo-terminal may turn "\n" into "\r\n", one Character in Swift: look at the last scalar.
            #expect(
                before.hasSuffix("\u{1B}[K") || before.unicodeScalars.last == "\n",
                "a log line written after \"\(before.suffix(80))\"", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: ["replay", "send", "simulate", "convert"])
    func helpNamesTheFlag(command: String) async throws {
        let result = try await Roadsave.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--no-progress"), "\(result.stdout)")
        // The tests' timing variable is not for users.
        #expect(!result.stdout.contains("ROADSAVE_PROGRESS_EVERY"), "\(result.stdout)")
    }

    // MARK: replay

    /// On a terminal, reading records from a pipe (no total): the line shows the records and records/s, log lines
    /// are not broken into, the line is cleared at the end, and the events are the same as without a terminal.
    @Test func replayShowsProgressOnATerminal() async throws {
        let file = try await Self.fleet()
        defer { try? FileManager.default.removeItem(at: file) }
        let input = try Data(contentsOf: file)
        let terminal = try await TerminalProcess.run(["replay", "-"], stderrIsTerminal: true, input: input)
        let pipe = try await TerminalProcess.run(["replay", "-"], stderrIsTerminal: false, input: input)
        #expect(terminal.status == 0 && pipe.status == 0, "\(terminal.stderr)\n\(pipe.stderr)")
        #expect(
            terminal.stderr.range(of: #"replay: [0-9,]+ records, [0-9,.]+ records/s"#, options: .regularExpression)
                != nil,
            "\(terminal.stderr.prefix(2000))")
        Self.drawnAndClearedAtTheEnd(terminal.stderr, label: "replay")
        Self.logLinesStartOnTheirOwnRow(terminal.stderr)
        #expect(terminal.stderr.contains("msg=\"replay finished\""))
        #expect(!Self.hasProgress(pipe.stderr), "\(pipe.stderr.prefix(2000))")
        #expect(terminal.stdout == pipe.stdout)
        #expect(!pipe.stdout.isEmpty)
    }

    /// A file: the percentage and the time left too.
    @Test func replayOfAFileShowsPercentAndTimeLeft() async throws {
        let file = try await Self.fleet()
        defer { try? FileManager.default.removeItem(at: file) }
        let terminal = try await TerminalProcess.run(["replay", file.path], stderrIsTerminal: true)
        #expect(terminal.status == 0)
        #expect(
            terminal.stderr.range(
                of: #"replay: [0-9,]+ records, [0-9,.]+ records/s, [0-9]+%, [0-9:]+ left"#,
                options: .regularExpression) != nil, "\(terminal.stderr.prefix(2000))")
        Self.drawnAndClearedAtTheEnd(terminal.stderr, label: "replay")
        Self.logLinesStartOnTheirOwnRow(terminal.stderr)
    }

    @Test func replayWithoutATerminalOrWithNoProgressShowsNone() async throws {
        let file = try await Self.fleet()
        defer { try? FileManager.default.removeItem(at: file) }
        let input = try Data(contentsOf: file)
        let pipe = try await TerminalProcess.run(["replay", "-"], stderrIsTerminal: false, input: input)
        #expect(pipe.status == 0)
        #expect(!Self.hasProgress(pipe.stderr), "\(pipe.stderr.prefix(2000))")
        let turnedOff = try await TerminalProcess.run(
            ["replay", "-", "--no-progress"], stderrIsTerminal: true,
            input: input)
        #expect(turnedOff.status == 0)
        #expect(!Self.hasProgress(turnedOff.stderr), "\(turnedOff.stderr.prefix(2000))")
        #expect(turnedOff.stdout == pipe.stdout)
    }

    // MARK: simulate

    @Test func simulateShowsProgressOnATerminalAndNoneOtherwise() async throws {
        let directory = FileManager.default.temporaryDirectory
        let onTerminal = directory.appendingPathComponent("roadsave-progress-\(UUID().uuidString.prefix(12)).ndjson")
        let onPipe = directory.appendingPathComponent("roadsave-progress-\(UUID().uuidString.prefix(12)).ndjson")
        let turnedOff = directory.appendingPathComponent("roadsave-progress-\(UUID().uuidString.prefix(12)).ndjson")
        defer { for file in [onTerminal, onPipe, turnedOff] { try? FileManager.default.removeItem(at: file) } }
        let arguments = ["simulate", "--devices", "10", "--duration", "30", "--output"]
        let terminal = try await TerminalProcess.run(arguments + [onTerminal.path], stderrIsTerminal: true)
        let pipe = try await TerminalProcess.run(arguments + [onPipe.path], stderrIsTerminal: false)
        let off = try await TerminalProcess.run(arguments + [turnedOff.path, "--no-progress"], stderrIsTerminal: true)
        #expect(terminal.status == 0 && pipe.status == 0 && off.status == 0)
        // Both phases: the devices simulated, then the records written.
        for noun in ["devices", "records"] {
            #expect(
                terminal.stderr.range(
                    of: "simulate: [0-9,]+ \(noun), [0-9,.]+ \(noun)/s, [0-9]+%",
                    options: .regularExpression) != nil, "\(noun): \(terminal.stderr.prefix(2000))")
        }
        Self.drawnAndClearedAtTheEnd(terminal.stderr, label: "simulate")
        #expect(terminal.stderr.hasSuffix(Self.erase), "\(terminal.stderr.suffix(200))")
        #expect(pipe.stderr.isEmpty, "\(pipe.stderr.prefix(2000))")
        #expect(off.stderr.isEmpty, "\(off.stderr.prefix(2000))")
        // The same bytes either way.
        #expect(try Data(contentsOf: onTerminal) == Data(contentsOf: onPipe))
        #expect(try Data(contentsOf: turnedOff) == Data(contentsOf: onPipe))
    }

    /// Records to standard output on a pipe while standard error is a terminal: the line shows (the records do not
    /// go to the terminal), and the records are intact.
    @Test func simulateToStandardOutputKeepsTheRecordsIntact() async throws {
        let arguments = ["simulate", "--devices", "10", "--duration", "30"]
        let terminal = try await TerminalProcess.run(arguments, stderrIsTerminal: true)
        let pipe = try await TerminalProcess.run(arguments, stderrIsTerminal: false)
        #expect(terminal.status == 0 && pipe.status == 0)
        Self.drawnAndClearedAtTheEnd(terminal.stderr, label: "simulate")
        #expect(pipe.stderr.isEmpty, "\(pipe.stderr.prefix(2000))")
        #expect(terminal.stdout == pipe.stdout)
        #expect(!terminal.stdout.isEmpty)
        #expect(!terminal.stdout.contains("\u{1B}"))
    }

    // MARK: send

    /// One sensor-ingest for both runs: on a terminal the line shows records, records/s, percent and time left of
    /// the file, and is cleared at the end; on a pipe there is none; the summary is the same.
    @Test func sendShowsProgressOnATerminalAndNoneOnAPipe() async throws {
        let base = Ports.reserveRange(2)
        let journal = SendCommandTests.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journal) }
        let ingest = try SendCommandTests.ingest(base: base, directory: journal, applications: "demo-app")
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20), "ingest: \(ingest.stderr)")
        let fleet = try await Self.fleet(devices: 4, minutes: 10)
        defer { try? FileManager.default.removeItem(at: fleet) }
        let lines = try String(contentsOf: fleet, encoding: .utf8).split(separator: "\n").prefix(2_400)
        let file = try temporaryFile(lines.joined(separator: "\n") + "\n", suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let summary = "sent \(lines.count), accepted \(lines.count), rejected 0, batches \((lines.count + 99) / 100)\n"

        let arguments = ["send", file.path, "--endpoint", Ports.tcp(base), "--batch", "100"]
        let terminal = try await TerminalProcess.run(arguments, stderrIsTerminal: true)
        #expect(terminal.status == 0, "\(terminal.stderr)")
        #expect(terminal.stdout == summary)
        #expect(
            terminal.stderr.range(
                of: #"send: [0-9,]+ records, [0-9,.]+ records/s, [0-9]+%, [0-9:]+ left"#,
                options: .regularExpression) != nil, "\(terminal.stderr.prefix(2000))")
        Self.drawnAndClearedAtTheEnd(terminal.stderr, label: "send")
        #expect(terminal.stderr.hasSuffix(Self.erase), "\(terminal.stderr.suffix(200))")

        let pipe = try await TerminalProcess.run(arguments, stderrIsTerminal: false)
        #expect(pipe.status == 0, "\(pipe.stderr)")
        #expect(pipe.stdout == summary)
        #expect(pipe.stderr.isEmpty, "\(pipe.stderr.prefix(2000))")
        await stopGracefully(ingest)
    }

    // MARK: convert

    /// The recordings beside the checkout (`../shared/data`), or `ROADSAVE_SHARED_DATA`; nil when absent: found as
    /// the converters find them.
    static var sharedData: URL? { SharedData.directory }

    static var tmdRecording: URL? {
        guard let folder = sharedData?.appendingPathComponent("us-transportation-mode/raw"),
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return nil }
        return names.filter { $0.hasSuffix(".csv.gz") }.sorted().first.map { folder.appendingPathComponent($0) }
    }

    static var phoneDropsArchive: URL? {
        guard let archive = sharedData?.appendingPathComponent("phone-drops/raw_data.tar.gz"),
            FileManager.default.fileExists(atPath: archive.path)
        else { return nil }
        return archive
    }

    /// The phone drops (37 trials, the one conversion with a line): on a terminal the line counts the trials and is
    /// cleared before the report; on a pipe there is none; the records are the same.
    @Test(.enabled(if: phoneDropsArchive != nil, "the recordings in ../shared/data are not here"))
    func convertShowsProgressOnATerminalAndNoneOnAPipe() async throws {
        let archive = try #require(Self.phoneDropsArchive)
        let terminal = try await TerminalProcess.run(["convert", "phone-drops", archive.path], stderrIsTerminal: true)
        let pipe = try await TerminalProcess.run(["convert", "phone-drops", archive.path], stderrIsTerminal: false)
        #expect(
            terminal.status == 0 && pipe.status == 0, "\(terminal.stderr.suffix(2000))\n\(pipe.stderr.suffix(2000))")
        #expect(
            terminal.stderr.range(
                of: #"convert: [0-9,]+ trials, [0-9,.]+ trials/s, [0-9]+%"#,
                options: .regularExpression) != nil, "\(terminal.stderr.prefix(2000))")
        Self.drawnAndClearedAtTheEnd(terminal.stderr, label: "convert")
        // Cleared before the report, which is then what follows, as on a pipe (whose line breaks the terminal turns
        // into CRLF).
        let afterLastErase = terminal.stderr.components(separatedBy: Self.erase).last ?? ""
        #expect(
            afterLastErase.replacingOccurrences(of: "\r\n", with: "\n") == pipe.stderr,
            "\(afterLastErase.prefix(300))")
        #expect(!Self.hasProgress(pipe.stderr), "\(pipe.stderr.prefix(2000))")
        #expect(terminal.stdout == pipe.stdout)
        #expect(!pipe.stdout.isEmpty)
    }

    /// Without a terminal convert's standard error is its report and nothing else.
    @Test(.enabled(if: tmdRecording != nil, "the recordings in ../shared/data are not here"))
    func convertWithoutATerminalWritesOnlyItsReport() async throws {
        let recording = try #require(Self.tmdRecording)
        let result = try await TerminalProcess.run(["convert", "tmd", recording.path], stderrIsTerminal: false)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tmd "), "\(result.stderr.prefix(300))")
        #expect(!Self.hasProgress(result.stderr), "\(result.stderr.prefix(2000))")
        let turnedOff = try await TerminalProcess.run(
            ["convert", "tmd", recording.path, "--no-progress"],
            stderrIsTerminal: true)
        #expect(turnedOff.status == 0)
        #expect(turnedOff.stdout == result.stdout)
        #expect(!Self.hasProgress(turnedOff.stderr), "\(turnedOff.stderr.prefix(2000))")
    }
}
