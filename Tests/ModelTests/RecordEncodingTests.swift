import Foundation
import GatewayKit
import RecordCodecs
import RoadSaveModel
import Testing

/// Records at the encoder's precision (`SensorRecord.Precision`: t 3, lat/lon 7, speed 2, course 1, hacc 1, g values
/// 4, durationMs 1, sample dt 4 decimals) decode back to themselves.
@Suite("RecordEncoding: round trip")
struct RecordEncodingRoundTripTests {
    static let device = DeviceID(app: "app-1", user: "user-9")

    static func roundTrip(_ record: SensorRecord) throws -> SensorRecord {
        try RecordDecoding.record(fromJSON: Array(record.json().utf8))
    }

    static let examples: [SensorRecord] = [
        SensorRecord(
            device: device, seq: 7, t: 1_772_433_065.123,
            payload: .location(
                LocationFix(
                    latitude: -33.9248685, longitude: 18.4240553, speed: 13.57, course: 270.5, horizontalAccuracy: 4.8))
        ),
        SensorRecord(
            device: device, seq: 0, t: 1_485_092_972.702,
            payload: .location(
                LocationFix(
                    latitude: 44.4937999, longitude: 11.3469278, speed: 0, course: 0, horizontalAccuracy: 0))),
        // Unknown speed and course, an invalid fix.
        SensorRecord(
            device: device, t: 1_718_708_242.5,
            payload: .location(
                LocationFix(
                    latitude: 89.9999999, longitude: -179.9999999, horizontalAccuracy: -1))),
        SensorRecord(
            device: device, t: 1_718_708_242,
            payload: .location(LocationFix(latitude: 0.0000001, longitude: -0.0000001))),
        SensorRecord(
            device: device, seq: 8, t: 1_772_433_066.5, payload: .activity(ActivityObservation(.automotive, .high))),
        SensorRecord(device: device, seq: 9, t: 1_772_433_067, payload: .steps(1234)),
        SensorRecord(device: device, t: 1_772_433_067.001, payload: .steps(0)),
        SensorRecord(
            device: device, seq: 10, t: 1_772_433_068.25,
            payload: .impact(
                ImpactObservation(
                    peakG: 18.4824, durationMs: 40.3,
                    samples: [
                        ImpactSample(dt: -0.9985, x: -0.1536, y: -0.4067, z: 2.0386),
                        ImpactSample(dt: 0, x: 17.9, y: -4.0001, z: 0.0001),
                        ImpactSample(dt: 1.9999, x: 0, y: 0, z: 1),
                    ]))),
        // No duration, no samples.
        SensorRecord(device: device, t: 1_772_433_068.999, payload: .impact(ImpactObservation(peakG: 2.0001))),
        SensorRecord(
            device: device, seq: 11, t: 1_772_433_069,
            payload: .capabilities(
                DeviceCapabilities(activityAvailable: false, pedometerAvailable: true))),
        SensorRecord(device: device, seq: 9_007_199_254_740_992, t: 4_102_444_799.999, payload: .capabilities(.full)),
        SensorRecord(
            device: DeviceID(app: "a\"p\\p", user: "ü\ns\u{1}e 東京"), seq: 3, t: 946_684_800,
            payload: .steps(999_999_999_999)),
    ]

    @Test(arguments: examples)
    func recordDecodesBackToItself(record: SensorRecord) throws {
        #expect(try Self.roundTrip(record) == record, "\(record.json())")
    }

    @Test(arguments: ActivityType.allCases)
    func everyActivityRoundTrips(activity: ActivityType) throws {
        for confidence in ActivityConfidence.allCases {
            let record = SensorRecord(
                device: Self.device, seq: 1, t: 1_772_433_066.5,
                payload: .activity(ActivityObservation(activity, confidence)))
            #expect(try Self.roundTrip(record) == record)
        }
    }

