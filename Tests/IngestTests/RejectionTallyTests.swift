import Testing
import Wire

@testable import IngestService

@Suite("Rejections counted for /metrics")
struct RejectionTallyTests {
    @Test func reasonsOfTheValidatorFallIntoFixedKinds() {
        let kinds: [(String, String)] = [
            ("missing", "missing"),
            ("91.0 is outside -90…90", "out_of_range"),
            ("must be an integer ≥ 0, got -3", "out_of_range"),
            ("longer than 128 bytes", "out_of_range"),
            ("expected a number, found string", "wrong_type"),
            ("unknown kind \"teleport\"; expected one of location, activity", "unknown_value"),
            ("unknown application", "unknown_application"),
            ("gateway key \"gw-1\" is not allowed to send records of this application", "not_allowed"),
            (
                "a new device of an application that already has 5 devices (at most 5, --max-devices-per-app)",
                "device_limit"
            ),
            ("string is not valid UTF-8", "malformed"),
            ("something new", "invalid"),
        ]
        for (reason, kind) in kinds {
            #expect(RejectionTally.kind(of: reason) == kind, "\(reason)")
        }
    }

    @Test func fieldsLoseTheirIndexes() {
        #expect(RejectionTally.field("samples[12]") == "samples[]")
        #expect(RejectionTally.field("lat") == "lat")
    }

    @Test func countsByFieldAndKindWithABoundOnSeries() {
        var tally = RejectionTally()
        tally.count(Rejection(index: 0, field: "lat", reason: "91 is outside -90…90"))
        tally.count(Rejection(index: 4, field: "lat", reason: "-91 is outside -90…90"))
        tally.count(Rejection(index: 5, field: "user", reason: "missing"))
        #expect(tally.counts[.init(field: "lat", reason: "out_of_range")] == 2)
        #expect(tally.counts[.init(field: "user", reason: "missing")] == 1)
        for index in 0..<(RejectionTally.maximumSeries * 2) {
            tally.count(Rejection(index: index, field: "f\(index)", reason: "missing"))
        }
        #expect(tally.counts.count == RejectionTally.maximumSeries + 1)
        #expect(
            tally.counts[.init(field: "other", reason: "missing")] == RejectionTally.maximumSeries * 2
                - (RejectionTally.maximumSeries - 2))
    }
}
