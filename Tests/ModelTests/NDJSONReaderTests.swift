import Foundation
import RecordCodecs
import Testing

@Suite("NDJSONLineReader")
struct NDJSONLineReaderTests {
    /// Writes `bytes` to a new temporary file, runs `body` with its path and removes the file.
    func withTemporaryFile<T>(_ bytes: [UInt8], _ body: (String) throws -> T) throws -> T {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("roadsave-model-tests-\(UUID().uuidString).ndjson")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        return try body(url.path)
    }

    /// Every line the reader hands over, with its number.
    func readAll(_ path: String) throws -> [(Int, String)] {
        var reader = try NDJSONLineReader(path: path)
        var lines: [(Int, String)] = []
        reader.forEachLine { line, number in
            lines.append((number, String(decoding: line, as: UTF8.self)))
        }
        return lines
    }

    func expectLines(
        _ actual: [(Int, String)], _ expected: [(Int, String)],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(actual.map(\.0) == expected.map(\.0), sourceLocation: sourceLocation)
        #expect(actual.map(\.1) == expected.map(\.1), sourceLocation: sourceLocation)
    }

    @Test func crlfBlankLinesAndAFinalLineWithoutNewline() throws {
        let text =
            "{\"a\":1}\r\n" // 1
            + "\r\n" // 2: blank (CRLF only)
            + "  \t \n" // 3: blank (spaces and a tab)
            + "{\"b\":2}\n" // 4
            + "\n" // 5: blank
            + " {\"c\":3} \r\n" // 6: inner spaces are kept
            + "{\"d\":4}" // 7: no newline at the end
        let lines = try withTemporaryFile(Array(text.utf8)) { try readAll($0) }
        expectLines(lines, [(1, "{\"a\":1}"), (4, "{\"b\":2}"), (6, " {\"c\":3} "), (7, "{\"d\":4}")])
    }

    @Test func linesAreBytesNotText() throws {
        // Invalid UTF-8 and NUL bytes are handed over as they are, for the record decoder to reject.
        let bytes: [UInt8] = [0x61, 0xFF, 0x00, 0x62, 0x0A, 0x63, 0x0A]
        let lines = try withTemporaryFile(bytes) { path -> [[UInt8]] in
            var reader = try NDJSONLineReader(path: path)
            var lines: [[UInt8]] = []
            reader.forEachLine { line, _ in lines.append(Array(line)) }
            return lines
        }
        #expect(lines == [[0x61, 0xFF, 0x00, 0x62], [0x63]])
    }

    @Test func longLinesAreReadWhole() throws {
        let long = String(repeating: "x", count: 1_000_000)
        let lines = try withTemporaryFile(Array("short\n\(long)\nend\n".utf8)) { try readAll($0) }
        #expect(lines.map(\.0) == [1, 2, 3])
        #expect(lines.map(\.1.count) == [5, 1_000_000, 3])
    }

    @Test func emptyFileHasNoLines() throws {
        #expect(try withTemporaryFile([]) { try readAll($0) }.isEmpty)
    }

    @Test func onlyBlankLines() throws {
        #expect(try withTemporaryFile(Array("\n\r\n \n\t\r\n".utf8)) { try readAll($0) }.isEmpty)
    }

    @Test func forEachLineUntilStopsAndSaysWhetherTheInputEnded() throws {
        try withTemporaryFile(Array("a\nb\n\nc\n".utf8)) { path in
            var reader = try NDJSONLineReader(path: path)
            var seen: [Int] = []
            var ended: Bool?
            reader.forEachLineUntil(
                { _, number in
                    seen.append(number)
                    return number < 2
                }, ended: { ended = $0 })
            #expect(seen == [1, 2])
            #expect(ended == false)

            // The rest of the file is read on the next call, with line numbers carried on.
            var rest: [(Int, String)] = []
            reader.forEachLineUntil(
                { line, number in
                    rest.append((number, String(decoding: line, as: UTF8.self)))
                    return true
                }, ended: { ended = $0 })
            expectLines(rest, [(4, "c")])
            #expect(ended == true)
        }
    }

    @Test func errorsThrownByTheBodyStopReading() throws {
        struct Stop: Error {}
        try withTemporaryFile(Array("a\nb\nc\n".utf8)) { path in
            var reader = try NDJSONLineReader(path: path)
            var seen: [Int] = []
            #expect(throws: Stop.self) {
                try reader.forEachLine { _, number in
                    seen.append(number)
                    if number == 2 { throw Stop() }
                }
            }
            #expect(seen == [1, 2])
        }
    }

    @Test func missingFileThrowsAReadErrorNamingThePath() {
        let path = "/nonexistent-roadsave-dir/records-\(UUID().uuidString).ndjson"
        do {
            _ = try NDJSONLineReader(path: path)
            Issue.record("opened a missing file")
        } catch {
            #expect(error.path == path)
            #expect(error.reason.contains("No such file"))
            #expect(error.description == "cannot read \(path): \(error.reason)")
        }
    }

    @Test func directoryCannotBeReadAsLines() throws {
        // fopen on a directory succeeds on Linux, but reading it fails: the reader sees no lines rather than crashing.
        var reader = try NDJSONLineReader(path: FileManager.default.temporaryDirectory.path)
        var count = 0
        reader.forEachLine { _, _ in count += 1 }
        #expect(count == 0)
    }
}