    /// Every field drawn at random on the encoder's grid, over the whole valid range.
    @Test func randomRecordsAtThePrecisionRoundTrip() throws {
        var random = SplitMix64(seed: 2024)
        func onGrid(_ low: Double, _ high: Double, decimals: Int) -> Double {
            var scale = 1.0
            for _ in 0..<decimals { scale *= 10 }
            let steps = Int64(((high - low) * scale).rounded(.down))
            return (low * scale + Double(Int64(random.next() % UInt64(steps + 1)))) / scale
        }
        for round in 0..<2000 {
            let t = onGrid(RecordDecoding.earliestTime, RecordDecoding.latestTime - 1, decimals: 3)
            let seq: UInt64? = round % 3 == 0 ? nil : random.next() % 9_007_199_254_740_992
            let payload: SensorRecord.Payload
            switch round % 4 {
            case 0, 1:
                payload = .location(
                    LocationFix(
                        latitude: onGrid(-90, 90, decimals: 7), longitude: onGrid(-180, 180, decimals: 7),
                        speed: round % 5 == 0 ? nil : onGrid(0, 90, decimals: 2),
                        course: round % 7 == 0 ? nil : onGrid(0, 360, decimals: 1),
                        horizontalAccuracy: round % 11 == 0 ? nil : onGrid(-1, 5000, decimals: 1)))
            case 2:
                payload = .impact(
                    ImpactObservation(
                        peakG: onGrid(0, 999, decimals: 4),
                        durationMs: round % 6 == 2 ? nil : onGrid(0, 60_000, decimals: 1),
                        samples: (0..<Int(random.next() % 8)).map { _ in
                            ImpactSample(
                                dt: onGrid(-1, 2, decimals: 4), x: onGrid(-200, 200, decimals: 4),
                                y: onGrid(-200, 200, decimals: 4), z: onGrid(-200, 200, decimals: 4))
                        }))
            default:
                payload = .steps(Int(random.next() % 1_000_000_000_000))
            }
            let record = SensorRecord(device: Self.device, seq: seq, t: t, payload: payload)
            let decoded = try Self.roundTrip(record)
            #expect(decoded == record, "\(record.json())")
            if decoded != record { return }
        }
    }

    /// The decoder's own fixtures (PROTOCOL §2 records with every field) survive decode → encode → decode.
    @Test(arguments: ["location", "activity", "steps", "impact", "capabilities"])
    func contractFixturesSurviveReencoding(kind: String) throws {
        let record = try decodeRecord(RecordJSON.valid(kind).text)
        #expect(try Self.roundTrip(record) == record)
    }

    /// Values finer than the precision are rounded to it: the decoded record is the rounded one.
    @Test func finerValuesAreRoundedToThePrecision() throws {
        let record = SensorRecord(
            device: Self.device, t: 1_772_433_065.12349,
            payload: .location(
                LocationFix(
                    latitude: 44.493812345, longitude: 11.34300006, speed: 3.478051, course: 90.04,
                    horizontalAccuracy: 6.06)))
        #expect(
            try Self.roundTrip(record)
                == SensorRecord(
                    device: Self.device, t: 1_772_433_065.123,
                    payload: .location(
                        LocationFix(
                            latitude: 44.4938123, longitude: 11.3430001, speed: 3.48, course: 90,
                            horizontalAccuracy: 6.1))))
    }
}

@Suite("RecordEncoding: the JSON text")
struct RecordEncodingTextTests {
    static let device = DeviceID(app: "app-1", user: "user-9")

    @Test func locationWithEveryField() {
        let record = SensorRecord(
            device: Self.device, seq: 7, t: 1_772_433_065.1,
            payload: .location(
                LocationFix(
                    latitude: -33.92486851, longitude: 18.4241, speed: 13.5, course: 270.5, horizontalAccuracy: 4.8)))
        #expect(
            record.json() == #"{"kind":"location","app":"app-1","user":"user-9","seq":7,"t":1772433065.100,"#
                + #""lat":-33.9248685,"lon":18.4241,"speed":13.5,"course":270.5,"hacc":4.8}"#)
    }

    @Test func unknownSpeedAndCourseAreLeftOutAndAccuracyIsWrittenAsGiven() {
        let record = SensorRecord(
            device: Self.device, t: 1_772_433_065,
            payload: .location(
                LocationFix(
                    latitude: 52.1, longitude: 5.1, horizontalAccuracy: -1)))
        #expect(
            record.json() == #"{"kind":"location","app":"app-1","user":"user-9","t":1772433065.000,"#
                + #""lat":52.1,"lon":5.1,"hacc":-1}"#)
        let bare = SensorRecord(
            device: Self.device, t: 1_772_433_065, payload: .location(LocationFix(latitude: 1, longitude: 2)))
        #expect(bare.json() == #"{"kind":"location","app":"app-1","user":"user-9","t":1772433065.000,"lat":1,"lon":2}"#)
    }

