import RoadSaveModel
import Testing

@Suite("StableID")
struct StableIDTests {
    /// 8-4-4-4-12 lowercase hex, version nibble 8, RFC 9562 variant (8, 9, a or b).
    func expectUUIDShaped(_ id: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let groups = id.split(separator: "-", omittingEmptySubsequences: false)
        #expect(groups.map(\.count) == [8, 4, 4, 4, 12], "\(id)", sourceLocation: sourceLocation)
        #expect(id.allSatisfy { "0123456789abcdef-".contains($0) }, "\(id)", sourceLocation: sourceLocation)
        guard groups.count == 5 else { return }
        #expect(groups[2].first == "8", "version nibble of \(id)", sourceLocation: sourceLocation)
        #expect(groups[3].first.map { "89ab".contains($0) } == true, "variant of \(id)", sourceLocation: sourceLocation)
    }

    @Test func isUUIDShaped() {
        expectUUIDShaped(StableID.make("event", "crashDetected", "app-1", "user-9", "crash-1"))
        expectUUIDShaped(StableID.make())
        expectUUIDShaped(StableID.make(""))
        expectUUIDShaped(StableID.make("Zürich", "😀", String(repeating: "x", count: 10_000)))
    }

    @Test func manyIDsAreAllUUIDShaped() {
        for index in 0..<2000 {
            expectUUIDShaped(StableID.make("trip", "app", "user-\(index)"))
        }
    }

    @Test func isDeterministic() {
        #expect(
            StableID.make("trip", "app-1", "user-9", "1772433065.123")
                == StableID.make("trip", "app-1", "user-9", "1772433065.123"))
    }

    @Test func isStableAcrossProcessesAndReleases() {
        // Computed with an independent Python implementation of the documented algorithm (two FNV-1a 64 hashes,
        // 0xFF after each part, SplitMix64 finish, version 8 / variant bits). A change here changes every eventID
        // and breaks deduplication by receivers across an upgrade.
        #expect(
            StableID.make("event", "crashDetected", "app-1", "user-9", "crash-1")
                == "a81e74a4-0a3b-8cde-b743-bd93b8bf54ac")
        #expect(StableID.make() == "c3817c01-6ba4-8f30-b966-29ca11a0b2c9")
        #expect(StableID.make("a") == "27a869c1-1dac-8d56-a3c5-9d4f5c52ca13")
    }

    @Test func differsWhenThePartBoundaryMoves() {
        #expect(StableID.make("ab", "c") != StableID.make("a", "bc"))
        #expect(StableID.make("a", "") != StableID.make("", "a"))
        #expect(StableID.make("a") != StableID.make("a", ""))
        #expect(StableID.make() != StableID.make(""))
        #expect(StableID.make("ab") != StableID.make("a", "b"))
    }

    @Test func differsForDifferentInputs() {
        var seen = Set<String>()
        for index in 0..<5000 {
            seen.insert(StableID.make("crash", "app-1", "user-\(index % 50)", String(index / 50)))
        }
        #expect(seen.count == 5000)
    }

    @Test func differsInBothHalves() {
        // Neighbouring inputs must not share the first or the last half (both hashes must depend on every byte).
        let a = StableID.make("trip", "app-1", "user-1")
        let b = StableID.make("trip", "app-1", "user-2")
        #expect(a.prefix(18) != b.prefix(18))
        #expect(a.suffix(17) != b.suffix(17))
    }

    @Test func orderOfPartsMatters() {
        #expect(StableID.make("a", "b") != StableID.make("b", "a"))
    }
}
