import Foundation
import NotifierSinks
import RecordCodecs
import RoadSaveModel
import Testing

/// The NDJSON sink's durable batches: the file is cut back to the size recorded with the last deletion, so it holds
/// each event once.
@Suite struct NDJSONRecoveryTests {
    func append(_ sink: NDJSONSink, _ events: [RoadSaveEvent], expected: Int64?) async -> Result<
        Int64?, NDJSONSink.WriteError
    > {
        await withCheckedContinuation { continuation in
            sink.appendDurably(events, expectedOffset: expected) { continuation.resume(returning: $0) }
        }
    }

    func text(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    @Test func recoverCutsWhatWasNotRecordedAndKeepsTheRest() async throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let path = folder + "/events.ndjson"
        try "someone's line\n".write(toFile: path, atomically: false, encoding: .utf8)
        let events = Fixtures.journey("ana", 1)
        let sink = try NDJSONSink(path: path, log: testLog)
        #expect(sink.isTruncatable)
        // No recorded size (a new sink): the file is kept as it is.
        let start = try #require(try sink.recover(committedOffset: nil))
        #expect(start == 15)
        let first = try await append(sink, [events[0]], expected: start).get()
        let second = try await append(sink, [events[1], events[2]], expected: first).get()
        #expect(second == Int64(text(path).utf8.count))
        await sink.close()

        // A crash after the second batch was written but before it was recorded: the restart cuts it.
        let reopened = try NDJSONSink(path: path, log: testLog)
        #expect(try reopened.recover(committedOffset: first) == first)
        #expect(text(path) == "someone's line\n" + events[0].json() + "\n")
        // A batch that failed part-way is cut before it is written again.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        handle.seekToEndOfFile()
        handle.write(Data("{\"event\":\"tripDi".utf8))
        try handle.close()
        let again = try await append(reopened, [events[1], events[2]], expected: first).get()
        #expect(again == second)
        #expect(text(path) == "someone's line\n" + events.map { $0.json() + "\n" }.joined())

        // A file shorter than recorded was rotated or cut by someone else: kept, and its size is what counts now.
        #expect(try reopened.recover(committedOffset: 100_000) == second)
        await reopened.close()
    }

    @Test func standardOutputCannotBeCut() throws {
        let sink = try NDJSONSink(path: "-", log: testLog)
        #expect(!sink.isTruncatable)
        #expect(try sink.recover(committedOffset: 10) == nil)
    }
}
