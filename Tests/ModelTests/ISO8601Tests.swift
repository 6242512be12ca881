import Foundation
import RoadSaveModel
import Testing

// Expected instants are computed by hand, with the day arithmetic in the comments:
// days from 1970-01-01 = 365 × years + leap days in between + days into the year.
enum Instants {
    /// 2026-03-02: 56 years × 365 + 14 leap days (1972…2024) = 20454; + 31 (Jan) + 28 (Feb) + 1 = 20514 days.
    /// 20514 × 86400 = 1772409600; + 06:31:05 (23465 s) = 1772433065.
    static let march2nd2026At063105 = 1_772_433_065.0
    static let march2nd2026Midnight = 1_772_409_600.0
    /// 2024-02-29: 54 × 365 + 13 leap days (1972…2020) = 19723; + 31 + 28 = 19782 days → 1709164800.
    static let leapDay2024 = 1_709_164_800.0
    /// 2100-01-01: 130 × 365 + 32 leap days (1972…2096, 2000 included) = 47482 days → 4102444800.
    static let year2100 = 4_102_444_800.0
    /// 2100-03-01: 47482 + 31 + 28 (2100 is not a leap year) = 47541 days → 4107542400.
    static let march1st2100 = 4_107_542_400.0
}

@Suite("ISO8601: formatting")
struct ISO8601FormattingTests {
    static let instantsAndTexts: [(Double, String)] = [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (Instants.march2nd2026At063105 + 0.123, "2026-03-02T06:31:05.123Z"),
        (Instants.march2nd2026At063105 + 0.5, "2026-03-02T06:31:05.500Z"),
        (Instants.march2nd2026Midnight, "2026-03-02T00:00:00.000Z"),
        (Instants.leapDay2024, "2024-02-29T00:00:00.000Z"),
        (Instants.leapDay2024 - 0.001, "2024-02-28T23:59:59.999Z"),
        (Instants.leapDay2024 + 86_400, "2024-03-01T00:00:00.000Z"),
        (Instants.leapDay2024 + 86_399.999, "2024-02-29T23:59:59.999Z"),
        (946_684_800, "2000-01-01T00:00:00.000Z"),
        (951_782_400, "2000-02-29T00:00:00.000Z"), // 946684800 + (31 + 28) × 86400: 2000 is a leap year
        (Instants.year2100, "2100-01-01T00:00:00.000Z"),
        (Instants.year2100 - 0.001, "2099-12-31T23:59:59.999Z"),
        (Instants.march1st2100 - 86_400, "2100-02-28T00:00:00.000Z"),
        (Instants.march1st2100, "2100-03-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.000Z"),
        (-0.001, "1969-12-31T23:59:59.999Z"),
        (-86_400, "1969-12-31T00:00:00.000Z"),
    ]

    @Test(arguments: instantsAndTexts)
    func knownInstants(seconds: Double, expected: String) {
        #expect(ISO8601.string(fromSeconds: seconds) == expected)
    }

    @Test func halfMillisecondAtTheEndOfADayCarriesIntoTheNextDay() {
        // The double nearest to 1772409599.9995 is 1772409599.99950003…, just above the half millisecond, so the
        // nearest millisecond is the next day's midnight (carrying through seconds, minutes, hours and the date).
        #expect(ISO8601.string(fromSeconds: Instants.march2nd2026Midnight - 0.0005) == "2026-03-02T00:00:00.000Z")
        #expect(ISO8601.string(fromSeconds: 1_772_409_599.9995) == "2026-03-02T00:00:00.000Z")
        #expect(ISO8601.string(fromSeconds: 1_772_409_599.9994) == "2026-03-01T23:59:59.999Z")
        #expect(ISO8601.string(fromSeconds: 1_772_409_599.99951) == "2026-03-02T00:00:00.000Z")
    }

    @Test func halfMillisecondAtTheEndOfAYearCarriesIntoTheNextYear() {
        #expect(ISO8601.string(fromSeconds: Instants.year2100 - 0.0004) == "2100-01-01T00:00:00.000Z")
        #expect(ISO8601.string(fromSeconds: Instants.year2100 - 0.0006) == "2099-12-31T23:59:59.999Z")
    }

    @Test func wholeSecondsAgreeWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        // About 1500 instants spread over 1970…2100, at odd times of day.
        var seconds: Int64 = 0
        while seconds < 4_107_542_400 {
            let foundation = formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
            let expected = foundation.replacingOccurrences(of: "Z", with: ".000Z")
            #expect(ISO8601.string(fromSeconds: Double(seconds)) == expected)
            seconds += 2_739_613 // 31 days, 16 h, 0 min, 13 s
        }
    }
}

