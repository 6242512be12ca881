// Every line is a PROTOCOL §2 record with exactly the fields of its kind, in range.

import Foundation
import Simulator
import Testing

@Suite struct RecordFormat {
    static let common: Set<String> = ["kind", "app", "user", "seq", "t"]
    static let fields: [String: Set<String>] = [
        "capabilities": ["activityAvailable", "pedometerAvailable"],
        "location": ["lat", "lon", "speed", "hacc"],
        "activity": ["activity", "confidence"],
        "steps": ["steps"],
        "impact": ["peakG", "durationMs", "samples"],
    ]

    @Test func everyLineParsesWithTheFieldsOfItsKind() throws {
        let run = Fixture.mix
        #expect(run.records.count == run.lines.count)
        for record in run.records {
            let expected = try #require(Self.fields[record.kind], "unknown kind \(record.kind)")
            var keys = record.keys
            if record.kind == "location" { keys.remove("course") }
            #expect(keys == Self.common.union(expected), "\(record.line)")
            #expect(record.app == "demo-app")
            #expect(record.user.hasPrefix("user-0"))
        }
    }

    @Test func valuesAreInRange() {
        let activities: Set<String> = ["automotive", "walking", "running", "cycling", "stationary", "unknown"]
        for record in Fixture.mix.records + Fixture.crashes.records + Fixture.drops.records {
            switch record.kind {
            case "location":
                #expect((-90...90).contains(record.lat!) && (-180...180).contains(record.lon!))
                #expect(record.speed! == -1 || (0...34).contains(record.speed!), "\(record.line)")
                #expect(record.hacc! == -1 || (3...65).contains(record.hacc!), "\(record.line)")
                if let course = record.course { #expect(course >= 0 && course < 360) }
                // Standing still (speed 0) or unknown: no course.
                if record.speed! <= 0 { #expect(record.course == nil) }
            case "activity":
                #expect(activities.contains(record.activity!))
                #expect(["low", "medium", "high"].contains(record.confidence!))
            case "steps":
                #expect(record.steps! >= 0)
            case "impact":
                #expect(record.peakG! > 2 && record.durationMs! > 0)
                let samples = record.samples!
                #expect(samples.allSatisfy { $0.count == 4 })
                #expect(samples.first![0] >= -1.0 && samples.first![0] < -0.98)
                #expect(samples.last![0] <= 2.0 && samples.last![0] > 1.98)
                // The peak is the sample at dt 0.
                let peak = samples.first { $0[0] == 0 }
                #expect(peak.map { abs(magnitude($0) - record.peakG!) < 0.01 } == true, "\(record.peakG!)")
            default:
                break
            }
        }
    }

    @Test func numbersHaveTheAgreedPrecision() throws {
        let time = try Regex(#""t":\d{10}\.\d{3},"#)
        let position = try Regex(#""lat":-?\d+\.\d{7},"lon":-?\d+\.\d{7},"speed":(-1|\d+\.\d{2}),"#)
        for line in Fixture.mix.lines.prefix(5000) {
            #expect(line.contains(time), "\(line)")
            if line.contains("\"kind\":\"location\"") { #expect(line.contains(position), "\(line)") }
        }
    }

    @Test func eachDeviceStartsWithCapabilitiesAndNumbersItsRecords() {
        for run in [Fixture.mix, Fixture.crashes] {
            for device in run.truth {
                let records = run.records(of: device.user)
                #expect(records.first?.kind == "capabilities")
                #expect(records.first?.line.contains("\"activityAvailable\":\(device.activityAvailable)") == true)
                #expect(records.first?.line.contains("\"pedometerAvailable\":\(device.pedometerAvailable)") == true)
                #expect(records.map(\.seq) == Array(0..<records.count))
                #expect(zip(records, records.dropFirst()).allSatisfy { $0.t <= $1.t })
                #expect(records.first?.t == device.firstRecordT && records.last?.t == device.lastRecordT)
            }
        }
    }

    @Test func outputIsOrderedByTimeAcrossDevicesAndStartsAreStaggered() {
        let records = Fixture.mix.records
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.ms <= $1.ms })
        let starts = Set(Fixture.mix.truth.map(\.firstRecordT))
        #expect(starts.count > 1)
        #expect(starts.allSatisfy { $0 >= Fixture.mix.options.start && $0 < Fixture.mix.options.start + 180 })
    }

    @Test func everyRecordIsWithinTheSimulatedTime() {
        let options = Fixture.mix.options
        let end = options.start + options.durationMinutes * 60
        #expect(Fixture.mix.records.allSatisfy { $0.t >= options.start && $0.t < end + 3 })
    }
}
