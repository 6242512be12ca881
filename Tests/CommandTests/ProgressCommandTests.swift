import Foundation
import Testing

/// The progress line of `replay`, `send`, `simulate` and `convert`: on a terminal it shows (records, records/s,
/// percent and time left where known) and clears itself; with standard error on a pipe, or `--no-progress`, there
/// is none, and nothing else changes.
@Suite struct ProgressCommandTests {
    static let erase = "\r\u{1B}[K"

    /// A simulated fleet in a temporary file (about 18,000 records), removed by the caller.
    static func fleet(devices: Int = 10, minutes: Int = 30) async throws -> URL {
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("roadsave-progress-\(UUID().uuidString.prefix(12)).ndjson")
        let result = try await Roadsave.run(["simulate", "--devices", String(devices), "--duration", String(minutes),
                                             "--output", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        return file
    }

    /// The text a progress line leaves: an erase sequence or a rate.
    static func hasProgress(_ stderr: String) -> Bool {
        stderr.contains("\u{1B}[") || ["records/s", "devices/s", "trials/s"].contains { stderr.contains($0) }
    }

    /// Every log line starts on a row of its own: the progress text before it was erased (or it follows a line break).
    static func logLinesStartOnTheirOwnRow(_ stderr: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let pieces = stderr.components(separatedBy: "ts=20")
        for (before, _) in zip(pieces, pieces.dropFirst()) where !before.isEmpty {
            // A pseudo-terminal may turn "\n" into "\r\n", one Character in Swift: look at the last scalar.
            #expect(before.hasSuffix("\u{1B}[K") || before.unicodeScalars.last == "\n",
                    "a log line written after \"\(before.suffix(80))\"", sourceLocation: sourceLocation)
        }
    }

    /// The records of a file in `count` chunks (whole lines each).
    static func chunks(of file: URL, count: Int) throws -> [Data] {
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: true)
        let size = (lines.count + count - 1) / count
        return stride(from: 0, to: lines.count, by: size).map {
            Data((lines[$0..<min($0 + size, lines.count)].joined(separator: "\n") + "\n").utf8)
        }
    }

