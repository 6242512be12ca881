// Phone drops and tosses from ../shared/data: each trial's impacts are cut with the gateway trigger from the real
// accelerometer stream and spliced into a chosen walking/standing context (the recording has nothing but the
// accelerometer).

import Foundation
import Recordings
import Testing

/// Unpacking the archive runs tar and one python3 per trial; it is done once for all tests.
enum PhoneDropFixture {
    static let trials: Result<[PhoneDropTrial], any Error> = Result {
        guard let archive = SharedData.url("phone-drops/raw_data.tar.gz") else { return [] }
        return try PhoneDropConverter.readTrials(archive: archive)
    }

    static func load() throws -> [PhoneDropTrial] { try trials.get() }
}

@Suite("Phone-drop recordings", .enabled(if: SharedData.isAvailable, sharedDataAbsent))
struct PhoneDropRecordingTests {
    @Test func archiveHolds22DropsAnd15Tosses() throws {
        let trials = try PhoneDropFixture.load()
        #expect(trials.filter { $0.kind == .drop }.count == 22)
        #expect(trials.filter { $0.kind == .toss }.count == 15)
        #expect(trials.first?.name == "fall_1" && trials[1].name == "fall_2")
        for trial in trials {
            #expect(trial.recordedStart != nil, "\(trial.name) has a START time")
            #expect(trial.samples.count > 600, "\(trial.name)")
            let rate = Double(trial.samples.count - 1) / (trial.samples.last!.t - trial.samples.first!.t)
            #expect((190...210).contains(rate), "\(trial.name): \(rate) Hz")
        }
    }

    /// What `convert`'s progress line counts: 0 of the trials before the first, then each trial read.
    @Test func eachTrialReadIsReported() throws {
        let archive = try #require(SharedData.url("phone-drops/raw_data.tar.gz"))
        var calls: [[Int]] = []
        let trials = try PhoneDropConverter.readTrials(archive: archive, only: "fall_3") { calls.append([$0, $1]) }
        #expect(trials.map(\.name) == ["fall_3"])
        #expect(calls == [[0, 1], [1, 1]])
    }

    /// The raw peaks agree with trials_summary_derived.csv, computed independently beside the data.
    @Test func rawPeaksMatchTheTrialSummary() throws {
        let url = try #require(sharedFile("phone-drops/trials_summary_derived.csv"))
        let summary = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").dropFirst().map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        let peaks = Dictionary(uniqueKeysWithValues: summary.map { ($0[0], Double($0[10]) ?? 0) })
        let trials = try PhoneDropFixture.load()
        #expect(peaks.count == trials.count)
        for trial in trials {
            let expected = try #require(peaks[trial.name])
            let peak = trial.samples.map(\.magnitude).max()!
            #expect(abs(peak - expected) < 0.1, "\(trial.name): \(peak) g vs \(expected) g")
        }
    }

    @Test func everyDropHasAFreeFallThenAnImpact() throws {
        let drops = try PhoneDropFixture.load().filter { $0.kind == .drop }
        #expect(drops.count == 22)
        for trial in drops {
            let recording = PhoneDropConverter.convert(trial: trial)
            let objects = checkRecords(recording.lines, app: "recorded", user: trial.name)
            let impacts = records(objects, kind: "impact")
            let landing = impacts.filter { (10...30).contains(double($0, "peakG")!) }
            #expect(
                !landing.isEmpty, "\(trial.name): an impact of 10–30 g among \(impacts.map { double($0, "peakG")! })")
            guard let impact = landing.first else { continue }
            #expect(
                Self.longestFreeFall(before: impactSamples(impact)) >= 0.3, "\(trial.name): free fall before the peak")
            let t = double(impact, "t")!
            #expect(
                t > trial.recordedStart! && t < trial.recordedStart! + trial.samples.last!.t,
                "\(trial.name): the impact lies inside the trial's own time")
        }
    }

    /// Longest run of samples with |a| < 0.3 g before the peak (dt < 0), in seconds.
    static func longestFreeFall(before samples: [[Double]]) -> Double {
        var longest = 0.0
        var runStart: Double?
        for sample in samples where sample[0] < 0 {
            if magnitude(sample) < 0.3 {
                if runStart == nil { runStart = sample[0] }
                longest = max(longest, sample[0] - runStart!)
            } else {
                runStart = nil
            }
        }
        return longest
    }

    @Test func tossesAlsoLandHard() throws {
        for trial in try PhoneDropFixture.load().filter({ $0.kind == .toss }) {
            let recording = PhoneDropConverter.convert(trial: trial)
            #expect(recording.impacts.contains { $0.peakG > 10 }, "\(trial.name)")
            #expect(recording.report.derived.first?.hasPrefix("toss spliced") == true)
        }
    }

    @Test func contextIsAPersonOnFoot() throws {
        let trial = try #require(try PhoneDropFixture.load().first { $0.name == "fall_3" })
        let recording = PhoneDropConverter.convert(trial: trial, app: "app-1", user: "tester")
        let objects = checkRecords(recording.lines, app: "app-1", user: "tester")
        #expect(objects[0]["activityAvailable"] as? Bool == true && objects[0]["pedometerAvailable"] as? Bool == true)
        #expect(
            records(objects, kind: "activity").map { $0["activity"] as? String } == [
                "walking", "stationary", "walking",
            ])
        let locations = records(objects, kind: "location")
        let times = locations.map { double($0, "t")! }
        #expect(zip(times.dropFirst(), times).allSatisfy { abs($0 - $1 - 1) < 1e-6 }, "1 Hz fixes")
        #expect(locations.allSatisfy { (0...1.4).contains(double($0, "speed")!) })
        let steps = records(objects, kind: "steps").map { double($0, "steps")! }
        #expect(steps.count >= 3 && steps == steps.sorted())
        // The spliced impact sits where the drop happened: recorded START + the trial's own impact time (3.313 s,
        // trials_summary_derived.csv).
        let peak = recording.impacts.max { $0.peakG < $1.peakG }!
        #expect(abs(peak.t - (trial.recordedStart! + 3.313)) < 0.05)
        let report = recording.report
        #expect(report.derived.contains { $0.contains("spliced into a chosen non-driving context") })
        #expect(report.derived.contains { $0.contains("ImpactTrigger") })
    }

    @Test func oneTrialOrAllFromTheArchive() throws {
        let archive = try #require(sharedFile("phone-drops/raw_data.tar.gz"))
        let one = try RecordingConverter.phoneDrops(archive, app: "app-1", trial: "up_and_down_7")
        #expect(one.count == 1 && one[0].user == "up_and_down_7" && one[0].label == "up_and_down_7")
        #expect(one[0].sourceFile == "raw_data.tar.gz/up_and_down_7")
        #expect(throws: RecordingError.self) { try RecordingConverter.phoneDrops(archive, trial: "fall_99") }
    }
}
