// E-scooter accelerometer files from ../shared/data: impacts cut with the gateway trigger; a chosen ride context
// (cycling activity, no GPS). The labels are weak: each *crash* file has two staged accidents among disturbances.

import Foundation
import Recordings
import Testing

@Suite("E-scooter recordings", .enabled(if: SharedData.isAvailable, sharedDataAbsent))
struct EscooterRecordingTests {
    static func file(_ name: String) -> URL? { sharedFile("escooter-impacts/data/\(name)") }

    @Test(arguments: ["Crashtest.tsv.gz", "Step&crash.tsv.gz"])
    func crashRunsHoldStrongImpacts(name: String) throws {
        let url = try #require(Self.file(name))
        let recording = try RecordingConverter.escooter(url)
        let objects = checkRecords(recording.lines, app: "recorded", user: recording.user)
        #expect(recording.sourceFile == name)
        #expect(records(objects, kind: "location").isEmpty)
        #expect(records(objects, kind: "activity").map { $0["activity"] as? String } == ["cycling"])
        // Two staged accidents: at least two impacts well above anything riding produces.
        #expect(recording.impacts.filter { $0.peakG > 8 }.count >= 2, "\(recording.impacts.map(\.peakG))")
        #expect(recording.impacts.count == records(objects, kind: "impact").count)
        let accelerometer = try #require(recording.accelerometer)
        #expect((190...230).contains(accelerometer.meanRateHz))
        // The trigger puts the peak at dt = 0 in the window.
        for impact in records(objects, kind: "impact") {
            let samples = impactSamples(impact)
            let atPeak = try #require(samples.min { abs($0[0]) < abs($1[0]) })
            #expect(abs(atPeak[0]) < 1e-4 && abs(magnitude(atPeak) - double(impact, "peakG")!) < 0.01)
        }
        #expect(recording.report.derived.contains { $0.contains("no GPS") })
        #expect(recording.report.notes.contains { $0.contains("weak labels") })
    }

    @Test func normalRideHasNoImpact() throws {
        let url = try #require(Self.file("Normaldrive.tsv.gz"))
        let recording = try RecordingConverter.escooter(url, app: "app-1", user: "rider")
        let objects = checkRecords(recording.lines, app: "app-1", user: "rider")
        #expect(objects.count == 2)
        #expect(recording.impacts.isEmpty)
        #expect((recording.accelerometer?.maxG ?? 0) < 2)
    }
}
