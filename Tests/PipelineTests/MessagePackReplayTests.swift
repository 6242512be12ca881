import DetectionEngine
import Foundation
import Logging
import RecordCodecs
import Replay
import Simulator
import Testing
import Wire

/// Replay from MessagePack: a simulated fleet written as NDJSON and as MessagePack replays to the same events, in
/// the same order, byte for byte; and the synchronous feeding gives what the per-record async feeding gave.
@Suite struct MessagePackReplayTests {
    final class Box: @unchecked Sendable { var lines: [String] = [] }

    static let options = SimulationOptions(devices: 8, seed: 11, durationMinutes: 25, crashes: 2, disorder: true)

    func write(_ format: RecordOutputFormat) throws -> String {
        // A name of its own per call: the tests of this suite run in parallel and each deletes its files.
        let path = NSTemporaryDirectory() + "msgpack-replay-\(UUID().uuidString).\(format.rawValue)"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        _ = try simulate(Self.options, toFileDescriptor: descriptor, format: format)
        return path
    }

    func replayFile(_ path: String, _ format: RecordFileFormat) async throws -> (
        events: [String], summary: Replayer.Summary
    ) {
        let box = Box()
        let replayer = Replayer(platform: EmbeddedPlatform(), log: Log(category: "test", minimumLevel: .error)) {
            box.lines.append($0.json())
        }
        let reader = try RecordFileReader(path: path, format: format)
        await ReplayCommand.replay(reader, into: replayer)
        await replayer.finish()
        #expect(reader.failure == nil)
        return (box.lines, replayer.summary)
    }

    @Test func simulateToMessagePackReplaysToTheSameEventsAsNDJSON() async throws {
        let ndjson = try write(.ndjson)
        let msgpack = try write(.msgpack)
        defer {
            unlink(ndjson)
            unlink(msgpack)
        }
        let fromJSON = try await replayFile(ndjson, .ndjson)
        let fromMessagePack = try await replayFile(msgpack, .msgpack)
        #expect(fromJSON.events.count > 5)
        #expect(fromJSON.events.contains { $0.contains("crashDetected") })
        #expect(fromJSON.events == fromMessagePack.events)
        #expect(fromJSON.summary == fromMessagePack.summary)
        #expect(fromJSON.summary.invalid == 0 && fromJSON.summary.duplicates > 0)
    }

    @Test func theSynchronousLoopGivesWhatFeedingLineByLineGave() async throws {
        let ndjson = try write(.ndjson)
        defer { unlink(ndjson) }
        let fromFile = try await replayFile(ndjson, .ndjson)
        let box = Box()
        let replayer = Replayer(platform: EmbeddedPlatform(), log: Log(category: "test", minimumLevel: .error)) {
            box.lines.append($0.json())
        }
        let text = try String(contentsOfFile: ndjson, encoding: .utf8)
        for (index, line) in text.split(separator: "\n").enumerated() {
            await replayer.feed(line: Array(line.utf8), number: index + 1)
            if index % 2000 == 0 { await Task.yield() }
        }
        await replayer.finish()
        #expect(box.lines == fromFile.events)
        #expect(replayer.summary == fromFile.summary)
    }
}
