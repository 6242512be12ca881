import Foundation

/// Where the checkout's folders are, found from this file (`Tests/RoadSaveTestKit/TestPaths.swift`), so that tests
/// reach their fixtures and helper scripts whatever folder they are run from.
public enum TestPaths {
    /// The repository root.
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `Tests/`.
    public static let tests = repository.appendingPathComponent("Tests")

    /// A test target's folder, `Tests/NAME`.
    public static func target(_ name: String) -> URL { tests.appendingPathComponent(name) }
}
