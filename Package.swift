// swift-tools-version:6.0
// RoadSave services: the detection pipeline of RoadSaveKit, on Linux.
import PackageDescription

let package = Package(
    name: "RoadSave",
    platforms: [.macOS(.v15)], // Synchronization's Atomic (SystemKit's signal counter)
    products: [
        .executable(name: "roadsave", targets: ["roadsave"]),
        .executable(name: "roadsave-ingest", targets: ["roadsave-ingest"]),
        .executable(name: "roadsave-detect", targets: ["roadsave-detect"]),
        .executable(name: "roadsave-notify", targets: ["roadsave-notify"]),
        // The Swift client library for other packages: `.product(name: "RoadSaveClient", package: "RoadSave")`.
        .library(name: "RoadSaveClient", targets: ["RoadSaveClient"]),
    ],
    targets: [
        // What the rest builds on and that is not about any one library: the one lock (`Locked`), the one monotonic
        // clock, the signal counter. No dependencies.
        .target(name: "SystemKit", path: "Shared/SystemKit"),
        // A progress line on the terminal for long commands (replay, send, simulate, convert), and the status line that
        // log lines are written above. Only SystemKit, so every command's target can use it.
        .target(name: "TerminalProgress", dependencies: ["SystemKit"], path: "Shared/TerminalProgress"),
        // The model: the brief's types (configuration, trips, crashes, events, errors, the delegate), the sensor records,
        // the detection and behaviour settings documents, stable IDs and ISO 8601 times. No dependencies.
        .target(name: "RoadSaveModel", path: "Shared/RoadSaveModel"),
        // The model's JSON: the strict parser and its values, the record scanner, fields and validator (PROTOCOL §2),
        // records and events written as JSON lines, NDJSON files read line by line, the streaming encoder of
        // checkpoints, the identifier cache of record readers. Beside Wire, which uses it for MessagePack.
        .target(name: "RecordCodecs", dependencies: ["RoadSaveModel"], path: "Shared/RecordCodecs"),
        // Structured log lines (logfmt) on standard error, written above the terminal's progress line, and the budget
        // of a noisy source.
        .target(
            name: "Logging", dependencies: ["RoadSaveModel", "RecordCodecs", "TerminalProgress"], path: "Shared/Logging"
        ),
        // Command lines and settings: the option parser, typed settings (flag, environment variable, file key, default),
        // the values given for them and their help.
        .target(name: "CommandSettings", dependencies: ["RoadSaveModel"], path: "Shared/CommandSettings"),
        // Gateway-side code shared by the simulator, the recording converters and `roadsave send`: the impact trigger,
        // the watermark, and which ingest a device's records go to (the device hash of PROTOCOL §1, hence Wire).
        .target(name: "GatewayKit", dependencies: ["RoadSaveModel", "Wire"], path: "Shared/GatewayKit"),

        // C libraries from Debian packages, bound directly (libzmq3-dev, libmsgpack-dev, libsodium-dev).
        .systemLibrary(name: "CZeroMQ", path: "Shared/CZeroMQ"),
        .systemLibrary(name: "CMessagePack", path: "Shared/CMessagePack"),
        .systemLibrary(name: "CSodium", path: "Shared/CSodium"),
        // SQLite from Debian's libsqlite3-dev: the journal, checkpoints and outboxes.
        .systemLibrary(name: "CSQLite", path: "Shared/CSQLite"),
        // zstd from Debian's libzstd-dev: detection's device rows, compressed against a dictionary.
        .systemLibrary(name: "CZstd", path: "Shared/CZstd"),
        // libmicrohttpd: the services' /metrics, /healthz and /readyz (a C shim: its start call is variadic).
        .target(name: "CMicroHTTPD", path: "Shared/CMicroHTTPD", linkerSettings: [.linkedLibrary("microhttpd")]),
        // Prometheus text, health and readiness, served over HTTP by every service.
        .target(name: "Metrics", dependencies: ["CMicroHTTPD", "SystemKit"], path: "Shared/Metrics"),
        // Process control that Glibc's Swift module does not reach (the parent-death signal).
        .target(name: "CProcessControl", path: "Shared/CProcessControl"),
        // SQLite in Swift: one connection per owning thread, prepared statements kept, WAL.
        .target(name: "Storage", dependencies: ["CSQLite"], path: "Shared/Storage"),
        // ZeroMQ in Swift: sockets owned by one reactor thread each.
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ", "SystemKit"], path: "Shared/ZeroMQ"),
        // The wire format between gateways, services and subscribers: MessagePack or JSON bodies, multipart envelopes.
        .target(name: "Wire", dependencies: ["RoadSaveModel", "RecordCodecs", "CMessagePack"], path: "Shared/Wire"),
        // Pull feeds between the services: a consumer asks for the items after a position; nothing can be dropped.
        .target(name: "Feeds", dependencies: ["RoadSaveModel", "Logging", "Wire", "ZeroMQ"], path: "Shared/Feeds"),
        // The client library (a product): `RoadSaveSubscriber` and `RoadSaveGateway`, the engines of `roadsave tail`
        // and `roadsave send`. No service module, no logging: what a package outside this repository links.
        .target(
            name: "RoadSaveClient",
            dependencies: ["RoadSaveModel", "RecordCodecs", "Wire", "ZeroMQ", "GatewayKit", "SystemKit"],
            path: "Shared/RoadSaveClient"),

        // Detection: the pure, deterministic trip and crash engines and the per-device session.
        .target(
            name: "DetectionEngine",
            dependencies: ["RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings", "SystemKit"],
            path: "Services/Detection/Engine"),
        // The RoadSave platform over HTTP (settings and crash evaluation), for the service shells.
        .target(
            name: "PlatformHTTP",
            dependencies: ["RoadSaveModel", "RecordCodecs", "CommandSettings", "DetectionEngine"],
            path: "Services/Detection/PlatformHTTP"),

        // What every service process shares: configuration, signals, the run loop of a service.
        .target(
            name: "ServiceKit",
            dependencies: ["RecordCodecs", "Logging", "CommandSettings", "ZeroMQ", "Metrics", "Feeds", "SystemKit"],
            path: "Shared/ServiceKit"),
        // sensor-ingest: validates, acknowledges and publishes gateways' records.
        .target(
            name: "IngestService",
            dependencies: [
                "RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings", "ServiceKit", "Metrics", "Wire",
                "ZeroMQ",
                "Storage", "Feeds", "SystemKit",
            ],
            path: "Services/Ingest"),
        // detection's service shell around the engines.
        .target(
            name: "DetectionService",
            dependencies: [
                "DetectionEngine", "PlatformHTTP", "RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings",
                "ServiceKit",
                "Metrics", "Wire", "ZeroMQ", "Storage", "Feeds", "CZstd", "SystemKit",
            ],
            path: "Services/Detection/Service"),
        // notifier's service shell around the sinks.
        .target(
            name: "NotifierService",
            dependencies: [
                "NotifierSinks", "RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings", "ServiceKit", "Metrics",
                "Wire", "ZeroMQ", "Storage", "Feeds", "SystemKit",
            ],
            path: "Services/Notifier/Service"),
        // The service commands and the gateway/subscriber/control clients (roadsave ingest|detect|notify|up|send|tail|ctl).
        .target(
            name: "ServiceCommands",
            dependencies: [
                "IngestService", "DetectionService", "NotifierService", "ServiceKit", "Metrics", "Wire", "ZeroMQ",
                "RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings", "CProcessControl", "Storage",
                "TerminalProgress", "GatewayKit", "SystemKit", "RoadSaveClient",
            ],
            path: "Services/Commands"),
        .executableTarget(
            name: "roadsave-ingest", dependencies: ["ServiceCommands"], path: "Services/Executables/Ingest"),
        .executableTarget(
            name: "roadsave-detect", dependencies: ["ServiceCommands"], path: "Services/Executables/Detect"),
        .executableTarget(
            name: "roadsave-notify", dependencies: ["ServiceCommands"], path: "Services/Executables/Notify"),

        // Notifier: the sinks that deliver events (ZeroMQ PUB, webhooks, NDJSON).
        .target(
            name: "NotifierSinks",
            dependencies: ["RoadSaveModel", "RecordCodecs", "Logging", "CSodium", "ZeroMQ", "Wire", "SystemKit"],
            path: "Services/Notifier/Sinks"),

        // Replay: the engines over a recorded file (NDJSON or MessagePack), in one process.
        .target(
            name: "Replay",
            dependencies: [
                "RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings", "DetectionEngine", "PlatformHTTP",
                "Wire",
                "TerminalProgress",
            ],
            path: "Services/Replay"),
        // Reports: the engines over a recording, drawn (HTML with inline SVG) and as GeoJSON.
        .target(
            name: "Report",
            dependencies: [
                "RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings", "DetectionEngine", "PlatformHTTP",
                "Replay",
                "Wire",
            ],
            path: "Services/Report"),
        // Simulation: realistic record streams from a seed.
        .target(name: "Simulator", dependencies: ["GatewayKit", "TerminalProgress"], path: "Services/Simulator"),
        // Converters from the real recordings in ../shared/data to NDJSON records.
        .target(
            name: "Recordings",
            dependencies: ["GatewayKit", "RoadSaveModel", "RecordCodecs", "Logging", "Wire", "TerminalProgress"],
            path: "Services/Recordings"),

        .executableTarget(
            name: "roadsave",
            dependencies: [
                "DetectionEngine", "PlatformHTTP", "Replay", "Report", "Simulator", "Recordings", "ServiceCommands",
            ],
            path: "Services/CLI"),

        // The benchmark behind `make bench`, and the work counters of its paths (`counts`: ingest's batch and
        // detection's feed reply, hence the two services' libraries).
        .executableTarget(
            name: "roadsave-bench",
            dependencies: [
                "RoadSaveModel", "RecordCodecs", "Logging", "DetectionEngine", "Replay", "Wire", "ZeroMQ",
                "CMessagePack", "IngestService", "DetectionService", "Feeds",
            ],
            path: "Services/Bench"),

        // What the test targets share: child processes with their outputs, free ports, the built executables, waits
        // with a hang bound, key folders made by `roadsave keygen`, a test's seed. A library for test targets only.
        .target(name: "RoadSaveTestKit", dependencies: ["SystemKit"], path: "Tests/RoadSaveTestKit"),

        .testTarget(name: "SystemKitTests", dependencies: ["SystemKit"], path: "Tests/SystemKitTests"),
        .testTarget(
            name: "TerminalProgressTests", dependencies: ["TerminalProgress"], path: "Tests/TerminalProgressTests"),
        .testTarget(
            name: "GatewayKitTests", dependencies: ["GatewayKit", "RoadSaveModel"], path: "Tests/GatewayKitTests"),
        .testTarget(name: "MetricsTests", dependencies: ["Metrics"], path: "Tests/MetricsTests"),
        .testTarget(
            name: "ServiceKitTests", dependencies: ["ServiceKit", "CommandSettings"], path: "Tests/ServiceKitTests"),
        .testTarget(
            name: "DetectionServiceTests",
            dependencies: [
                "DetectionService", "DetectionEngine", "IngestService", "CommandSettings", "RoadSaveModel",
                "RecordCodecs", "Logging", "Wire", "ZeroMQ", "Storage", "Feeds", "SystemKit",
            ],
            path: "Tests/DetectionServiceTests"),
        .testTarget(name: "StorageTests", dependencies: ["Storage"], path: "Tests/StorageTests"),
        .testTarget(
            name: "FeedTests",
            dependencies: ["Feeds", "Wire", "ZeroMQ", "RoadSaveModel", "RecordCodecs", "Logging", "RoadSaveTestKit"],
            path: "Tests/FeedTests"),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "IngestService", "Storage", "Feeds", "Wire", "ZeroMQ", "RoadSaveModel", "RecordCodecs", "Logging",
                "CommandSettings", "SystemKit", "GatewayKit",
            ],
            path: "Tests/IngestTests"),
        .testTarget(
            name: "NotifierTests",
            dependencies: [
                "NotifierService", "NotifierSinks", "Storage", "Feeds", "Wire", "ZeroMQ", "RoadSaveModel",
                "RecordCodecs", "Logging", "CommandSettings", "ServiceKit", "SystemKit", "RoadSaveTestKit",
            ],
            path: "Tests/NotifierTests"),
        .testTarget(
            name: "ZeroMQTests", dependencies: ["ZeroMQ", "SystemKit", "RoadSaveTestKit"], path: "Tests/ZeroMQTests"),
        .testTarget(
            name: "WireTests", dependencies: ["Wire", "RoadSaveModel", "RecordCodecs"], path: "Tests/WireTests"),
        .testTarget(
            name: "NotifierSinkTests",
            dependencies: ["NotifierSinks", "RoadSaveModel", "RecordCodecs", "Logging", "ZeroMQ", "Wire"],
            path: "Tests/NotifierSinkTests", exclude: ["Support/webhook_receiver.py"]),
        .testTarget(
            name: "ModelTests",
            dependencies: ["RoadSaveModel", "RecordCodecs", "Logging", "CommandSettings", "GatewayKit"],
            path: "Tests/ModelTests"),
        .testTarget(
            name: "EngineTests",
            dependencies: ["RoadSaveModel", "Logging", "RecordCodecs", "DetectionEngine", "GatewayKit"],
            path: "Tests/EngineTests"),
        .testTarget(
            name: "SimulatorTests", dependencies: ["Simulator", "RoadSaveModel", "RecordCodecs"],
            path: "Tests/SimulatorTests"),
        .testTarget(
            name: "RecordingConverterTests", dependencies: ["Recordings", "RoadSaveModel", "RecordCodecs"],
            path: "Tests/RecordingConverterTests"),
        .testTarget(
            name: "RecordingTests",
            dependencies: [
                "Recordings", "RoadSaveModel", "RecordCodecs", "Logging", "DetectionEngine", "Replay", "GatewayKit",
            ],
            path: "Tests/RecordingTests"),
        // The report's pieces: projection, thinning, escaping, the events file, GeoJSON, what is counted and drawn.
        .testTarget(
            name: "ReportTests",
            dependencies: ["Report", "RoadSaveModel", "RecordCodecs", "DetectionEngine", "GatewayKit"],
            path: "Tests/ReportTests"),
        // The replay path over simulated fleets, against the simulator's ground truth.
        .testTarget(
            name: "PipelineTests",
            dependencies: [
                "Simulator", "Replay", "DetectionEngine", "RoadSaveModel", "RecordCodecs", "Logging", "Wire",
            ],
            path: "Tests/PipelineTests"),
        // The gateway, subscriber, control and supervisor commands against real services.
        .testTarget(
            name: "CommandTests",
            dependencies: [
                "roadsave", "ServiceCommands", "Wire", "RoadSaveModel", "RecordCodecs", "Storage", "Recordings",
                "RoadSaveTestKit", "IngestService", "DetectionService", "NotifierService", "CommandSettings",
            ],
            path: "Tests/CommandTests"),
        // The client library against the services as processes over real ZeroMQ on loopback (resuming, restarts, key
        // reloads, refusals), and its values (the catch-up plan, filters).
        .testTarget(
            name: "ClientTests",
            dependencies: [
                "RoadSaveClient", "roadsave", "roadsave-ingest", "roadsave-detect", "roadsave-notify",
                "RoadSaveTestKit",
            ],
            path: "Tests/ClientTests"),
        // The three services as separate processes on loopback, driven by clients that are not the project's code
        // (Python with pyzmq and msgpack); also the container files checked against the executables.
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "roadsave", "roadsave-ingest", "roadsave-detect", "roadsave-notify", "RoadSaveTestKit",
                "GatewayKit",
            ],
            path: "Tests/IntegrationTests", exclude: ["Support"]),
        // End-to-end tests run the built `roadsave` as a separate process (the dependency makes SwiftPM build it).
        .testTarget(
            name: "CLITests", dependencies: ["roadsave", "RoadSaveTestKit"], path: "Tests/CLITests",
            exclude: ["Fixtures", "Support/stub_platform.py"]),
    ],
    swiftLanguageModes: [.v6]
)
