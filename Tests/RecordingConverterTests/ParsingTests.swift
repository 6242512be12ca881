// Parsing and writing on small in-memory inputs: these run everywhere, with or without ../shared/data.

import Foundation
import RecordCodecs
import Recordings
import RoadSaveModel
import Testing

@Suite("Records and lines")
struct RecordLineTests {
    static let device = DeviceID(app: "app-1", user: "user-1")

    static func record(_ t: Double, _ payload: SensorRecord.Payload, seq: UInt64? = nil) -> SensorRecord {
        SensorRecord(device: device, seq: seq, t: t, payload: payload)
    }

    @Test func stringsAreEscaped() throws {
        let line = SensorRecord(
            device: DeviceID(app: "a\"pp", user: "u\\s\ne\u{1}r"), seq: 0, t: 1_718_708_242,
            payload: .steps(3)
        ).json()
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["app"] as? String == "a\"pp")
        #expect(object["user"] as? String == "u\\s\ne\u{1}r")
        #expect((object["steps"] as? NSNumber)?.intValue == 3)
        #expect(line.contains(#""t":1718708242.000,"#))
    }

    @Test func everyKindHasItsFields() {
        let records = [
            Self.record(
                1_718_708_241, .capabilities(DeviceCapabilities(activityAvailable: true, pedometerAvailable: false))),
            Self.record(1_718_708_242, .location(LocationFix(latitude: 52.1, longitude: 5.1))),
            Self.record(
                1_718_708_243,
                .location(
                    LocationFix(
                        latitude: 44.5, longitude: 11.3, speed: 13.8, course: 90,
                        horizontalAccuracy: 6))),
            Self.record(1_718_708_244, .activity(ActivityObservation(.automotive, .high))),
            Self.record(1_718_708_245, .steps(1180)),
        ]
        let lines = records.enumerated().map { index, record in
            var numbered = record
            numbered.seq = UInt64(index)
            return numbered.json()
        }
        let objects = checkRecords(lines, app: "app-1", user: "user-1")
        #expect(objects.count == 5)
        #expect(objects[1]["speed"] == nil && objects[1]["hacc"] == nil && objects[1]["course"] == nil)
        #expect(
            double(objects[2], "course") == 90 && double(objects[2], "hacc") == 6 && double(objects[2], "speed") == 13.8
        )
        #expect(objects[3]["activity"] as? String == "automotive" && objects[3]["confidence"] as? String == "high")
        #expect(objects[0]["pedometerAvailable"] as? Bool == false)
    }

    @Test func deviceOrderPutsCapabilitiesFirstAndKeepsTiesStable() {
        let ordered = RecordOrder.deviceOrder([
            Self.record(5, .steps(2)),
            Self.record(3, .steps(1)),
            Self.record(5, .activity(ActivityObservation(.walking, .low))),
            Self.record(9, .capabilities(.full)),
        ])
        #expect(ordered.map(\.kind) == [.capabilities, .steps, .steps, .activity])
        #expect(ordered.map(\.t) == [9, 3, 5, 5])
    }

    @Test func aConvertedRecordingsLinesAreItsNumberedRecords() throws {
        let recording = try TMDConverter.convert(
            text: TMDParsingTests.sample, fileName: "sensorfile_Test_Car_1485092954647.csv",
            app: "app-1")
        #expect(recording.records.count == recording.lines.count)
        #expect(recording.records.map(\.seq) == recording.records.indices.map { UInt64($0) })
        #expect(recording.records.allSatisfy { $0.device == recording.device })
        #expect(recording.lines == recording.records.map { $0.json() })
        #expect(recording.records.first?.kind == .capabilities)
    }

    @Test func devicesAreMergedByTimeEachKeepingItsOwnSeq() {
        let a = PhoneDropConverter.convert(
            trial: PhoneDropParsingTests.syntheticDrop(), app: "app-1", user: "a",
            startTime: 1_726_598_000)
        let b = PhoneDropConverter.convert(
            trial: PhoneDropParsingTests.syntheticDrop(), app: "app-1", user: "b",
            startTime: 1_726_598_000.5)
        let merged = RecordOrder.merged([a, b])
        #expect(merged.count == a.lines.count + b.lines.count)
        #expect(merged.filter { $0.contains(#""user":"a""#) } == a.lines)
        #expect(merged.filter { $0.contains(#""user":"b""#) } == b.lines)
        let times = merged.compactMap { try? RecordDecoding.record(fromJSON: Array($0.utf8)).t }
        #expect(times.count == merged.count && times == times.sorted())
    }
}

