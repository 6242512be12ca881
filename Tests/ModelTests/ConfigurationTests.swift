import RoadSaveModel
import Testing

@Suite("RoadSaveConfiguration")
struct RoadSaveConfigurationTests {
    /// The field named by the error that `validate()` throws.
    func rejectedField(
        _ configuration: RoadSaveConfiguration, reasonContains part: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> String? {
        do {
            try configuration.validate()
            Issue.record("expected a rejection", sourceLocation: sourceLocation)
        } catch let .invalidConfiguration(field, reason) {
            #expect(reason.contains(part), "reason: \(reason)", sourceLocation: sourceLocation)
            return field
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func defaults() {
        let configuration = RoadSaveConfiguration(applicationID: "app-id-123456", clientUserID: "user-123")
        #expect(configuration.detectionMode == .all)
        #expect(configuration.shouldAutoDetectTrips)
        #expect(configuration.device == DeviceID(app: "app-id-123456", user: "user-123"))
    }

    @Test func validConfigurationPasses() throws {
        try RoadSaveConfiguration(applicationID: "app-id", clientUserID: "user-123").validate()
        try RoadSaveConfiguration(
            applicationID: String(repeating: "é", count: 128), // 256 bytes
            clientUserID: "Zoë 東京"
        ).validate()
    }

    @Test func emptyApplicationIDIsRejected() {
        #expect(
            rejectedField(RoadSaveConfiguration(applicationID: "", clientUserID: "u"), reasonContains: "empty")
                == "applicationID")
    }

    @Test func emptyClientUserIDIsRejected() {
        #expect(
            rejectedField(RoadSaveConfiguration(applicationID: "app", clientUserID: ""), reasonContains: "empty")
                == "clientUserID")
    }

    @Test func tooLongIdentifiersAreRejected() {
        let long = String(repeating: "é", count: 129) // 258 bytes
        #expect(
            rejectedField(RoadSaveConfiguration(applicationID: long, clientUserID: "u"), reasonContains: "256")
                == "applicationID")
        #expect(
            rejectedField(
                RoadSaveConfiguration(applicationID: "app", clientUserID: String(repeating: "u", count: 257)),
                reasonContains: "256") == "clientUserID")
    }

    @Test(arguments: ["app\nid", "app\tid", "\u{0}app", "app\u{7F}", "app\u{1B}[31m", "app\u{85}"])
    func controlCharactersAreRejected(value: String) {
        #expect(
            rejectedField(RoadSaveConfiguration(applicationID: value, clientUserID: "u"), reasonContains: "control")
                == "applicationID")
        #expect(
            rejectedField(RoadSaveConfiguration(applicationID: "app", clientUserID: value), reasonContains: "control")
                == "clientUserID")
    }

    @Test func maskedApplicationIDHidesTheSecret() {
        let configuration = RoadSaveConfiguration(applicationID: "rs_live_8f3a9c2d7e", clientUserID: "u")
        #expect(configuration.maskedApplicationID == "rs…7e")
        #expect(!configuration.maskedApplicationID.contains("8f3a9c2d"))
    }
}

@Suite("Secret masking")
struct SecretMaskingTests {
    @Test(arguments: 1...64)
    func maskNeverRevealsTheWholeSecret(length: Int) {
        let secret = String((0..<length).map { Character(Unicode.Scalar(UInt8(0x41 + $0 % 26))) })
        let masked = Secret.mask(secret)
        #expect(!masked.contains(secret), "\(secret) → \(masked)")
        // At most four characters of the secret are shown, and none of a short one.
        let shown = masked.filter { $0 != "*" && $0 != "…" }
        #expect(shown.count <= (length > 8 ? 4 : 0), "\(secret) → \(masked)")
        #expect(shown.count < length)
    }

    @Test func shortSecretsAreAllStars() {
        #expect(Secret.mask("") == "***")
        #expect(Secret.mask("ab") == "***")
        #expect(Secret.mask("12345678") == "********")
    }

