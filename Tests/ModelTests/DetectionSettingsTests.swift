import Foundation
import RoadSaveModel
import Testing

@Suite("DetectionSettings")
struct DetectionSettingsTests {
    func decode(_ json: String) throws -> DetectionSettings {
        try JSONDecoder().decode(DetectionSettings.self, from: Data(json.utf8))
    }

    /// The field named by the `invalidConfiguration` error that decoding `json` throws.
    func rejectedField(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        do {
            let settings = try decode(json)
            Issue.record("expected a rejection, decoded \(settings)", sourceLocation: sourceLocation)
        } catch let RoadSaveError.invalidConfiguration(field, reason) {
            #expect(!reason.isEmpty, sourceLocation: sourceLocation)
            return field
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func emptyObjectGivesTheDefaults() throws {
        let settings = try decode("{}")
        #expect(settings == DetectionSettings())
        // A few defaults that the brief's behaviour depends on.
        #expect(settings.tripDetectionEnabled && settings.crashDetectionEnabled)
        #expect(settings.stopDelay == 240)
        #expect(settings.stepThreshold == 25)
        #expect(settings.offlineGrace == 259_200) // 72 h × 3600 s
    }

    @Test func defaultsAreValid() throws {
        try DetectionSettings().validate()
    }

    @Test func partialDocumentChangesOnlyItsFields() throws {
        let settings = try decode(
            #"{"stopDelay": 300, "stepThreshold": 40, "crashDetectionEnabled": false, "startSpeed": 5.5}"#)
        var expected = DetectionSettings()
        expected.stopDelay = 300
        expected.stepThreshold = 40
        expected.crashDetectionEnabled = false
        expected.startSpeed = 5.5
        #expect(settings == expected)
    }

    @Test func unknownKeysAreIgnored() throws {
        #expect(try decode(#"{"futureThreshold": 3, "stopDelay": 200}"#).stopDelay == 200)
    }

    @Test func nullKeepsTheDefault() throws {
        // Documented behaviour: a member set to null is treated as left out.
        #expect(try decode(#"{"stopDelay": null}"#) == DetectionSettings())
    }

    @Test func wrongTypeIsADecodingError() {
        #expect(throws: DecodingError.self) { try decode(#"{"stopDelay": "four minutes"}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"stepThreshold": 2.5}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"tripDetectionEnabled": "yes"}"#) }
        #expect(throws: DecodingError.self) { try decode("[]") }
    }

    @Test func negativeStopDelayIsRejected() {
        #expect(rejectedField(#"{"stopDelay": -1}"#) == "stopDelay")
    }

    @Test func zeroStopDelayIsRejected() {
        #expect(rejectedField(#"{"stopDelay": 0}"#) == "stopDelay")
    }

    @Test(arguments: ["0", "-5"])
    func stepThresholdBelowOneIsRejected(raw: String) {
        #expect(rejectedField(#"{"stepThreshold": \#(raw)}"#) == "stepThreshold")
    }

    @Test func standstillShorterThanStopDelayIsRejected() throws {
        #expect(rejectedField(#"{"maximumStandstillInVehicle": 100}"#) == "maximumStandstillInVehicle")
        #expect(rejectedField(#"{"stopDelay": 1000}"#) == "maximumStandstillInVehicle") // default standstill 900
        #expect(try decode(#"{"stopDelay": 900}"#).stopDelay == 900) // equal is allowed
    }

    @Test func anOfflineGraceShorterThanTheStopDelayIsRejected() throws {
        #expect(rejectedField(#"{"tripOfflineGrace": 100}"#) == "tripOfflineGrace") // default stop delay 240
        #expect(rejectedField(#"{"tripOfflineGrace": 0}"#) == "tripOfflineGrace")
        #expect(try decode(#"{"tripOfflineGrace": 240}"#).tripOfflineGrace == 240)
        #expect(try decode(#"{"stopDelay": 5, "tripOfflineGrace": 5}"#).tripOfflineGrace == 5)
    }

    @Test(arguments: ["20", "25"])
    func settleTimeNotShorterThanDecisionDelayIsRejected(settle: String) {
        #expect(rejectedField(#"{"crashSettleTime": \#(settle), "crashDecisionDelay": 20}"#) == "crashSettleTime")
    }

    @Test func clusterWindowShorterThanDecisionDelayIsRejected() throws {
        #expect(rejectedField(#"{"crashDecisionDelay": 40}"#) == "crashClusterWindow") // default window 30
        #expect(try decode(#"{"crashDecisionDelay": 40, "crashClusterWindow": 40}"#).crashDecisionDelay == 40)
    }

    @Test(arguments: [
        "movementSpeed", "startSpeed", "startDuration", "startRunBreak", "gpsOnlyStartSpeed",
        "gpsOnlyStartDuration", "dataGap", "maximumHorizontalAccuracy", "maximumPlausibleSpeed",
        "crashMinimumPeakG", "crashPositionWindow", "offlineGrace",
    ])
    func positiveFieldsRejectZero(field: String) {
        #expect(rejectedField(#"{"\#(field)": 0}"#) == field)
    }

    @Test(arguments: [
        "startDistance", "gpsOnlyStartDistance", "crashMinimumSpeedBefore", "crashSpeedWindowBefore",
        "crashSettleTime", "crashSpeedKeptAfter", "freeFallMaximumG", "freeFallMinimumDuration",
    ])
    func nonNegativeFieldsAcceptZeroButNotNegative(field: String) throws {
        _ = try decode(#"{"\#(field)": 0}"#)
        #expect(rejectedField(#"{"\#(field)": -0.5}"#) == field)
    }

    @Test func validateRejectsNonFiniteValues() {
        var settings = DetectionSettings()
        settings.stopDelay = .nan
        #expect(
            throws: RoadSaveError.invalidConfiguration(field: "stopDelay", reason: "must be a positive number, got nan")
        ) {
            try settings.validate()
        }
        settings = DetectionSettings()
        settings.startDistance = .infinity
        let error = #expect(throws: RoadSaveError.self) { try settings.validate() }
        guard case .invalidConfiguration(let field, _) = error else {
            Issue.record("unexpected \(String(describing: error))")
            return
        }
        #expect(field == "startDistance")
    }

    @Test func encodeThenDecodeRoundTrips() throws {
        var settings = DetectionSettings()
        settings.tripDetectionEnabled = false
        settings.stopDelay = 123.5
        settings.maximumStandstillInVehicle = 600
        settings.stepThreshold = 12
        settings.crashMinimumPeakG = 3.25
        settings.freeFallMaximumG = 0.1
        settings.offlineGrace = 3600
        let data = try JSONEncoder().encode(settings)
        #expect(try JSONDecoder().decode(DetectionSettings.self, from: data) == settings)
    }

    @Test func encodingNamesEveryField() throws {
        let data = try JSONEncoder().encode(DetectionSettings())
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object.count == 38)
        // The behaviour thresholds nested, every one named (speedLimit only when set).
        #expect((object["behaviour"] as? [String: Any])?.count == 25)
        #expect((object["stopDelay"] as? NSNumber)?.doubleValue == 240)
        #expect((object["tripOfflineGrace"] as? NSNumber)?.doubleValue == 1800)
        #expect((object["stepThreshold"] as? NSNumber)?.intValue == 25)
        #expect((object["tripDetectionEnabled"] as? NSNumber)?.boolValue == true)
    }
}
