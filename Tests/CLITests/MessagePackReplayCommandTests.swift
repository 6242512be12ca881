import Foundation
import RoadSaveTestKit
import Testing

/// `roadsave simulate` writing MessagePack and `roadsave replay` reading it, as separate processes.
@Suite(.serialized) struct MessagePackReplayCommandTests {
    func simulated(_ suffix: String, _ extra: String...) async throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-test-\(UUID().uuidString)\(suffix)")
        let result = try await ChildProcess.run(
            Executables.roadsave,
            [
                "simulate", "--devices", "4", "--duration", "12",
                "--crashes", "1", "--seed", "3", "--output", url.path,
            ]
                + extra, limit: 300)
        #expect(result.status == 0, "\(result.stderr)")
        return url
    }

    @Test func aMessagePackFileReplaysToTheSameEventsAsItsNDJSON() async throws {
        let ndjson = try await simulated(".ndjson")
        let msgpack = try await simulated(".msgpack")
        let forced = try await simulated(".bin", "--output-format", "msgpack")
        defer { for url in [ndjson, msgpack, forced] { try? FileManager.default.removeItem(at: url) } }
        let bytes = try Data(contentsOf: msgpack)
        #expect(bytes.first.map { $0 & 0xF0 == 0x80 } == true, "a MessagePack map comes first")
        #expect(try Data(contentsOf: forced) == bytes)

        let fromJSON = try await Processes.roadsave("replay", ndjson.path)
        let fromMessagePack = try await Processes.roadsave("replay", msgpack.path)
        let fromOption = try await Processes.roadsave("replay", forced.path, "--input-format", "msgpack")
        let fromStandardInput = try await Processes.roadsave("replay", "-", "--input-format", "msgpack", input: bytes)
        #expect(fromJSON.status == 0 && fromMessagePack.status == 0 && fromOption.status == 0)
        #expect(fromStandardInput.status == 0)
        #expect(fromJSON.stdout.contains("crashDetected"))
        #expect(fromMessagePack.stdout == fromJSON.stdout)
        #expect(fromOption.stdout == fromJSON.stdout)
        #expect(fromStandardInput.stdout == fromJSON.stdout)
        #expect(fromMessagePack.stderr.contains("invalid=0"))
    }

    @Test func aTruncatedMessagePackFileReplaysWhatCameBeforeAndSaysSo() async throws {
        let msgpack = try await simulated(".msgpack")
        defer { try? FileManager.default.removeItem(at: msgpack) }
        let bytes = try Data(contentsOf: msgpack)
        let result = try await Processes.roadsave("replay", "-", "--input-format", "msgpack", input: bytes.dropLast(7))
        #expect(result.status == 1)
        #expect(result.stderr.contains("truncated") && result.stderr.contains("ends inside record"))
        #expect(result.stdout.contains("tripDidStart"))
    }

    @Test func badFormatsAreUsageErrors() async throws {
        let replay = try await Processes.roadsave("replay", "x.ndjson", "--input-format", "xml")
        #expect(replay.status == 2 && replay.stderr.contains("--input-format"))
        let simulate = try await Processes.roadsave("simulate", "--output-format", "xml")
        #expect(simulate.status == 2 && simulate.stderr.contains("--output-format"))
        let help = try await Processes.roadsave("replay", "--help")
        #expect(help.stdout.contains("--input-format"))
    }
}
