import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import NotifierSinks

/// The NDJSON sink's batches as the notifier's outbox hands them over (`appendDurably`); what the file holds across
/// crashes is `NDJSONRecoveryTests`' (NotifierTests).
@Suite struct NDJSONSinkTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-sink-\(UUID().uuidString).ndjson").path
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
    }

    func append(_ sink: NDJSONSink, _ events: [RoadSaveEvent], expected: Int64? = nil) async
        -> Result<Int64?, NDJSONSink.WriteError>
    {
        await withCheckedContinuation { continuation in
            sink.appendDurably(events, expectedOffset: expected) { continuation.resume(returning: $0) }
        }
    }

    @Test func appendsAcrossSinksOneLinePerEvent() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "existing line\n".write(toFile: path, atomically: false, encoding: .utf8)
        let first = TestEvents.journey("ana", 1)
        let second = TestEvents.journey("ben", 2)

        let current = try NDJSONSink(path: path, format: .current, log: testLog)
        #expect(current.name == "ndjson(\(path))")
        let size = try await append(current, first).get()
        #expect(size == Int64(try String(contentsOfFile: path, encoding: .utf8).utf8.count))
        await current.close()
        #expect(current.stats == NDJSONSink.Stats(written: 3, failed: 0))

        let legacy = try NDJSONSink(path: path, format: .legacy, log: testLog)
        _ = try await append(legacy, second).get()
        await legacy.close()

        let expected = ["existing line"] + first.map { $0.json(.current) } + second.map { $0.json(.legacy) } + [""]
        #expect(try Self.lines(path) == expected)
        // Every event line is one JSON object of its event.
        for (line, event) in zip(try Self.lines(path).dropFirst(), first + second) {
            let object = try #require(TestEvents.json(line))
            #expect(object["eventID"] as? String == event.eventID)
            #expect(object["event"] as? String == event.name)
        }
        #expect(try Self.lines(path)[5].contains(#""timestamp""#)) // the legacy crash
    }

    @Test func manyBatchesKeepTheirOrder() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try NDJSONSink(path: path, log: testLog)
        let events = (0..<300).flatMap { TestEvents.journey("u\($0 % 7)", $0) }
        var offset: Int64?
        for start in stride(from: 0, to: events.count, by: 30) {
            offset = try await append(sink, Array(events[start..<start + 30]), expected: offset).get()
        }
        await sink.close()
        #expect(try Self.lines(path) == events.map { $0.json(.current) } + [""])
    }

    @Test func unopenablePathThrows() throws {
        #expect(throws: NDJSONSink.OpenError.self) {
            _ = try NDJSONSink(path: "/nonexistent-roadsave-dir/events.ndjson", log: testLog)
        }
        do {
            _ = try NDJSONSink(path: "/nonexistent-roadsave-dir/events.ndjson", log: testLog)
        } catch let error as NDJSONSink.OpenError {
            #expect(error.code == ENOENT)
            #expect(error.description.contains("/nonexistent-roadsave-dir/events.ndjson"))
        }
        // A directory is not a file to append to.
        #expect(throws: NDJSONSink.OpenError.self) {
            _ = try NDJSONSink(path: FileManager.default.temporaryDirectory.path, log: testLog)
        }
    }

    @Test func writeErrorsAreReturnedAndCounted() async throws {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let sink = try NDJSONSink(path: "/dev/full", log: testLog)
        let result = await append(sink, TestEvents.journey("ana", 1))
        #expect(throws: NDJSONSink.WriteError(operation: "write /dev/full", code: ENOSPC)) { try result.get() }
        await sink.close()
        #expect(sink.stats == NDJSONSink.Stats(written: 0, failed: 3))
    }

    @Test func devNullStaysADevice() async throws {
        let sink = try NDJSONSink(path: "/dev/null", log: testLog)
        #expect(!sink.isTruncatable)
        // Not a regular file: no size to record.
        #expect(try await append(sink, TestEvents.journey("ana", 1)).get() == nil)
        await sink.close()
        #expect(sink.stats.written == 3)
        var info = stat()
        #expect(stat("/dev/null", &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFCHR)
    }

    @Test func standardOutputIsNotAFileAndStaysOpen() async throws {
        let sink = try NDJSONSink(path: "-", log: testLog)
        #expect(sink.name == "ndjson(stdout)")
        #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/-"))
        await sink.close()
        #expect(fcntl(STDOUT_FILENO, F_GETFD) != -1)
    }

    @Test func refusesAfterClose() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try NDJSONSink(path: path, log: testLog)
        await sink.close()
        let result = await append(sink, [TestEvents.crash("ana", crash: "late")])
        #expect(throws: NDJSONSink.WriteError(operation: "write \(path)", code: EBADF)) { try result.get() }
        #expect(try Self.lines(path) == [""])
    }
}
