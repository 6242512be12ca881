import ServiceKit
import Testing

@testable import DetectionService

/// `--shard` and `--shard-base` as detection reads them: an orchestrator names a replica by a slot that may count
/// from 1 (Docker Swarm's `{{.Task.Slot}}`), while shards count from 0 everywhere else.
struct ShardSettingTests {
    static func load(_ arguments: [String], environment: [String: String] = [:]) throws -> DetectionConfiguration {
        let source = try ServiceConfiguration(
            specs: DetectionConfiguration.specs,
            arguments: [
                "--records-endpoint", "tcp://127.0.0.1:5551", "--control-endpoint",
                "tcp://127.0.0.1:5552", "--events-endpoint", "tcp://127.0.0.1:5553",
            ]
                + arguments,
            environment: environment)
        return try DetectionConfiguration.load(source)
    }

    /// Why `arguments` are refused (nil when they are not).
    static func refusal(_ arguments: [String]) -> String? {
        do {
            _ = try load(arguments)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func shardsCountFromZeroByDefault() throws {
        let first = try Self.load(["--shard", "0/2"])
        #expect(first.shard?.index == 0 && first.shard?.count == 2)
        #expect(try Self.load(["--shard", "1/2"]).shardDescription == "1/2")
        #expect(Self.refusal(["--shard", "2/2"])?.contains("--shard") == true)
        #expect(try Self.load([]).shard == nil)
    }

    @Test func aSlotCountingFromOneNamesTheSameShards() throws {
        let slot1 = try Self.load(["--shard", "1/2", "--shard-base", "1"])
        #expect(slot1.shardDescription == "0/2")
        let slot2 = try Self.load([], environment: ["ROADSAVE_SHARD": "2/2", "ROADSAVE_SHARD_BASE": "1"])
        #expect(slot2.shardDescription == "1/2")
        #expect(Self.refusal(["--shard", "0/2", "--shard-base", "1"])?.contains("--shard") == true)
        #expect(Self.refusal(["--shard", "3/2", "--shard-base", "1"])?.contains("--shard") == true)
        #expect(Self.refusal(["--shard", "1/2", "--shard-base", "2"])?.contains("--shard") == true)
    }
}
