import Foundation
import RoadSaveModel
import Testing

/// The thresholds of driving behaviour in a settings document: a nested `behaviour` object naming only what it
/// changes, each checked with an error naming the field.
@Suite struct BehaviourSettingsTests {
    func decode(_ json: String) throws -> DetectionSettings {
        try JSONDecoder().decode(DetectionSettings.self, from: Data(json.utf8))
    }

    @Test func absentOrEmptyGivesTheDefaults() throws {
        #expect(try decode("{}").behaviour == BehaviourSettings())
        #expect(try decode(#"{"behaviour": {}}"#).behaviour == BehaviourSettings())
        try BehaviourSettings().validate()
        #expect(BehaviourSettings().speedLimit == nil, "excessive speed is off unless an application sets a limit")
    }

    @Test func aPartialObjectChangesOnlyItsFields() throws {
        let settings = try decode(#"{"stopDelay": 300, "behaviour": {"brakingThreshold": -2.7, "speedLimit": 33.3}}"#)
        var expected = BehaviourSettings()
        expected.brakingThreshold = -2.7
        expected.speedLimit = 33.3
        #expect(settings.behaviour == expected && settings.stopDelay == 300)
        // And back: what is encoded decodes to the same settings.
        #expect(try JSONDecoder().decode(DetectionSettings.self, from: JSONEncoder().encode(settings)) == settings)
    }

    @Test(arguments: [
        (#"{"brakingThreshold": 1}"#, "behaviour.brakingThreshold"),
        (#"{"brakingThreshold": -9}"#, "behaviour.brakingThreshold"),
        (#"{"severeBraking": -2}"#, "behaviour.severeBraking"),
        (#"{"accelerationThreshold": 0}"#, "behaviour.accelerationThreshold"),
        (#"{"severeCornering": 3}"#, "behaviour.severeCornering"),
        (#"{"maximumPairInterval": 0.4}"#, "behaviour.maximumPairInterval"),
        (#"{"minimumTurn": 400}"#, "behaviour.minimumTurn"),
        (#"{"speedLimit": -30}"#, "behaviour.speedLimit"),
        (#"{"minimumUsableShare": 1.5}"#, "behaviour.minimumUsableShare"),
        (#"{"sameEventWindow": -1}"#, "behaviour.sameEventWindow"),
        (#"{"eventsHalvingRate": 0}"#, "behaviour.eventsHalvingRate"),
        (#"{"smoothnessHalvingRMS": -0.7}"#, "behaviour.smoothnessHalvingRMS"),
        (#"{"lateralWeight": -1}"#, "behaviour.lateralWeight"),
    ])
    func aThresholdOutOfItsRangeIsRejectedByName(behaviour: String, field: String) {
        do {
            _ = try decode(#"{"behaviour": \#(behaviour)}"#)
            Issue.record("accepted \(behaviour)")
        } catch let RoadSaveError.invalidConfiguration(named, reason) {
            #expect(named == field && !reason.isEmpty)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func aWrongTypeIsADecodingError() {
        #expect(throws: DecodingError.self) { try decode(#"{"behaviour": {"brakingThreshold": "hard"}}"#) }
        #expect(throws: DecodingError.self) { try decode(#"{"behaviour": 3}"#) }
    }
}