@Suite("TMD parsing")
struct TMDParsingTests {
    static let sample = """
        10,,0.0,0.0,0.0
        55,activityrecognition,vehicle,56
        60,android.sensor.accelerometer,-0.28,0.65,9.70
        -1903,sound,87.0
        12a,speed,3.0,4.0
        1000,speed,10.0,6.0
        1500,android.sensor.step_counter,1180.0
        1400,android.sensor.accelerometer,0.0,29.42,0.0
        1450,android.sensor.accelerometer,0.0,9.81,0.0
        2000,speed,10.0,5.0
        2100,android.sensor.accelerometer,0.0,oops,0.0
        11000,speed,10.0,4.0
        12000,activityrecognition,tilting,100
        12500,android.sensor.gyroscope,0.1,0.2,0.3
        """

    @Test func readsTheUsedSensorsAndCountsTheRest() {
        let log = TMDConverter.parse(Self.sample)
        #expect(log.speeds.map(\.speed) == [10, 10, 10])
        #expect(log.speeds.map(\.accuracy) == [6, 5, 4])
        #expect(log.activities.map(\.label) == ["vehicle", "tilting"])
        #expect(log.activities.map(\.percent) == [56, 100])
        #expect(log.stepCounts.map(\.ms) == [1500] && log.stepCounts.map(\.steps) == [1180])
        #expect(log.accelerations.count == 3)
        #expect(log.badTimeLines == 2) // -1903 and 12a
        #expect(log.malformedLines == 1) // "oops"
        #expect(log.outOfOrderLines == 1) // 1400 after 1500
        #expect(log.ignoredSensors == ["": 1, "android.sensor.gyroscope": 1])
    }