    @Test func otherKinds() {
        #expect(
            SensorRecord(
                device: Self.device, seq: 0, t: 1_772_433_066.5, payload: .activity(ActivityObservation(.walking, .low))
            )
            .json()
                == #"{"kind":"activity","app":"app-1","user":"user-9","seq":0,"t":1772433066.500,"activity":"walking","confidence":"low"}"#
        )
        #expect(
            SensorRecord(device: Self.device, t: 1_772_433_067, payload: .steps(1234)).json()
                == #"{"kind":"steps","app":"app-1","user":"user-9","t":1772433067.000,"steps":1234}"#)
        #expect(
            SensorRecord(
                device: Self.device, t: 1_772_433_069,
                payload: .capabilities(
                    DeviceCapabilities(activityAvailable: false, pedometerAvailable: true))
            ).json()
                == #"{"kind":"capabilities","app":"app-1","user":"user-9","t":1772433069.000,"activityAvailable":false,"pedometerAvailable":true}"#
        )
    }

    @Test func impactSamplesAreRowsOfFour() {
        let record = SensorRecord(
            device: Self.device, seq: 10, t: 1_772_433_068.25,
            payload: .impact(
                ImpactObservation(
                    peakG: 6.51234, durationMs: 42,
                    samples: [
                        ImpactSample(dt: -1, x: 0.1, y: 0.2, z: 0.98),
                        ImpactSample(dt: 0, x: 3, y: -4, z: 0.5),
                        ImpactSample(dt: 0.00004, x: -0.00004, y: 1.23456, z: 1),
                    ])))
        #expect(
            record.json() == #"{"kind":"impact","app":"app-1","user":"user-9","seq":10,"t":1772433068.250,"#
                + #""peakG":6.5123,"durationMs":42,"samples":[[-1,0.1,0.2,0.98],[0,3,-4,0.5],[0,0,1.2346,1]]}"#)
        let bare = SensorRecord(device: Self.device, t: 1_772_433_068, payload: .impact(ImpactObservation(peakG: 2.5)))
        #expect(bare.json() == #"{"kind":"impact","app":"app-1","user":"user-9","t":1772433068.000,"peakG":2.5}"#)
    }

    @Test func membersComeInContractOrder() throws {
        for record in RecordEncodingRoundTripTests.examples {
            let names = keys(of: try JSONParser.parse(record.json()))
            let head = ["kind", "app", "user"] + (record.seq == nil ? [] : ["seq"]) + ["t"]
            #expect(Array(names.prefix(head.count)) == head, "\(record.json())")
        }
    }

    @Test func foundationReadsTheSameRecord() throws {
        let record = RecordEncodingRoundTripTests.examples[0]
        let object = try #require(try JSONSerialization.jsonObject(with: Data(record.json().utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "location" && object["user"] as? String == "user-9")
        #expect((object["seq"] as? NSNumber)?.intValue == 7)
        #expect(abs(((object["t"] as? NSNumber)?.doubleValue ?? 0) - 1_772_433_065.123) < 1e-6)
        #expect(abs(((object["lat"] as? NSNumber)?.doubleValue ?? 0) + 33.9248685) < 1e-9)
    }
}

@Suite("JSONObjectWriter.fixedNumber")
struct FixedNumberTests {
    @Test(arguments: [
        (1.0, 3, "1.000"), (1_718_708_242.5, 3, "1718708242.500"), (1_772_433_065.12349, 3, "1772433065.123"),
        (12.345678, 3, "12.346"), (-1, 2, "-1.00"), (-0.0004, 3, "0.000"),
        (-0.0, 3, "0.000"), (-22.90561234, 7, "-22.9056123"), (0.05, 4, "0.0500"), (99.9996, 3, "100.000"),
        (42, 0, "42"), (-2.5, 0, "-3"), (0.001, 3, "0.001"), (-0.001, 3, "-0.001"),
    ])
    func writesExactlyTheDecimals(value: Double, decimals: Int, expected: String) {
        #expect(JSONObjectWriter.fixedNumber(value, decimals: decimals) == expected)
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteNumbersAreNull(value: Double) {
        #expect(JSONObjectWriter.fixedNumber(value, decimals: 3) == "null")
    }

    @Test(arguments: [1e20, -1.5e300, 9.1e15])
    func valuesTooLargeToScaleFallBackToTheShortestForm(value: Double) throws {
        let text = JSONObjectWriter.fixedNumber(value, decimals: 3)
        #expect(text == JSONObjectWriter.number(value, decimals: 3))
        guard case .number(let parsed) = try JSONParser.parse(text) else {
            Issue.record("\(text)")
            return
        }
        #expect(abs(parsed - value) <= abs(value) * 1e-15, "\(value) written as \(text)")
    }

    @Test func theWriterAddsIt() {
        var writer = JSONObjectWriter()
        writer.add("t", 1_718_708_242, fixedDecimals: 3)
        writer.add("n", 2.5, decimals: 3)
        #expect(writer.finish() == #"{"t":1718708242.000,"n":2.5}"#)
    }

    /// The fixed and the shortest form are the same number once parsed.
    @Test func parsesToTheSameNumberAsTheShortestForm() throws {
        var random = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let value = Double(random.next() % 8_000_000_000_000) / 1000 - 4e9 + Double(random.next() % 1000) / 1e7
            let fixed = try JSONParser.parse(JSONObjectWriter.fixedNumber(value, decimals: 3))
            let shortest = try JSONParser.parse(JSONObjectWriter.number(value, decimals: 3))
            #expect(fixed == shortest, "\(value)")
        }
    }
}
