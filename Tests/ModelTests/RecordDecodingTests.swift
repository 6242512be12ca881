import RecordCodecs
import RoadSaveModel
import Testing

@Suite("RecordDecoding: valid records")
struct RecordDecodingValidTests {
    let device = DeviceID(app: "app-1", user: "user-9")

    @Test func locationRecordDecodesEveryField() throws {
        let record = try decodeRecord(RecordJSON.location.text)
        #expect(record.kind == .location)
        #expect(
            record
                == SensorRecord(
                    device: device, seq: 7, t: 1772433065.123,
                    payload: .location(
                        LocationFix(
                            latitude: -33.9249, longitude: 18.4241, speed: 13.5, course: 270.5, horizontalAccuracy: 4.8)
                    )))
    }

    @Test func activityRecordDecodesEveryField() throws {
        let record = try decodeRecord(RecordJSON.activity.text)
        #expect(record.kind == .activity)
        #expect(
            record
                == SensorRecord(
                    device: device, seq: 8, t: 1772433066.5,
                    payload: .activity(ActivityObservation(.automotive, .high))))
    }

    @Test(arguments: [
        ("automotive", ActivityType.automotive), ("walking", .walking), ("running", .running),
        ("cycling", .cycling), ("stationary", .stationary), ("unknown", .unknown),
    ])
    func everyActivityNameDecodes(name: String, expected: ActivityType) throws {
        let record = try decodeRecord(RecordJSON.activity.with("activity", "\"\(name)\"").text)
        #expect(record.payload == .activity(ActivityObservation(expected, .high)))
    }

    @Test(arguments: [("low", ActivityConfidence.low), ("medium", .medium), ("high", .high)])
    func everyConfidenceNameDecodes(name: String, expected: ActivityConfidence) throws {
        let record = try decodeRecord(RecordJSON.activity.with("confidence", "\"\(name)\"").text)
        #expect(record.payload == .activity(ActivityObservation(.automotive, expected)))
    }

    @Test func stepsRecordDecodesEveryField() throws {
        let record = try decodeRecord(RecordJSON.steps.text)
        #expect(record.kind == .steps)
        #expect(record == SensorRecord(device: device, seq: 9, t: 1_772_433_067, payload: .steps(1234)))
    }

    @Test func impactRecordDecodesEveryField() throws {
        let record = try decodeRecord(RecordJSON.impact.text)
        #expect(record.kind == .impact)
        let samples = [
            ImpactSample(dt: -1, x: 0.1, y: 0.2, z: 0.98),
            ImpactSample(dt: 0, x: 3, y: -4, z: 0.5),
            ImpactSample(dt: 2, x: 0, y: 0, z: 1),
        ]
        #expect(
            record
                == SensorRecord(
                    device: device, seq: 10, t: 1772433068.25,
                    payload: .impact(
                        ImpactObservation(peakG: 6.5, durationMs: 42, samples: samples))))
        // |(3, -4, 0.5)| = sqrt(9 + 16 + 0.25) = sqrt(25.25)
        #expect(abs(samples[1].magnitude - 5.024937810560445) < 1e-12)
    }

    @Test func capabilitiesRecordDecodesEveryField() throws {
        let record = try decodeRecord(RecordJSON.capabilities.text)
        #expect(record.kind == .capabilities)
        #expect(
            record
                == SensorRecord(
                    device: device, seq: 11, t: 1_772_433_069,
                    payload: .capabilities(
                        DeviceCapabilities(activityAvailable: false, pedometerAvailable: true))))
    }

    @Test func optionalFieldsMayBeLeftOut() throws {
        let location = try decodeRecord(
            RecordJSON.location.without("seq").without("speed").without("course")
                .without("hacc").text)
        #expect(location.seq == nil)
        #expect(location.payload == .location(LocationFix(latitude: -33.9249, longitude: 18.4241)))

        let impact = try decodeRecord(RecordJSON.impact.without("durationMs").without("samples").text)
        #expect(impact.payload == .impact(ImpactObservation(peakG: 6.5, durationMs: nil, samples: [])))
    }

    @Test func nullOptionalFieldsCountAsMissing() throws {
        let location = try decodeRecord(
            RecordJSON.location.with("seq", "null").with("speed", "null")
                .with("course", "null").with("hacc", "null").text)
        #expect(location.seq == nil)
        #expect(location.payload == .location(LocationFix(latitude: -33.9249, longitude: 18.4241)))
        let impact = try decodeRecord(RecordJSON.impact.with("durationMs", "null").with("samples", "null").text)
        #expect(impact.payload == .impact(ImpactObservation(peakG: 6.5)))
    }

    @Test(arguments: ["location", "activity", "steps", "impact", "capabilities"])
    func unknownFieldsAreIgnored(kind: String) throws {
        let plain = try decodeRecord(RecordJSON.valid(kind).text)
        let extended = try decodeRecord(
            RecordJSON.valid(kind)
                .with("gatewayVersion", #""2.1""#)
                .with("extra", #"{"nested":[1,2,{"x":null}],"flag":true}"#)
                .with("speedAccuracy", "0.5").text)
        #expect(extended == plain)
    }

    @Test func membersMayComeInAnyOrder() throws {
        let reversed = RecordJSON(RecordJSON.location.members.reversed())
        #expect(try decodeRecord(reversed.text) == decodeRecord(RecordJSON.location.text))
    }

    @Test func negativeSpeedAndCourseMeanUnknown() throws {
        let record = try decodeRecord(RecordJSON.location.with("speed", "-1").with("course", "-1").text)
        guard case .location(let fix) = record.payload else {
            Issue.record("not a location")
            return
        }
        #expect(fix.speed == nil)
        #expect(fix.course == nil)
        #expect(fix.horizontalAccuracy == 4.8)
    }

    @Test func negativeAccuracyIsKeptToMarkAnInvalidFix() throws {
        let record = try decodeRecord(RecordJSON.location.with("hacc", "-1").text)
        guard case .location(let fix) = record.payload else {
            Issue.record("not a location")
            return
        }
        #expect(fix.horizontalAccuracy == -1)
        #expect(fix.speed == 13.5)
    }

    @Test func zeroSpeedIsKnownNotUnknown() throws {
        let record = try decodeRecord(RecordJSON.location.with("speed", "0").text)
        guard case .location(let fix) = record.payload else {
            Issue.record("not a location")
            return
        }
        #expect(fix.speed == 0)
    }

    @Test(arguments: [("90", "180"), ("-90", "-180"), ("0", "0")])
    func boundaryCoordinatesAreAccepted(lat: String, lon: String) throws {
        let record = try decodeRecord(RecordJSON.location.with("lat", lat).with("lon", lon).text)
        #expect(
            record.payload
                == .location(
                    LocationFix(
                        latitude: Double(lat)!, longitude: Double(lon)!,
                        speed: 13.5, course: 270.5, horizontalAccuracy: 4.8)))
    }

    @Test func courseOf360IsAccepted() throws {
        let record = try decodeRecord(RecordJSON.location.with("course", "360").text)
        guard case .location(let fix) = record.payload else {
            Issue.record("not a location")
            return
        }
        #expect(fix.course == 360)
    }

    @Test func timeBoundaries() throws {
        // 2000-01-01T00:00:00Z = 10957 days × 86400 s = 946684800 is the first accepted time.
        #expect(try decodeRecord(RecordJSON.steps.with("t", "946684800").text).t == 946_684_800)
        // 2100-01-01T00:00:00Z = 47482 days × 86400 s = 4102444800 is the first rejected time.
        #expect(try decodeRecord(RecordJSON.steps.with("t", "4102444799.999").text).t == 4_102_444_799.999)
    }

    @Test func zeroSeqAndStepsAreAccepted() throws {
        let record = try decodeRecord(RecordJSON.steps.with("seq", "0").with("steps", "0").text)
        #expect(record.seq == 0)
        #expect(record.payload == .steps(0))
    }

    @Test func largeIntegralSeqIsExact() throws {
        // 2^53 is the largest integer every JSON number reader keeps exactly.
        let record = try decodeRecord(RecordJSON.steps.with("seq", "9007199254740992").text)
        #expect(record.seq == 9_007_199_254_740_992)
    }

    @Test func integralNumbersWrittenWithFractionOrExponentAreIntegers() throws {
        let record = try decodeRecord(RecordJSON.steps.with("seq", "3.0").with("steps", "1.2e3").text)
        #expect(record.seq == 3)
        #expect(record.payload == .steps(1200))
    }

    @Test func identifiersUpTo256BytesAreAccepted() throws {
        let app = String(repeating: "é", count: 128) // 128 × 2 bytes = 256 bytes
        let user = String(repeating: "u", count: 256)
        let record = try decodeRecord(RecordJSON.steps.with("app", "\"\(app)\"").with("user", "\"\(user)\"").text)
        #expect(record.device == DeviceID(app: app, user: user))
    }

    @Test func maximumSampleCountIsAccepted() throws {
        let rows = Array(repeating: "[0,0,0,1]", count: 10_000).joined(separator: ",")
        let record = try decodeRecord(RecordJSON.impact.with("samples", "[\(rows)]").text)
        guard case .impact(let impact) = record.payload else {
            Issue.record("not an impact")
            return
        }
        #expect(impact.samples.count == 10_000)
    }

    @Test func decodesFromAParsedValueToo() throws {
        let value = try JSONParser.parse(RecordJSON.steps.text)
        #expect(try RecordDecoding.record(from: value) == decodeRecord(RecordJSON.steps.text))
    }
}