    @Test func fileNamesGiveTheStartAndLabel() {
        let info = TMDConverter.fileInfo("sensorfile_Damiano_Car_1485092954647.csv.gz")
        #expect(info?.person == "Damiano" && info?.label == "Car" && info?.startMs == 1_485_092_954_647)
        #expect(
            TMDConverter.fileInfo("sensorfile_Andrea_Carpineti_Bus_1482579574027.csv")?.person == "Andrea_Carpineti")
        #expect(TMDConverter.fileInfo("Crashtest.tsv.gz") == nil)
        #expect(TMDConverter.fileInfo("sensorfile_x_Car_notatime.csv.gz") == nil)
    }

    @Test func activityLabelsAndConfidences() {
        #expect(GoogleActivityRecognition.activity(forName: "vehicle") == .automotive)
        #expect(GoogleActivityRecognition.activity(forName: "in_vehicle") == .automotive)
        #expect(GoogleActivityRecognition.activity(forName: "on_foot") == .walking)
        #expect(GoogleActivityRecognition.activity(forName: "walking") == .walking)
        #expect(GoogleActivityRecognition.activity(forName: "running") == .running)
        #expect(GoogleActivityRecognition.activity(forName: "bicycle") == .cycling)
        #expect(GoogleActivityRecognition.activity(forName: "on_bicycle") == .cycling)
        #expect(GoogleActivityRecognition.activity(forName: "still") == .stationary)
        #expect(GoogleActivityRecognition.activity(forName: "tilting") == .unknown)
        #expect(GoogleActivityRecognition.activity(forName: "unknown") == .unknown)
        #expect(GoogleActivityRecognition.confidence(forPercent: 100) == .high)
        #expect(GoogleActivityRecognition.confidence(forPercent: 75) == .high)
        #expect(GoogleActivityRecognition.confidence(forPercent: 74) == .medium)
        #expect(GoogleActivityRecognition.confidence(forPercent: 50) == .medium)
        #expect(GoogleActivityRecognition.confidence(forPercent: 49) == .low)
    }

    @Test func conversionIntegratesSpeedAndCutsImpacts() throws {
        let recording = try TMDConverter.convert(
            text: Self.sample, fileName: "sensorfile_Test_Car_1485092954647.csv.gz",
            app: "app-1")
        #expect(recording.user == "Test_Car_1485092954647")
        #expect(recording.label == "Car")
        let objects = checkRecords(recording.lines, app: "app-1", user: "Test_Car_1485092954647")
        #expect(double(objects[0], "t") == 1_485_092_954.647)
        #expect(objects[0]["pedometerAvailable"] as? Bool == true)

        // 10 m/s for 1 s then for 9 s: 10 m and 100 m east of the origin.
        let locations = records(objects, kind: "location")
        #expect(locations.count == 3)
        let metresPerDegree = 111_195.0 * cos(TMDConverter.origin.lat * .pi / 180)
        let east = locations.map { (double($0, "lon")! - TMDConverter.origin.lon) * metresPerDegree }
        #expect(abs(east[0]) < 0.1 && abs(east[1] - 10) < 0.1 && abs(east[2] - 100) < 0.2)
        #expect(locations.allSatisfy { abs(double($0, "lat")! - TMDConverter.origin.lat) < 1e-5 })
        #expect(locations.map { double($0, "hacc")! } == [6, 5, 4])

        let activities = records(objects, kind: "activity")
        #expect(activities.map { $0["activity"] as? String } == ["automotive", "unknown"])
        #expect(activities.map { $0["confidence"] as? String } == ["medium", "high"])

        // 29.42 m/s² = 3 g at 1.4 s after the start.
        #expect(recording.impacts.count == 1)
        let impact = try #require(records(objects, kind: "impact").first)
        #expect(abs(double(impact, "peakG")! - 29.42 / 9.80665) < 0.001)
        #expect(abs(double(impact, "t")! - 1_485_092_956.047) < 0.0005)
        #expect(
            recording.report.derived.contains {
                $0.contains("integrated from GPS speed") && $0.contains("no coordinates")
            })
        #expect(recording.report.notes.contains { $0.contains("skipped 2 lines with a negative or unreadable time") })
    }

    @Test func badFileNameIsRejected() {
        #expect(throws: RecordingError.self) {
            try TMDConverter.convert(text: Self.sample, fileName: "log.csv")
        }
    }
}

@Suite("CBS parsing")
struct CBSParsingTests {
    static let sample = """
        user_id,timestamp,latitude,longitude,stop,mode
        Utrecht6,2024-06-18T10:57:22Z,52.3359298706055,9.76980972290039,TRUE,""
        Utrecht6,2024-06-18T10:57:22Z,52.3359298706055,9.76980972290039,TRUE,""
        Utrecht6,2024-06-18T10:57:24Z,52.3360939025879,9.77010345458984,TRUE,""
        Utrecht6,2024-06-18T10:58:00Z,52.3363037109375,9.77012252807617,FALSE,Tram
        Utrecht6,2024-06-18T10:58:01Z,52.3364,9.7702,FALSE,Tram
        Utrecht6,not a time,52.3364,9.7702,FALSE,Tram
        Utrecht6,2024-06-18T10:59:00Z,52.3365,9.7703,FALSE,Walk
        Utrecht6,2024-06-18T11:00:00Z,52.3366,9.7704,FALSE,Metro
        """

    @Test func timestamps() {
        #expect(RecordingTime.seconds(from: "2024-06-18T10:57:22Z") == 1_718_708_242)
        #expect(RecordingTime.seconds(from: "2000-02-29T23:59:59Z") == 951_868_799)
        #expect(RecordingTime.seconds(from: "1970-01-01T00:00:00Z") == 0)
        #expect(RecordingTime.seconds(from: "2024-06-18T12:57:22.5+02:00") == 1_718_708_242.5)
        #expect(RecordingTime.seconds(from: "2024-13-18T10:57:22Z") == nil)
        #expect(RecordingTime.seconds(from: "yesterday") == nil)
    }

