import Foundation
import Testing
import RoadSaveModel
@testable import NotifierSinks

@Suite struct NDJSONSinkTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-sink-\(UUID().uuidString).ndjson").path
    }

    static func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
    }

    @Test func appendsAcrossSinksOneLinePerEvent() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "existing line\n".write(toFile: path, atomically: false, encoding: .utf8)
        let first = TestEvents.journey("ana", 1)
        let second = TestEvents.journey("ben", 2)

        let current = try NDJSONSink(path: path, format: .current, log: testLog)
        #expect(current.name == "ndjson(\(path))")
        for event in first { await current.deliver(event) }
        #expect(await current.shutdown(deadline: 5) == 0)
        #expect(current.stats.written == 3)
        #expect(current.stats.failed == 0)

        let legacy = try NDJSONSink(path: path, format: .legacy, fsync: true, log: testLog)
        for event in second { await legacy.deliver(event) }
        #expect(await legacy.shutdown(deadline: 5) == 0)

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

    @Test func manyEventsKeepTheirOrder() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try NDJSONSink(path: path, log: testLog)
        let events = (0..<300).flatMap { TestEvents.journey("u\($0 % 7)", $0) }
        for event in events { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 10) == 0)
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

    @Test func writeErrorsAreCountedNotFatal() async throws {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let sink = try NDJSONSink(path: "/dev/full", log: testLog)
        for event in TestEvents.journey("ana", 1) { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 5) == 0)
        #expect(sink.stats.failed == 3)
        #expect(sink.stats.written == 0)
    }

    @Test func devNullStaysADevice() async throws {
        let sink = try NDJSONSink(path: "/dev/null", log: testLog)
        for event in TestEvents.journey("ana", 1) { await sink.deliver(event) }
        #expect(await sink.shutdown(deadline: 5) == 0)
        #expect(sink.stats.written == 3)
        var info = stat()
        #expect(stat("/dev/null", &info) == 0)
        #expect(info.st_mode & S_IFMT == S_IFCHR)
    }

    @Test func standardOutputIsNotAFileAndStaysOpen() async throws {
        let sink = try NDJSONSink(path: "-", log: testLog)
        #expect(sink.name == "ndjson(stdout)")
        #expect(!FileManager.default.fileExists(atPath: FileManager.default.currentDirectoryPath + "/-"))
        #expect(await sink.shutdown(deadline: 1) == 0)
        try await Task.sleep(for: .milliseconds(50))
        #expect(fcntl(STDOUT_FILENO, F_GETFD) != -1)
    }

    @Test func refusesAfterShutdown() async throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try NDJSONSink(path: path, log: testLog)
        #expect(await sink.shutdown(deadline: 1) == 0)
        let late = TestEvents.crash("ana", crash: "late")
        await sink.deliver(late)
        #expect(sink.stats.rejectedAfterShutdown == 1)
        #expect(sink.undeliveredEvents() == [late])
        #expect(try Self.lines(path) == [""])
    }

    @Test func reopenFollowsRotation() async throws {
        let path = Self.temporaryPath()
        let rotated = path + ".1"
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: rotated)
        }
        let sink = try NDJSONSink(path: path, log: testLog)
        let events = TestEvents.journey("ana", 1)
        await sink.deliver(events[0])
        while sink.stats.queued > 0 { try await Task.sleep(for: .milliseconds(2)) }
        try FileManager.default.moveItem(atPath: path, toPath: rotated)
        try sink.reopen()
        await sink.deliver(events[1])
        await sink.deliver(events[2])
        #expect(await sink.shutdown(deadline: 5) == 0)
        #expect(try Self.lines(rotated) == [events[0].json(), ""])
        #expect(try Self.lines(path) == [events[1].json(), events[2].json(), ""])
    }

    @Test func fullQueueDropsOldestNonCrashFirst() async throws {
        // A FIFO that is already full and that nobody reads: the sink's first write blocks, and the queue fills.
        let fifo = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: fifo) }
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        let filler = open(fifo, O_WRONLY | O_NONBLOCK)
        try #require(filler >= 0)
        let chunk = [UInt8](repeating: 0x20, count: 4096)
        while write(filler, chunk, chunk.count) > 0 {}
        close(filler)

        let sink = try NDJSONSink(path: fifo, queueCapacity: 3, log: testLog)
        let stuck = TestEvents.tripStart("ana", trip: "stuck")
        await sink.deliver(stuck)
        let end = Date().addingTimeInterval(10)
        while !sink.isWriting && Date() < end { try await Task.sleep(for: .milliseconds(2)) }
        try #require(sink.isWriting)

        let trips = (1...3).map { TestEvents.tripStart("ben", trip: "t\($0)") }
        let crashes = (1...4).map { TestEvents.crash("ana", crash: "c\($0)") }
        for event in trips { await sink.deliver(event) }
        #expect(sink.stats.queued == 4)
        for event in crashes.prefix(3) { await sink.deliver(event) } // each drops the oldest trip
        #expect(sink.stats.droppedForCapacity == 3)
        #expect(sink.stats.queued == 4)
        await sink.deliver(crashes[3]) // nothing left to drop: beyond capacity
        await sink.deliver(TestEvents.tripStart("ana", trip: "late")) // the newcomer is the only droppable one
        #expect(sink.stats.droppedForCapacity == 4)
        #expect(sink.stats.queued == 5)
        #expect(await sink.shutdown(deadline: 0.2) == 5)
        #expect(sink.undeliveredEvents() == [stuck] + crashes)

        // Let the stuck write finish and the sink close its end (EOF) before the read end closes: the writer must
        // never see a pipe without readers (SIGPIPE).
        var scratch = [UInt8](repeating: 0, count: 65536)
        let drained = Date().addingTimeInterval(5)
        while Date() < drained {
            let count = read(reader, &scratch, scratch.count)
            if count == 0 { break }
            if count < 0 { try await Task.sleep(for: .milliseconds(5)) }
        }
    }
}
