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

    /// Every idle device holds up to `Whereabouts.maximumSamples` samples: each is 32 bytes (the accuracy a Float,
    /// NaN when unknown), its accuracy is written back as it was read, and the array holds no more room than the
    /// samples it can keep (doubled, it held room for 32 where 21 were kept: 500 bytes of a quiet device's 4,100).
    @Test func whereaboutsSamplesAreSmallAndTheirArrayHoldsNoSpareRoomToSpeakOf() throws {
        #expect(MemoryLayout<Whereabouts.Sample>.stride == 32)
        let sharp = Whereabouts.Sample(t: 1_000, latitude: 60.1, longitude: 24.9, accuracy: 3.9)
        #expect(String(decoding: try StreamingJSONEncoder().encode(sharp), as: UTF8.self) == "[1000,60.1,24.9,3.9]")
        #expect(sharp.accuracy.map { abs($0 - 3.9) < 1e-6 } == true)
        let unknown = Whereabouts.Sample(t: 1_000, latitude: 60.1, longitude: 24.9)
        #expect(unknown.accuracy == nil)
        #expect(
            unknown == Whereabouts.Sample(t: 1_000, latitude: 60.1, longitude: 24.9), "no accuracy equals no accuracy")
        #expect(unknown != sharp)

        var whereabouts = Whereabouts()
        var capacities: [Int] = []
        var spareAtTenMinutes = 0
        // An hour of fixes a second: a sample every 30 s, the oldest going after 12 minutes.
        for second in 0..<3600 {
            let fix = AcceptedFix(
                t: Double(second), latitude: 60 + Double(second) * 1e-6, longitude: 25, speed: 0, accuracy: 5,
                isMovement: false)
            whereabouts.add(fix)
            if second == 0 { #expect(whereabouts.samples.capacity == 1, "a device seen once holds room for one") }
            capacities.append(whereabouts.samples.capacity)
            if second == 600 { spareAtTenMinutes = whereabouts.samples.capacity - whereabouts.samples.count }
            #expect(whereabouts.samples.count <= Whereabouts.maximumSamples)
        }
        #expect(capacities.max()! <= Whereabouts.maximumSamples + 1, "\(Set(capacities).sorted())")
        #expect(spareAtTenMinutes < 4, "ten minutes in (21 samples): room for \(spareAtTenMinutes) more")
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
