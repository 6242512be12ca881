import Foundation

/// The seed of a randomised test: `ROADSAVE_TEST_SEED` when set (to replay a failing run), else a new one, which the
/// test prints. The draws come from GatewayKit's `SplitMix64`, the project's one seeded generator.
public enum TestSeed {
    public static func make() -> UInt64 {
        ProcessInfo.processInfo.environment["ROADSAVE_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
    }
}