    @Test(arguments: ["replay", "send", "simulate", "convert"])
    func helpNamesTheFlag(command: String) async throws {
        let result = try await Roadsave.run([command, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--no-progress"), "\(result.stdout)")
    }

    // MARK: replay

    /// On a terminal, reading records that arrive with pauses (so that a fast build waits too): the line shows the
    /// records and records/s, log lines are not broken into, the line is cleared at the end, and the events are the
    /// same as without a terminal.
    @Test func replayShowsProgressOnATerminal() async throws {
        let file = try await Self.fleet()
        defer { try? FileManager.default.removeItem(at: file) }
        let input = try Self.chunks(of: file, count: 4)
        let terminal = try await TerminalProcess.run(["replay", "-"], stderrIsTerminal: true, input: input, pause: 0.4)
        let pipe = try await TerminalProcess.run(["replay", "-"], stderrIsTerminal: false, input: input)
        #expect(terminal.status == 0 && pipe.status == 0, "\(terminal.stderr)\n\(pipe.stderr)")
        #expect(terminal.stderr.contains(Self.erase + "replay: "), "\(terminal.stderr.prefix(2000))")
        #expect(terminal.stderr.range(of: #"replay: [0-9,]+ records, [0-9,.]+ records/s"#, options: .regularExpression) != nil,
                "\(terminal.stderr.prefix(2000))")
        Self.logLinesStartOnTheirOwnRow(terminal.stderr)
        #expect(terminal.stderr.contains("msg=\"replay finished\""))
        #expect(!Self.hasProgress(pipe.stderr), "\(pipe.stderr.prefix(2000))")
        #expect(terminal.stdout == pipe.stdout)
        #expect(!pipe.stdout.isEmpty)
    }

    /// A file: the percentage and the time left too (when this build is slow enough for a line to be drawn).
    @Test func replayOfAFileShowsPercentAndTimeLeftOrNothing() async throws {
        let file = try await Self.fleet()
        defer { try? FileManager.default.removeItem(at: file) }
        let terminal = try await TerminalProcess.run(["replay", file.path], stderrIsTerminal: true)
        #expect(terminal.status == 0)
        if terminal.stderr.contains("replay: ") {
            #expect(terminal.stderr.range(of: #"replay: [0-9,]+ records, [0-9,.]+ records/s, [0-9]+%"#,
                                          options: .regularExpression) != nil, "\(terminal.stderr.prefix(2000))")
        }
        Self.logLinesStartOnTheirOwnRow(terminal.stderr)
    }

    @Test func replayWithoutATerminalOrWithNoProgressShowsNone() async throws {
        let file = try await Self.fleet()
        defer { try? FileManager.default.removeItem(at: file) }
        let input = try Self.chunks(of: file, count: 3)
        let pipe = try await TerminalProcess.run(["replay", "-"], stderrIsTerminal: false, input: input, pause: 0.4)
        #expect(pipe.status == 0)
        #expect(!Self.hasProgress(pipe.stderr), "\(pipe.stderr.prefix(2000))")
        let turnedOff = try await TerminalProcess.run(["replay", "-", "--no-progress"], stderrIsTerminal: true,
                                                      input: input, pause: 0.4)
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
        // Devices simulated, then records written; the debug build takes about a second for this. A phase drawn only
        // once, just after it started, has no rate yet (`ProgressMeter`, tested with its clock in ProgressMeterTests):
        // a busy machine can draw each phase once, so the rate is not required here.
        #expect(terminal.stderr.range(of: #"simulate: [0-9,]+ (devices|records)(, [0-9,.]+ (devices|records)/s)?, [0-9]+%"#,
                                      options: .regularExpression) != nil, "\(terminal.stderr.prefix(2000))")
        #expect(terminal.stderr.hasSuffix(Self.erase), "the line is cleared at the end: \(terminal.stderr.suffix(200))")
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
        #expect(terminal.status == 0)
        #expect(terminal.stdout == pipe.stdout)
        #expect(!terminal.stdout.contains("\u{1B}"))
    }

    // MARK: send

    /// One sensor-ingest for both runs; `--rate` makes each send take about a second whatever the build's speed, so
    /// the line shows: records, records/s, percent and time left of the file.
    @Test func sendShowsProgressOnATerminalAndNoneOnAPipe() async throws {
        let base = Ports.block(2)
        let journal = SendCommandTests.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journal) }
        let ingest = try SendCommandTests.ingest(base: base, directory: journal, applications: "demo-app")
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20), "ingest: \(ingest.stderr)")
        let fleet = try await Self.fleet(devices: 4, minutes: 10)
        defer { try? FileManager.default.removeItem(at: fleet) }
        let lines = try String(contentsOf: fleet, encoding: .utf8).split(separator: "\n").prefix(2_400)
        let file = try Roadsave.temporaryFile(lines.joined(separator: "\n") + "\n")
        defer { try? FileManager.default.removeItem(at: file) }
        let summary = "sent \(lines.count), accepted \(lines.count), rejected 0, batches \((lines.count + 99) / 100)\n"

        let arguments = ["send", file.path, "--endpoint", Ports.tcp(base), "--rate", String(lines.count), "--batch", "100"]
        let terminal = try await TerminalProcess.run(arguments, stderrIsTerminal: true)
        #expect(terminal.status == 0, "\(terminal.stderr)")
        #expect(terminal.stdout == summary)
        #expect(terminal.stderr.range(of: #"send: [0-9,]+ records, [0-9,.]+ records/s, [0-9]+%, [0-9:]+ left"#,
                                      options: .regularExpression) != nil, "\(terminal.stderr.prefix(2000))")
        #expect(terminal.stderr.hasSuffix(Self.erase), "the line is cleared at the end: \(terminal.stderr.suffix(200))")

        let pipe = try await TerminalProcess.run(arguments, stderrIsTerminal: false)
        #expect(pipe.status == 0, "\(pipe.stderr)")
        #expect(pipe.stdout == summary)
        #expect(pipe.stderr.isEmpty, "\(pipe.stderr.prefix(2000))")
        await stopGracefully(ingest)
    }

    // MARK: convert

    /// The recordings beside the checkout (`../shared/data`), or `ROADSAVE_SHARED_DATA`; nil when absent.
    static var sharedData: URL? {
        if let path = ProcessInfo.processInfo.environment["ROADSAVE_SHARED_DATA"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let candidate = Roadsave.testsFolder.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/data")
        return FileManager.default.fileExists(atPath: candidate.path) ? candidate : nil
    }

    static var tmdRecording: URL? {
        guard let folder = sharedData?.appendingPathComponent("us-transportation-mode/raw"),
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return nil }
        return names.filter { $0.hasSuffix(".csv.gz") }.sorted().first.map { folder.appendingPathComponent($0) }
    }

    /// Without a terminal convert's standard error is its report and nothing else.
    @Test(.enabled(if: tmdRecording != nil, "the recordings in ../shared/data are not here"))
    func convertWithoutATerminalWritesOnlyItsReport() async throws {
        let recording = try #require(Self.tmdRecording)
        let result = try await TerminalProcess.run(["convert", "tmd", recording.path], stderrIsTerminal: false)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("tmd "), "\(result.stderr.prefix(300))")
        #expect(!Self.hasProgress(result.stderr), "\(result.stderr.prefix(2000))")
        let turnedOff = try await TerminalProcess.run(["convert", "tmd", recording.path, "--no-progress"],
                                                      stderrIsTerminal: true)
        #expect(turnedOff.status == 0)
        #expect(turnedOff.stdout == result.stdout)
        #expect(!Self.hasProgress(turnedOff.stderr), "\(turnedOff.stderr.prefix(2000))")
    }
}