    @Test func rowsSegmentsAndDuplicates() throws {
        let log = try CBSConverter.parse(Self.sample)
        #expect(log.fixes.count == 7)
        #expect(log.userID == "Utrecht6")
        #expect(log.duplicateTimestamps == 1)
        #expect(log.malformedLines == 1)
        let segments = CBSConverter.segments(log.fixes)
        #expect(segments.map(\.mode) == ["", "Tram", "Walk", "Metro"])
        #expect(segments.map(\.stop) == [true, false, false, false])
        #expect(segments.map(\.pointCount) == [3, 2, 1, 1])
        #expect(segments[1].start == 1_718_708_280 && segments[1].end == 1_718_708_281)
    }

    @Test func conversionWithDerivedActivity() throws {
        let recording = try CBSConverter.convert(
            text: Self.sample, fileName: "ssi_open_geodata-Utrecht6-2024-06-18.csv.gz",
            deriveActivity: true)
        #expect(recording.user == "Utrecht6-2024-06-18")
        let objects = checkRecords(recording.lines, app: "recorded", user: "Utrecht6-2024-06-18")
        let locations = records(objects, kind: "location")
        #expect(locations.count == 7) // the duplicated timestamp is kept
        #expect(locations.allSatisfy { $0["speed"] == nil && $0["course"] == nil && $0["hacc"] == nil })
        let activities = records(objects, kind: "activity")
        #expect(activities.map { $0["activity"] as? String } == ["stationary", "automotive", "walking", "automotive"])
        #expect(activities.map { $0["confidence"] as? String } == ["high", "high", "high", "medium"])
        #expect(objects[0]["activityAvailable"] as? Bool == true)
        #expect(recording.report.derived.contains { $0.contains("derived from the travel-diary labels") })
        #expect(recording.report.notes.contains { $0.contains("1 rows repeat the previous row's timestamp") })

        let plain = try CBSConverter.convert(text: Self.sample, fileName: "x.csv")
        #expect(plain.count(of: .activity) == 0)
        #expect(plain.lines[0].contains("\"activityAvailable\":false"))
    }

    @Test func missingColumnsAreReported() {
        #expect(throws: RecordingError.self) {
            try CBSConverter.convert(text: "a,b,c\n1,2,3\n", fileName: "bad.csv")
        }
    }
}

@Suite("Phone-drop parsing and splicing")
struct PhoneDropParsingTests {
    static let csv = """
        "Time (s)","Acceleration x (m/s^2)","Acceleration y (m/s^2)","Acceleration z (m/s^2)","Absolute acceleration (m/s^2)"
        2.886411400E-2,-8.453674316E-1,-3.825531006E-1,8.939727783E0,8.987754214E0
        3.386899600E-2,0,0,9.80665E0,9.80665E0
        """

    static let timeCSV = """
        "event","experiment time","system time","system time text"
        "START",0.000000000E0,1726598003.904,"2024-09-17 15:33:23.904 UTC-03:00"
        "PAUSE",8.835417705E0,1726598012.739,"2024-09-17 15:33:32.739 UTC-03:00"
        """

    @Test func phyphoxExport() throws {
        let samples = try PhoneDropConverter.parseAccelerometerCSV(Self.csv)
        #expect(samples.count == 2)
        #expect(abs(samples[0].t - 0.028864114) < 1e-12)
        #expect(abs(samples[0].z - 8.939727783 / 9.80665) < 1e-12)
        #expect(abs(samples[1].magnitude - 1) < 1e-12)
        #expect(PhoneDropConverter.parseStartTime(Self.timeCSV) == 1_726_598_003.904)
        #expect(PhoneDropConverter.kind(ofTrial: "fall_3") == .drop)
        #expect(PhoneDropConverter.kind(ofTrial: "up_and_down_7") == .toss)
        #expect(throws: RecordingError.self) { try PhoneDropConverter.parseAccelerometerCSV("a,b\n1,2\n") }
    }

