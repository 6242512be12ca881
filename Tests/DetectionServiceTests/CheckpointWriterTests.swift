import Foundation
import RoadSaveModel
import Testing

@testable import DetectionService

/// Checkpoints written off the reactor thread: in the order started, an older one superseded before its turn is not
/// written (it would put states older than the newer checkpoint's back), and the reactor's own file is not held up.
@Suite struct CheckpointWriterTests {
    let directory: String

    init() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("rs-writer-\(UUID().uuidString.prefix(8))")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    static let device = DeviceID(app: "app-1", user: "a")

    static func checkpoint(_ input: Int64, state: String) -> CheckpointWriter.Checkpoint {
        CheckpointWriter.Checkpoint(
            input: input, shared: [], changedDevices: [(device, Array(state.utf8))],
            positions: ["journal": UInt64(input)], time: 0)
    }

    /// Released by the test: the writer's thread waits in `make` until then.
    final class Gate: @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let open = DispatchSemaphore(value: 0)
    }

    @Test func aCheckpointSupersededBeforeItsTurnIsNotWrittenAndOneBeingWrittenFinishesFirst() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DetectionStore(directory: directory, shard: "all")
        defer { store.close() }
        let writer = store.checkpoints
        let outcomes = Outcomes()
        // 1 is being encoded (held), 2 waits for its turn; then a stop takes 3 at once.
        let gate = Gate()
        writer.started(1)
        writer.write(
            1,
            {
                gate.entered.signal()
                gate.open.wait()
                return Self.checkpoint(1, state: "one")
            }, done: { outcomes.add(1, $0) })
        gate.entered.wait()
        writer.started(2)
        writer.write(2, { Self.checkpoint(2, state: "two") }, done: { outcomes.add(2, $0) })
        // Meanwhile the reactor's file takes commits (it is another file: no wait for the writer's lock).
        #expect(try store.commit(inputs: [.tick(now: 1)], events: [], at: 1) == 1)
        writer.started(3)
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = writer.writeAndWait(3) { Self.checkpoint(3, state: "three") }
            stopped.signal()
        }
        #expect(
            stopped.wait(timeout: .now() + 0.3) == .timedOut, "the stop's checkpoint waits for the one being written")
        gate.open.signal()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(outcomes.list.map(\.generation) == [1, 2])
        #expect(outcomes.list[0].written == true, "the one being written when 3 started is finished")
        #expect(outcomes.list[1].written == nil, "2 was superseded before its turn")
        let checkpoint = try #require(try store.loadCheckpoint())
        #expect(checkpoint.input == 3 && checkpoint.positions == ["journal": 3])
        #expect(checkpoint.devices.map { String(decoding: $0.1, as: UTF8.self) } == ["three"])
    }

    final class Outcomes: @unchecked Sendable {
        private let lock = NSLock()
        private var all: [(generation: Int, written: Bool?)] = []
        func add(_ generation: Int, _ outcome: Result<CheckpointWriter.Timing, any Error>?) {
            lock.withLock { all.append((generation, outcome.map { (try? $0.get()) != nil })) }
        }
        var list: [(generation: Int, written: Bool?)] { lock.withLock { all } }
    }
}