@Suite("RecordDecoding: rejections")
struct RecordDecodingRejectionTests {
    @Test(arguments: [
        ("location", "kind"), ("location", "app"), ("location", "user"), ("location", "t"),
        ("location", "lat"), ("location", "lon"),
        ("activity", "activity"), ("activity", "confidence"), ("activity", "t"),
        ("steps", "steps"), ("impact", "peakG"),
        ("capabilities", "activityAvailable"), ("capabilities", "pedometerAvailable"),
    ])
    func missingRequiredFieldIsNamed(kind: String, field: String) {
        expectRejection(RecordJSON.valid(kind).without(field), field: field, reasonContains: ["missing"])
    }

    @Test(arguments: [
        ("location", "kind", "5", "a string"),
        ("location", "app", "true", "a string"),
        ("location", "user", "null", "a string"),
        ("location", "user", "42", "a string"),
        ("location", "t", #""2026-03-02T06:31:05Z""#, "a number"),
        ("location", "seq", #""7""#, "a number"),
        ("location", "lat", #""-33.9""#, "a number"),
        ("location", "lon", "[18.4]", "a number"),
        ("location", "speed", #""fast""#, "a number"),
        ("location", "course", "{}", "a number"),
        ("location", "hacc", "false", "a number"),
        ("activity", "activity", "1", "a string"),
        ("activity", "confidence", "0.9", "a string"),
        ("steps", "steps", #""10""#, "a number"),
        ("impact", "peakG", #""6.5""#, "a number"),
        ("impact", "durationMs", "true", "a number"),
        ("capabilities", "activityAvailable", #""yes""#, "true or false"),
        ("capabilities", "pedometerAvailable", "1", "true or false"),
    ])
    func wrongTypeIsNamed(kind: String, field: String, raw: String, expected: String) {
        expectRejection(RecordJSON.valid(kind).with(field, raw), field: field, reasonContains: [expected])
    }

    @Test func unknownKindListsTheKinds() {
        expectRejection(
            RecordJSON.location.with("kind", #""teleport""#), field: "kind",
            reasonContains: ["teleport", "location", "activity", "steps", "impact", "capabilities"])
    }

    @Test func kindIsCaseSensitive() {
        expectRejection(RecordJSON.location.with("kind", #""Location""#), field: "kind", reasonContains: ["Location"])
    }

    @Test func unknownActivityListsTheActivities() {
        expectRejection(
            RecordJSON.activity.with("activity", #""flying""#), field: "activity",
            reasonContains: ["flying", "automotive", "walking", "running", "cycling", "stationary", "unknown"])
    }

    @Test func unknownConfidenceListsTheConfidences() {
        expectRejection(
            RecordJSON.activity.with("confidence", #""certain""#), field: "confidence",
            reasonContains: ["certain", "low", "medium", "high"])
    }

    @Test func latitudeJustAbove90IsRejected() {
        expectRejection(RecordJSON.location.with("lat", "90.0001"), field: "lat", reasonContains: ["90.0001", "-90"])
    }

    @Test func latitudeJustBelowMinus90IsRejected() {
        expectRejection(RecordJSON.location.with("lat", "-90.5"), field: "lat", reasonContains: ["-90.5"])
    }

    @Test func longitudeBelowMinus180IsRejected() {
        expectRejection(RecordJSON.location.with("lon", "-180.5"), field: "lon", reasonContains: ["-180.5", "180"])
    }

    @Test func longitudeAbove180IsRejected() {
        expectRejection(RecordJSON.location.with("lon", "180.0001"), field: "lon", reasonContains: ["180.0001"])
    }

    @Test func timeBefore2000IsRejected() {
        // One millisecond before 2000-01-01T00:00:00Z (946684800).
        expectRejection(RecordJSON.steps.with("t", "946684799.999"), field: "t", reasonContains: ["2000", "2100"])
    }

    @Test func timeInMillisecondsIsRejectedAsAfter2100() {
        // A classic gateway mistake: milliseconds instead of seconds.
        expectRejection(RecordJSON.steps.with("t", "1772433065123"), field: "t", reasonContains: ["2000", "2100"])
    }

    @Test func timeAtStartOf2100IsRejected() {
        expectRejection(RecordJSON.steps.with("t", "4102444800"), field: "t", reasonContains: ["2100"])
    }

    @Test(arguments: ["-1", "1.5", "9007199254740994", "1e300"])
    func seqThatIsNotANonNegativeSafeIntegerIsRejected(raw: String) {
        expectRejection(RecordJSON.steps.with("seq", raw), field: "seq", reasonContains: ["integer"])
    }

    @Test(arguments: ["2.5", "-3", "1e12"])
    func stepsThatAreNotANonNegativeIntegerAreRejected(raw: String) {
        expectRejection(RecordJSON.steps.with("steps", raw), field: "steps", reasonContains: ["integer"])
    }

    @Test func courseAbove360IsRejected() {
        expectRejection(RecordJSON.location.with("course", "400"), field: "course", reasonContains: ["400", "360"])
    }

    @Test func negativeDurationIsRejected() {
        expectRejection(RecordJSON.impact.with("durationMs", "-1"), field: "durationMs", reasonContains: ["-1"])
    }

    @Test func durationOverAMinuteIsRejected() {
        expectRejection(RecordJSON.impact.with("durationMs", "60001"), field: "durationMs", reasonContains: ["60001"])
    }

    @Test(arguments: ["-0.5", "1000", "1e6"])
    func peakOutsideRangeIsRejected(raw: String) {
        expectRejection(RecordJSON.impact.with("peakG", raw), field: "peakG")
    }

    @Test(arguments: [("5", "a number"), (#""[[0,0,0,1]]""#, "a string"), ("{}", "an object"), ("true", "a boolean")])
    func samplesThatAreNotAnArrayAreRejected(raw: String, found: String) {
        expectRejection(RecordJSON.impact.with("samples", raw), field: "samples", reasonContains: [found])
    }

    @Test func sampleRowOfThreeValuesIsNamedByIndex() {
        expectRejection(
            RecordJSON.impact.with("samples", "[[0,0,0,1],[0.1,1,2]]"), field: "samples[1]",
            reasonContains: ["[dt, x, y, z]"])
    }

    @Test func sampleRowOfFiveValuesIsNamedByIndex() {
        expectRejection(RecordJSON.impact.with("samples", "[[0,0,0,1,9]]"), field: "samples[0]")
    }

    @Test func sampleRowWithAStringIsNamedByIndex() {
        expectRejection(
            RecordJSON.impact.with("samples", #"[[0,0,0,1],[0,0,0,1],[0.2,"1",0,0]]"#),
            field: "samples[2]", reasonContains: ["a string"])
    }

    @Test func sampleRowWithNullIsNamedByIndex() {
        expectRejection(
            RecordJSON.impact.with("samples", "[[0,null,0,1]]"), field: "samples[0]",
            reasonContains: ["null"])
    }

    @Test func sampleRowThatIsNotAnArrayIsNamedByIndex() {
        expectRejection(RecordJSON.impact.with("samples", "[[0,0,0,1],7]"), field: "samples[1]")
    }

    @Test func tooManySamplesAreRejected() {
        let rows = Array(repeating: "[0,0,0,1]", count: 10_001).joined(separator: ",")
        expectRejection(
            RecordJSON.impact.with("samples", "[\(rows)]"), field: "samples",
            reasonContains: ["10001", "10000"])
    }

    @Test(arguments: ["app", "user"])
    func emptyIdentifierIsRejected(field: String) {
        expectRejection(RecordJSON.location.with(field, #""""#), field: field, reasonContains: ["empty"])
    }

    @Test(arguments: ["app", "user"])
    func identifierLongerThan256BytesIsRejected(field: String) {
        let long = String(repeating: "x", count: 257)
        expectRejection(RecordJSON.location.with(field, "\"\(long)\""), field: field, reasonContains: ["256"])
    }

    @Test func identifierLengthIsCountedInBytesNotCharacters() {
        let app = String(repeating: "é", count: 129) // 129 characters, 258 bytes
        expectRejection(RecordJSON.location.with("app", "\"\(app)\""), field: "app", reasonContains: ["256"])
    }

    @Test(arguments: [
        ("[1,2]", "an array"), (#""location""#, "a string"), ("null", "null"), ("42", "a number"),
        ("true", "a boolean"),
    ])
    func nonObjectLineIsRejected(text: String, found: String) {
        expectRejection(text, field: "(record)", reasonContains: ["object", found])
    }

    @Test func invalidJSONIsRejectedWithItsColumn() {
        // The line breaks off after the comma: the parser runs out of input at byte 21, column 22.
        let text = #"{"kind":"location",  "#
        #expect(text.utf8.count == 21)
        expectRejection(text, field: "(json)", reasonContains: ["column 22"])
    }

    @Test func invalidJSONInTheMiddleNamesItsColumn() {
        // {"kind":"steps","t":01} — the stray '1' after the number 0 is byte 22.
        expectRejection(#"{"kind":"steps","t":01}"#, field: "(json)", reasonContains: ["column 22"])
    }

    @Test func emptyLineIsInvalidJSON() {
        expectRejection("", field: "(json)", reasonContains: ["column 1"])
    }

    @Test func recordErrorDescriptionNamesFieldAndReason() {
        #expect(
            RecordError(field: "lat", reason: "91.0 is outside -90…90").description == "lat: 91.0 is outside -90…90")
    }
}
