// US-TransportationMode logs from ../shared/data. Positions are derived (speed integrated along a fixed bearing) and
// impacts are cut with the gateway trigger; the rest is read straight from the logs.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("TMD recordings", .enabled(if: SharedData.isAvailable, sharedDataAbsent))
struct TMDRecordingTests {
    static let folder = "us-transportation-mode/raw"

    static func files(label: String) -> [URL] {
        SharedData.files(in: folder, suffix: ".csv.gz").filter {
            TMDConverter.fileInfo($0.lastPathComponent)?.label == label
        }
    }

    @Test func everyFileConvertsToValidRecords() throws {
        let files = SharedData.files(in: Self.folder, suffix: ".csv.gz")
        #expect(files.count == 10)
        for file in files {
            let recording = try RecordingConverter.tmd(file)
            let info = try #require(TMDConverter.fileInfo(file.lastPathComponent))
            #expect(recording.label == info.label)
            checkRecords(recording.lines, app: "recorded", user: recording.user)
            #expect(recording.report.text.contains("label \(info.label)"))
            #expect(
                recording.report.notes.contains { $0.contains("negative or unreadable time") },
                "every log has sound lines with negative times, which are skipped and counted")
            // Gravity alone is 1 g: a summary far from it would mean the m/s² → g conversion is wrong.
            let accelerometer = try #require(recording.accelerometer)
            #expect(accelerometer.sampleCount > 900)
            #expect((1.0...3.5).contains(accelerometer.maxG), "\(file.lastPathComponent): max \(accelerometer.maxG) g")
            #expect((1...30).contains(accelerometer.meanRateHz))
            #expect(recording.impacts.count == recording.count(of: .impact))
        }
    }

    @Test func carFilesHaveDrivingSpeedsAndNoFootActivity() throws {
        let cars = Self.files(label: "Car")
        #expect(cars.count == 3)
        var automotiveHigh = 0
        for file in cars {
            let recording = try RecordingConverter.tmd(file, app: "app-1", user: "driver")
            let objects = checkRecords(recording.lines, app: "app-1", user: "driver")
            let locations = records(objects, kind: "location")
            #expect(locations.count >= 3, "\(file.lastPathComponent)")
            let speeds = locations.compactMap { double($0, "speed") }
            #expect(speeds.allSatisfy { (0...60).contains($0) }, "\(file.lastPathComponent): \(speeds)")
            #expect(speeds.max()! > 8, "\(file.lastPathComponent): a drive reaches more than 8 m/s")
            #expect(locations.allSatisfy { double($0, "course") == TMDConverter.bearing && double($0, "hacc") != nil })
            // Integrated positions run east, never back.
            let lons = locations.compactMap { double($0, "lon") }
            #expect(lons == lons.sorted())
            let activities = records(objects, kind: "activity").compactMap { $0["activity"] as? String }
            #expect(
                activities.allSatisfy { $0 == "automotive" || $0 == "unknown" },
                "\(file.lastPathComponent): \(activities)")
            automotiveHigh +=
                records(objects, kind: "activity").filter {
                    $0["activity"] as? String == "automotive" && $0["confidence"] as? String == "high"
                }.count
            #expect(
                recording.report.derived.contains {
                    $0.contains("integrated from GPS speed along a fixed bearing") && $0.contains("no coordinates")
                })
        }
        #expect(automotiveHigh >= 2, "the recogniser said vehicle with high confidence in the car logs")
    }

    @Test func walkingFilesHaveStepsAndWalkingSpeeds() throws {
        let walks = Self.files(label: "Walking")
        #expect(walks.count == 2)
        for file in walks {
            let recording = try RecordingConverter.tmd(file)
            let objects = checkRecords(recording.lines, app: "recorded", user: recording.user)
            #expect(objects[0]["pedometerAvailable"] as? Bool == true)
            let steps = records(objects, kind: "steps").compactMap { double($0, "steps") }
            #expect(steps.count >= 5)
            #expect(steps == steps.sorted(), "step_counter is cumulative")
            #expect(steps.last! - steps.first! > 100)
            let speeds = records(objects, kind: "location").compactMap { double($0, "speed") }
            #expect(!speeds.isEmpty && speeds.allSatisfy { (0...2.5).contains($0) })
            #expect(recording.report.derived.contains { $0.contains("pedometerAvailable true") })
        }
    }

    @Test func ridesWithoutAPedometerSayWhy() throws {
        for label in ["Car", "Bus", "Train", "Still"] {
            for file in Self.files(label: label) {
                let recording = try RecordingConverter.tmd(file)
                #expect(recording.lines[0].contains("\"pedometerAvailable\":false"))
                #expect(recording.report.derived.contains { $0.contains("no android.sensor.step_counter lines") })
                #expect(recording.count(of: .steps) == 0)
            }
        }
    }

    @Test func stillFileIsStationary() throws {
        let file = try #require(Self.files(label: "Still").first)
        let objects = checkRecords(
            try RecordingConverter.tmd(file).lines, app: "recorded",
            user: "Damiano_Still_1484659419340")
        let activities = records(objects, kind: "activity")
        #expect(!activities.isEmpty && activities.allSatisfy { $0["activity"] as? String == "stationary" })
        #expect(records(objects, kind: "impact").isEmpty)
    }
}
