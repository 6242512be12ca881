// swift-tools-version:6.0
// An alerting service and a minimal gateway built on RoadSave's client library, as a package outside the repository
// would be: it depends on RoadSave by path here (`.package(url: "…/RoadSave.git", from: "…")` elsewhere). The name:
// a path dependency is known by its folder's name, which a checkout or worktree may choose; `name:` fixes it to the
// one `.product(name:package:)` uses.
import PackageDescription

let package = Package(
    name: "AlertingService",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "RoadSave", path: "../..")],
    targets: [
        // The crash alerts of docs/subscribers.md: a RoadSaveDelegate told of every crash and its follow-up.
        .executableTarget(
            name: "alerting-service", dependencies: [.product(name: "RoadSaveClient", package: "RoadSave")],
            path: "Sources/AlertingService"),
        // A gateway that sends a recording (NDJSON records) and waits for every acknowledgement.
        .executableTarget(
            name: "recording-gateway", dependencies: [.product(name: "RoadSaveClient", package: "RoadSave")],
            path: "Sources/RecordingGateway"),
    ],
    swiftLanguageModes: [.v6]
)