    @Test func longSecretsShowTwoCharactersAtEachEnd() {
        #expect(Secret.mask("123456789") == "12…89")
        #expect(Secret.mask("sk-0123456789abcdef") == "sk…ef")
    }

    @Test func maskWorksOnCharactersNotBytes() {
        #expect(Secret.mask("éééééééééé") == "éé…éé")
        #expect(Secret.mask("😀😀😀") == "***")
    }

    @Test func deviceDescriptionMasksTheApplicationID() {
        let device = DeviceID(app: "rs_live_8f3a9c2d7e", user: "user-9")
        #expect(device.description == "rs…7e/user-9")
        #expect(!"\(device)".contains("8f3a9c2d"))
        #expect(DeviceID(app: "short", user: "u").description == "*****/u")
    }

    @Test func devicesOrderByAppThenUser() {
        #expect(DeviceID(app: "a", user: "z") < DeviceID(app: "b", user: "a"))
        #expect(DeviceID(app: "a", user: "a") < DeviceID(app: "a", user: "b"))
        #expect(!(DeviceID(app: "a", user: "a") < DeviceID(app: "a", user: "a")))
    }
}

@Suite("RoadSaveError")
struct RoadSaveErrorTests {
    @Test(arguments: [
        (RoadSaveError.notConfigured, "notConfigured"),
        (.offlineLimitExceeded(lastSuccessfulFetch: nil, graceSeconds: 60), "offlineLimitExceeded"),
        (.notMonitoring, "notMonitoring"),
        (.crashDetectionDisabled, "crashDetectionDisabled"),
        (.invalidConfiguration(field: "stopDelay", reason: "must be positive"), "invalidConfiguration"),
        (.invalidRecord(RecordError(field: "lat", reason: "91.0 is outside -90…90")), "invalidRecord"),
    ])
    func codeAndDescriptionPrefix(error: RoadSaveError, code: String) {
        #expect(error.code == code)
        #expect(error.description.hasPrefix(code + ": "))
        #expect(error.description.count > code.count + 10)
    }

    @Test func notConfiguredSaysWhatToCall() {
        #expect(RoadSaveError.notConfigured.description.contains("configure"))
    }

    @Test func notMonitoringSaysWhatToCall() {
        #expect(RoadSaveError.notMonitoring.description.contains("startMonitoring"))
    }

    @Test func crashDetectionDisabledSaysWhy() {
        #expect(RoadSaveError.crashDetectionDisabled.description.contains("crash detection off"))
    }

    @Test func offlineLimitWithALastFetchGivesItsDateAndTheLimit() {
        let error = RoadSaveError.offlineLimitExceeded(lastSuccessfulFetch: 1_772_433_065.123, graceSeconds: 259_200)
        #expect(error.description.contains("2026-03-02T06:31:05.123Z"))
        #expect(error.description.contains("259200 s"))
    }

    @Test func offlineLimitWithoutAFetchSaysSo() {
        let error = RoadSaveError.offlineLimitExceeded(lastSuccessfulFetch: nil, graceSeconds: 3600)
        #expect(error.description.contains("never fetched"))
        #expect(error.description.contains("3600 s"))
    }

    @Test func invalidConfigurationNamesFieldAndReason() {
        #expect(
            RoadSaveError.invalidConfiguration(field: "stopDelay", reason: "must be a positive number, got -1.0")
                .description == "invalidConfiguration: stopDelay must be a positive number, got -1.0")
    }

    @Test func invalidRecordNamesFieldAndReason() {
        #expect(
            RoadSaveError.invalidRecord(RecordError(field: "lat", reason: "91.0 is outside -90…90")).description
                == "invalidRecord: lat: 91.0 is outside -90…90")
    }

    @Test func codesAreDistinct() {
        let all: [RoadSaveError] = [
            .notConfigured, .offlineLimitExceeded(lastSuccessfulFetch: 0, graceSeconds: 1), .notMonitoring,
            .crashDetectionDisabled, .invalidConfiguration(field: "f", reason: "r"),
            .invalidRecord(RecordError(field: "f", reason: "r")),
        ]
        #expect(Set(all.map(\.code)).count == all.count)
    }
}