@Suite("ISO8601: parsing")
struct ISO8601ParsingTests {
    func expectSeconds(_ text: String, _ expected: Double, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let seconds = ISO8601.seconds(from: text) else {
            Issue.record("\(text) was not parsed", sourceLocation: sourceLocation)
            return
        }
        #expect(
            abs(seconds - expected) < 1e-6, "\(text) → \(seconds), expected \(expected)",
            sourceLocation: sourceLocation)
    }

    @Test func utcWithMilliseconds() {
        expectSeconds("2026-03-02T06:31:05.123Z", Instants.march2nd2026At063105 + 0.123)
    }

    @Test func utcWithoutFraction() {
        expectSeconds("2026-03-02T06:31:05Z", Instants.march2nd2026At063105)
        expectSeconds("1970-01-01T00:00:00Z", 0)
    }

    @Test func longerFractions() {
        expectSeconds("2026-03-02T06:31:05.1Z", Instants.march2nd2026At063105 + 0.1)
        expectSeconds("2026-03-02T06:31:05.123456Z", Instants.march2nd2026At063105 + 0.123456)
    }

    @Test func positiveOffset() {
        // 08:31:05 at +02:00 is 06:31:05 UTC.
        expectSeconds("2026-03-02T08:31:05.123+02:00", Instants.march2nd2026At063105 + 0.123)
    }

    @Test func negativeOffsetWithMinutes() {
        // 01:01:05 at -05:30 is 06:31:05 UTC.
        expectSeconds("2026-03-02T01:01:05.123-05:30", Instants.march2nd2026At063105 + 0.123)
    }

    @Test func offsetCrossingMidnightAndMonth() {
        // 2026-03-01T23:30:00-01:00 is 2026-03-02T00:30:00Z.
        expectSeconds("2026-03-01T23:30:00-01:00", Instants.march2nd2026Midnight + 1800)
        expectSeconds("2026-03-02T00:00:00+00:00", Instants.march2nd2026Midnight)
    }

    @Test func leapDays() {
        expectSeconds("2024-02-29T00:00:00Z", Instants.leapDay2024)
        expectSeconds("2100-03-01T00:00:00.000Z", Instants.march1st2100)
    }

    @Test func spaceInsteadOfTIsAccepted() {
        // Documented behaviour: RFC 3339 allows a space between date and time.
        expectSeconds("2026-03-02 06:31:05Z", Instants.march2nd2026At063105)
    }

    @Test func offsetsAgreeWithFoundation() throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        for text in [
            "2026-03-02T08:31:05+02:00", "2026-03-02T01:01:05-05:30", "1999-12-31T23:59:59+14:00",
            "2024-02-29T12:00:00-12:00", "2087-07-04T04:05:06Z",
        ] {
            let date = try #require(formatter.date(from: text), "Foundation could not parse \(text)")
            expectSeconds(text, date.timeIntervalSince1970)
        }
    }

    @Test func roundTripsFormattedMilliseconds() {
        var milliseconds: Int64 = 946_684_800_000
        while milliseconds < 4_102_444_800_000 {
            let seconds = Double(milliseconds) / 1000
            let text = ISO8601.string(fromSeconds: seconds)
            guard let parsed = ISO8601.seconds(from: text) else {
                Issue.record("\(text) did not parse")
                return
            }
            #expect(abs(parsed - seconds) < 1e-6, "\(text)")
            milliseconds += 98_765_432_109 // about 3 years 47 days, with an odd millisecond
        }
    }

    @Test(arguments: [
        "", "2026-03-02", "2026-03-02T06:31:05", "2026-03-02T06:31", "2026/03/02T06:31:05Z",
        "2026-3-02T06:31:05Z", "2026-03-02T6:31:05Z", "26-03-02T06:31:05Z", "2026-03-02X06:31:05Z",
        "2026-13-02T06:31:05Z", "2026-00-02T06:31:05Z", "2026-03-00T06:31:05Z", "2026-03-32T06:31:05Z",
        "2026-03-02T24:00:00Z", "2026-03-02T06:60:05Z", "2026-03-02T06:31:61Z",
        "2026-03-02T06:31:05.Z", "2026-03-02T06:31:05.123", "2026-03-02T06:31:05ZZ", "2026-03-02T06:31:05Z ",
        " 2026-03-02T06:31:05Z", "2026-03-02T06:31:05+0200", "2026-03-02T06:31:05+02", "2026-03-02T06:31:05+02:00Z",
        "2026-03-02T06:31:05 +02:00", "2026-03-02T06:31:05.12a3Z", "abcd-ef-ghTij:kl:mnZ", "2026-03-02T06:31:05UTC",
        "2026-03-02T06:31:05-0a:00", "+2026-03-02T06:31:05Z",
    ])
    func malformedTextIsRejected(text: String) {
        #expect(ISO8601.seconds(from: text) == nil)
    }

    @Test(arguments: ["2026-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-04-31T00:00:00Z", "2100-02-29T00:00:00Z"])
    func daysThatDoNotExistInTheirMonthAreRejected(text: String) {
        // `seconds(from:)` promises nil for anything but a valid date: 2026-02-30 must not become 2026-03-02.
        #expect(ISO8601.seconds(from: text) == nil)
    }

    @Test(arguments: ["2026-03-02T06:31:05+24:00", "2026-03-02T06:31:05-99:99", "2026-03-02T06:31:05+02:60"])
    func offsetsOutOfRangeAreRejected(text: String) {
        #expect(ISO8601.seconds(from: text) == nil)
    }
}
