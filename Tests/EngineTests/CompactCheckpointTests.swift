import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// The checkpoint forms that cost the encoder no allocation per value (arrays, not objects: issue 46), and the forms
/// checkpoints written before them hold, which must still load.
@Suite struct CompactCheckpointTests {
    static let device = DeviceID(app: "demo-app", user: "user-7")

    /// One record of each kind, with the optional fields of a fix both present and absent.
    static let records: [SensorRecord] = [
        SensorRecord(
            device: device, seq: 1, t: 1_000.25,
            payload: .location(
                LocationFix(latitude: 60.1, longitude: 24.9, speed: 12.5, course: 270, horizontalAccuracy: 4))),
        SensorRecord(
            device: device, seq: nil, t: 1_001, payload: .location(LocationFix(latitude: -33.9, longitude: 18.4))),
        SensorRecord(device: device, seq: 3, t: 1_002, payload: .activity(ActivityObservation(.automotive, .high))),
        SensorRecord(device: device, seq: 4, t: 1_003, payload: .steps(1_234)),
        SensorRecord(
            device: device, seq: 5, t: 1_004,
            payload: .capabilities(DeviceCapabilities(activityAvailable: true, pedometerAvailable: false))),
    ]

    static func ordering(holding records: [SensorRecord]) -> RecordOrdering {
        var ordering = RecordOrdering(options: .init(window: 60, sequenceMemory: 100))
        for record in records { #expect(ordering.insert(record).rejected.isEmpty) }
        return ordering
    }

    @Test func theOrderingBufferIsWrittenAsArraysAndReadBackTheSame() throws {
        var ordering = Self.ordering(holding: Self.records)
        let data = try StreamingJSONEncoder().encode(ordering)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#""bufferDevice":{"app":"demo-app","user":"user-7"}"#))
        #expect(text.contains(#"[1,1000.25,"location",60.1,24.9,12.5,270,4]"#))
        #expect(text.contains(#"[null,1001,"location",-33.9,18.4,null,null,null]"#))
        #expect(text.contains(#"[3,1002,"activity","automotive","high"]"#))
        #expect(!text.contains(#""buffer":"#))
        var copy = try JSONDecoder().decode(RecordOrdering.self, from: Data(data))
        #expect(copy.flush() == ordering.flush())
    }

    @Test func aCheckpointWithTheBufferAsRecordsStillLoads() throws {
        var ordering = Self.ordering(holding: Self.records)
        // As checkpoints before the compact form wrote it: the records themselves under "buffer".
        var object = try #require(
            JSONSerialization.jsonObject(with: Data(try StreamingJSONEncoder().encode(ordering))) as? [String: Any])
        object["bufferDevice"] = nil
        object["bufferRecords"] = nil
        object["buffer"] = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.records))
        var copy = try JSONDecoder().decode(
            RecordOrdering.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(copy.flush() == ordering.flush())
    }

    @Test func aBufferOfMoreThanOneDeviceKeepsTheRecordsWhole() throws {
        var mixed = Self.records
        mixed[1].device = DeviceID(app: "demo-app", user: "someone-else")
        var ordering = Self.ordering(holding: mixed)
        let data = try StreamingJSONEncoder().encode(ordering)
        #expect(String(decoding: data, as: UTF8.self).contains(#""buffer":"#))
        var copy = try JSONDecoder().decode(RecordOrdering.self, from: Data(data))
        #expect(copy.flush() == ordering.flush())
    }

    @Test func whereaboutsSamplesAreArraysAndTheObjectsOfBeforeStillLoad() throws {
        let sample = Whereabouts.Sample(t: 1_000, latitude: 60.1, longitude: 24.9, accuracy: 4.5)
        let data = try StreamingJSONEncoder().encode([
            sample, Whereabouts.Sample(t: 1_030, latitude: 60, longitude: 25),
        ])
        #expect(String(decoding: data, as: UTF8.self) == "[[1000,60.1,24.9,4.5],[1030,60,25]]")
        #expect(try JSONDecoder().decode([Whereabouts.Sample].self, from: Data(data))[0] == sample)
        let before = #"[{"t":1000,"latitude":60.1,"longitude":24.9}]"#
        let old = try JSONDecoder().decode([Whereabouts.Sample].self, from: Data(before.utf8))
        #expect(old == [Whereabouts.Sample(t: 1_000, latitude: 60.1, longitude: 24.9)])
    }

    @Test func anEncoderThatKeepsItsBuffersWritesEachValueAlone() throws {
        // The second value is shorter than the first: nothing of the first may be left in it.
        let encoder = StreamingJSONEncoder(reusing: DetectionSettings.self)
        let long = try encoder.encode(Self.ordering(holding: Self.records))
        let short = try encoder.encode(Whereabouts.Sample(t: 1, latitude: 2, longitude: 3))
        #expect(String(decoding: short, as: UTF8.self) == "[1,2,3]")
        #expect(try encoder.encode(Self.ordering(holding: Self.records)) == long)
    }
}