    /// A synthetic drop: 1 g held still, 0.6 s free fall, a 17 g spike, then lying still; 200 Hz.
    static func syntheticDrop() -> PhoneDropTrial {
        var samples: [Double] = []
        for i in 0..<1000 {
            let t = Double(i) / 200
            samples.append(t < 2 ? 1 : t < 2.6 ? 0.05 : t < 2.62 ? 17 : 1)
        }
        return PhoneDropTrial(
            name: "fall_99", kind: .drop, recordedStart: 1_726_598_003.904,
            samples: samples.enumerated().map {
                PhoneDropTrial.Sample(t: Double($0.offset) / 200, x: 0, y: 0, z: $0.element)
            })
    }

    @Test func dropIsSplicedIntoAWalk() throws {
        let recording = PhoneDropConverter.convert(trial: Self.syntheticDrop(), app: "app-1")
        let objects = checkRecords(recording.lines, app: "app-1", user: "fall_99")
        #expect(objects[0]["activityAvailable"] as? Bool == true && objects[0]["pedometerAvailable"] as? Bool == true)
        let impacts = records(objects, kind: "impact")
        #expect(impacts.count == 1)
        #expect(abs(double(impacts[0], "peakG")! - 17) < 1e-3)
        #expect(abs(double(impacts[0], "t")! - (1_726_598_003.904 + 2.6)) < 0.001)

        let locations = records(objects, kind: "location")
        #expect(locations.count > 100)
        #expect(locations.allSatisfy { (0...1.4).contains(double($0, "speed")!) })
        #expect(
            locations.allSatisfy {
                abs(double($0, "lat")! - PhoneDropConverter.place.lat) < 1e-4
                    && abs(double($0, "lon")! - PhoneDropConverter.place.lon) < 1e-4
            })
        let steps = records(objects, kind: "steps").map { double($0, "steps")! }
        #expect(steps.count >= 3 && steps == steps.sorted())
        let activities = records(objects, kind: "activity").map { $0["activity"] as? String }
        #expect(activities == ["walking", "stationary", "walking"])
        #expect(recording.report.derived.contains { $0.contains("spliced into a chosen non-driving context") })

        // The context is seeded by the trial name: converting twice gives the same lines.
        #expect(PhoneDropConverter.convert(trial: Self.syntheticDrop(), app: "app-1").lines == recording.lines)
        // A chosen start time moves everything.
        let moved = PhoneDropConverter.convert(trial: Self.syntheticDrop(), startTime: 1_000_000)
        #expect(abs(moved.impacts[0].t - 1_000_002.6) < 0.001)
    }
}

@Suite("E-scooter parsing")
struct EscooterParsingTests {
    static let sample = """
        1\t1644404710453\t0.299\t9.952\t-0.581\t9febcrash
        2\t1644404710454\t0.282\t9.921\t-0.55\t9febcrash
        3\t1644404710454\t0.0\t49.03\t0.0\t9febcrash
        4\tbad\t0.0\t9.8\t0.0\t9febcrash
        5\t1644404710460\t0.0\t9.8\t0.0\t9febcrash
        """

    @Test func tabSeparatedRows() throws {
        let log = EscooterConverter.parse(Self.sample)
        #expect(log.samples.count == 4)
        #expect(log.tag == "9febcrash")
        #expect(log.malformedLines == 1)
        #expect(log.repeatedTimes == 1)
        #expect(log.samples[0].t == 1_644_404_710.453)

        let recording = try EscooterConverter.convert(text: Self.sample, fileName: "Step&crash.tsv.gz")
        #expect(recording.user == "escooter-Step-crash")
        let objects = checkRecords(recording.lines, app: "recorded", user: "escooter-Step-crash")
        #expect(records(objects, kind: "location").isEmpty)
        #expect(records(objects, kind: "activity").map { $0["activity"] as? String } == ["cycling"])
        #expect(recording.impacts.count == 1 && abs(recording.impacts[0].peakG - 5) < 0.01)
        #expect(recording.report.derived.contains { $0.contains("no GPS") })
    }
}
