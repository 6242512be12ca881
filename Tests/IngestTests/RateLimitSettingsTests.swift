import CommandSettings
import ServiceKit
import Testing

@testable import IngestService

/// `--rate-limit`, `--rate-burst` and `--device-idle-age` as ingest reads them.
struct RateLimitSettingsTests {
    /// The settings from `arguments`, with loopback gateway and records endpoints unless `endpoint` says otherwise for
    /// the gateway (nil: the default, every interface).
    static func load(
        _ arguments: [String], endpoint: String? = "tcp://127.0.0.1:5550",
        environment: [String: String] = [:]
    ) throws -> IngestConfiguration {
        let source = try ServiceConfiguration(
            specs: IngestConfiguration.specs,
            arguments: ["--applications", "app-1", "--records-endpoint", "tcp://127.0.0.1:5551"]
                + arguments
                + (endpoint.map { ["--gateway-endpoint", $0] } ?? []),
            environment: environment)
        return try IngestConfiguration.load(source)
    }

    @Test func noLimitOnLoopbackAndAGenerousOneOnAnAddressOthersReach() throws {
        // Loopback is development, tests and benchmarks (`roadsave up`, scripts/bench_services.py): no limit.
        #expect(try Self.load([]).rateLimit == 0)
        #expect(try Self.load([], endpoint: "ipc:///tmp/gw").rateLimit == 0)
        // The default endpoint binds every interface.
        let everywhere = try Self.load(["--insecure"], endpoint: nil)
        #expect(everywhere.rateLimit == IngestConfiguration.defaultRateLimit)
        let exposed = try Self.load(["--insecure"], endpoint: "tcp://0.0.0.0:5550")
        #expect(exposed.rateLimit == IngestConfiguration.defaultRateLimit && exposed.rateBurst == exposed.rateLimit)
        #expect(exposed.rateLimit >= 100_000)
        let off = try Self.load(
            ["--insecure"], endpoint: "tcp://0.0.0.0:5550", environment: ["ROADSAVE_RATE_LIMIT": "0"])
        #expect(off.rateLimit == 0)
    }

    @Test func theBurstDefaultsToOneSecondsWorthAndNeedsALimit() throws {
        let set = try Self.load(["--rate-limit", "250.5"])
        #expect(set.rateLimit == 250.5 && set.rateBurst == 251)
        let burst = try Self.load(["--rate-limit", "100", "--rate-burst", "5000"])
        #expect(burst.rateBurst == 5000)
        #expect(throws: CommandLineOptions.UsageError.self) { try Self.load(["--rate-burst", "10"]) }
        #expect(throws: CommandLineOptions.UsageError.self) { try Self.load(["--rate-limit", "-1"]) }
        #expect(throws: CommandLineOptions.UsageError.self) {
            try Self.load(["--rate-limit", "10", "--rate-burst", "0"])
        }
    }

    @Test func deviceSlotsAreFreedAfterThirtyIdleDaysUnlessSetOtherwise() throws {
        #expect(try Self.load([]).deviceIdleAge == 30 * 86_400)
        #expect(try Self.load(["--device-idle-age", "0"]).deviceIdleAge == 0)
        #expect(throws: CommandLineOptions.UsageError.self) { try Self.load(["--device-idle-age", "-5"]) }
    }
}
