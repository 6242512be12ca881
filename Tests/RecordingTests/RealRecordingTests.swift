import DetectionEngine
import Foundation
import Logging
import RecordCodecs
import Recordings
import Replay
import RoadSaveModel
import Testing

/// The engines over the real recordings in ../shared/data, converted by the project's converters (each
/// conversion's report says what it derived). These recordings hold no real crash and no driving trip with dense
/// GPS, so they test what must NOT happen: no trip while walking or still, no crash while driving or riding a bus
/// or train, no crash from any phone drop.
@Suite(
    .enabled(
        if: SharedData.isAvailable,
        "../shared/data is absent (a clone outside the RoadSave workspace): real-recording tests skipped"))
struct RealRecordingTests {
    /// Events and platform calls of one replay.
    struct Outcome {
        var events: [RoadSaveEvent] = []
        var evaluations = 0
        var summary = Replayer.Summary()
        var trips: [TripStartInfo] { events.compactMap { if case .tripDidStart(let i) = $0.body { i } else { nil } } }
        var crashes: [CrashInfo] { events.compactMap { if case .crashDetected(let i) = $0.body { i } else { nil } } }
    }

    /// Counts the evaluations the embedded platform is asked for.
    final class CountingPlatform: Platform, @unchecked Sendable {
        let base = EmbeddedPlatform()
        private(set) var evaluations = 0
        func settings(applicationID: String) async throws -> DetectionSettings { DetectionSettings() }
        func evaluate(_ candidate: CrashCandidate) async throws -> CrashVerdict {
            evaluations += 1
            return try await base.evaluate(candidate)
        }
    }

    /// Replays converted lines, which also checks that the converters' output passes the service's validation.
    func replay(_ lines: [String]) async -> Outcome {
        let platform = CountingPlatform()
        let collected = EventBox()
        let replayer = Replayer(platform: platform, log: Log(category: "test", minimumLevel: .error)) {
            collected.events.append($0)
        }
        for (index, line) in lines.enumerated() {
            await replayer.feed(line: Array(line.utf8), number: index + 1)
            // Long CPU-bound loops give the 2-thread cooperative pool back now and then, so tests running beside
            // this one (waiting on timers and processes) are not starved.
            if index % 2000 == 0 { await Task.yield() }
        }
        await replayer.finish()
        var outcome = Outcome()
        outcome.events = collected.events
        outcome.evaluations = platform.evaluations
        outcome.summary = replayer.summary
        #expect(replayer.summary.invalid == 0, "converted records must pass the service's validation")
        return outcome
    }

    final class EventBox: @unchecked Sendable { var events: [RoadSaveEvent] = [] }

    static let transportationFiles = SharedData.files(in: "us-transportation-mode/raw", suffix: ".csv.gz")

    @Test func noTripWhileWalkingOrStill() async throws {
        let files = Self.transportationFiles.filter {
            $0.lastPathComponent.contains("_Walking_") || $0.lastPathComponent.contains("_Still_")
        }
        #expect(files.count == 3)
        for file in files {
            let converted = try RecordingConverter.tmd(file)
            let outcome = await replay(converted.lines)
            #expect(outcome.summary.applied > 0)
            #expect(outcome.events.isEmpty, "\(file.lastPathComponent): \(outcome.events.map(\.name))")
        }
    }

    @Test func noCrashDuringOrdinaryDrivingOrBusAndTrainRides() async throws {
        let files = Self.transportationFiles.filter { name in
            ["_Car_", "_Bus_", "_Train_"].contains { name.lastPathComponent.contains($0) }
        }
        #expect(files.count == 7)
        var impacts = 0
        for file in files {
            let converted = try RecordingConverter.tmd(file)
            impacts += converted.impacts.count
            let outcome = await replay(converted.lines)
            #expect(outcome.crashes.isEmpty, "\(file.lastPathComponent)")
            #expect(outcome.evaluations == 0, "\(file.lastPathComponent): nothing should even reach the platform")
        }
        // Some rides do cross the gateway's 2 g trigger: the crash engine really was exercised.
        #expect(impacts > 0)
    }

    @Test func noCrashFromAnyPhoneDrop() async throws {
        let archive = try #require(SharedData.url("phone-drops/raw_data.tar.gz"))
        let trials = try RecordingConverter.phoneDrops(archive)
        #expect(trials.count == 37)
        var lines: [String] = []
        for trial in trials {
            #expect(!trial.impacts.isEmpty, "\(trial.user): the drop crossed the trigger")
            lines += trial.lines
        }
        // Each trial is its own device; all are replayed together.
        let outcome = await replay(lines)
        #expect(outcome.summary.devices == 37)
        #expect(outcome.crashes.isEmpty)
        #expect(outcome.evaluations == 0)
    }

    @Test func phoneDropsWouldBeCaughtByTheFreeFallRuleAlone() throws {
        // Even in a moving car (where walking context cannot dismiss them), the free fall before each landing
        // marks a drop. Checked on the recorded windows directly.
        let archive = try #require(SharedData.url("phone-drops/raw_data.tar.gz"))
        let settings = DetectionSettings()
        var drops = 0
        for trial in try RecordingConverter.phoneDrops(archive) where trial.user.contains("fall_") {
            let landing = try #require(trial.impacts.max { $0.peakG < $1.peakG })
            let samples = landing.samples.map { ImpactSample(dt: $0.t, x: $0.x, y: $0.y, z: $0.z) }
            #expect(CrashEngineProbe.hasFreeFall(samples, settings: settings), "\(trial.user)")
            drops += 1
        }
        #expect(drops == 22)
    }

    @Test func noFalseTripsFromWalkingCyclingOrStopsInTheTravelDiaries() async throws {
        let files = SharedData.files(in: "cbs-smart-survey-gps/split-by-day", suffix: ".csv.gz")
        #expect(files.count == 13)
        var checkedSegments = 0
        for deriveActivity in [true, false] {
            var tripsStarted = 0
            for file in files {
                let converted = try RecordingConverter.cbs(file, deriveActivity: deriveActivity)
                let outcome = await replay(converted.lines)
                tripsStarted += outcome.trips.count
                let fixes = converted.lines.compactMap { try? RecordDecoding.record(fromJSON: Array($0.utf8)) }
                    .compactMap { record -> (Double, LocationFix)? in
                        if case .location(let fix) = record.payload { (record.t, fix) } else { nil }
                    }
                for segment in converted.diarySegments where segment.stop || ["Walk", "Bike"].contains(segment.mode) {
                    // The diaries have labelling errors (SOURCE.txt: a 12.7 km "Walk"; one day's last "stop"
                    // covers 17 km): a segment is trusted only if its GPS path fits its label.
                    let inside = fixes.filter { $0.0 >= segment.start && $0.0 <= segment.end }
                    // Any five minutes of it moving further than its mode allows marks it as mislabelled.
                    let limitMetres = segment.mode == "Bike" ? 2500.0 : 1000.0
                    let buckets = Dictionary(grouping: inside) { Int(($0.0 - segment.start) / 300) }
                    let mislabelled = buckets.values.contains { bucket in
                        guard let first = bucket.first, let last = bucket.last else { return false }
                        return Self.distance(first.1, last.1) > limitMetres
                    }
                    guard !mislabelled else { continue }
                    checkedSegments += 1
                    // Minute-resolution diary times: a minute's margin at each end.
                    for trip in outcome.trips
                    where trip.startDate > segment.start + 60 && trip.startDate < segment.end - 60 {
                        Issue.record(
                            "\(file.lastPathComponent) (activity derived: \(deriveActivity)): trip at \(ISO8601.string(fromSeconds: trip.startDate)) during a \(segment.stop ? "stop" : segment.mode) segment"
                        )
                    }
                }
                #expect(outcome.crashes.isEmpty)
            }
            // The diaries hold bus, tram, metro and train rides: some of them must be recognised as journeys.
            #expect(tripsStarted > 0, "activity derived: \(deriveActivity)")
        }
        #expect(checkedSegments > 100)
    }

    static func distance(_ a: LocationFix, _ b: LocationFix) -> Double {
        let radians = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * radians
        let dLon = (b.longitude - a.longitude) * radians
        let h =
            sin(dLat / 2) * sin(dLat / 2) + cos(a.latitude * radians) * cos(b.latitude * radians) * sin(dLon / 2)
            * sin(dLon / 2)
        return 2 * 6_371_008.8 * asin(min(1, h.squareRoot()))
    }

    @Test(
        .enabled(
            if: SharedData.has(.envirocar) && SharedData.has(.emission),
            "envirocar-car-tracks or emission-activity-traces is not in ../shared/data: skipped"))
    func carDrivesAndPhoneDaysPassValidationWithoutACrash() async throws {
        // enviroCar tracks (Contains enviroCar data (enviroCar.org), ODbL) and e-mission days have no accelerometer,
        // so nothing may reach the crash path; the replay checks every converted record against the service's rules.
        let tracks = EnvirocarDriveTests.files
        let days = SharedData.files(in: "emission-activity-traces", suffix: ".json.gz")
            .filter { !$0.lastPathComponent.contains("ground_truth") }
        #expect(tracks.count == 112 && days.count == 5)
        for file in tracks {
            let outcome = await replay(try RecordingConverter.envirocar(file).lines)
            #expect(outcome.crashes.isEmpty && outcome.evaluations == 0, "\(file.lastPathComponent)")
        }
        for file in days {
            let outcome = await replay(try RecordingConverter.emission(file).lines)
            #expect(outcome.crashes.isEmpty && outcome.evaluations == 0, "\(file.lastPathComponent)")
        }
    }

    @Test func scooterImpactsAreDecodedAndNotTakenForCarCrashes() async throws {
        let files = SharedData.files(in: "escooter-impacts/data", suffix: ".tsv.gz")
        #expect(files.count == 3)
        for file in files {
            let converted = try RecordingConverter.escooter(file)
            let outcome = await replay(converted.lines)
            if file.lastPathComponent.contains("rash") {
                #expect(converted.impacts.count >= 2, "each crash file holds two accidents")
            }
            #expect(outcome.crashes.isEmpty, "a scooter (cycling context, no GPS) is not a car")
        }
    }
}

/// Reaches the crash engine's free-fall rule, which is internal to the engine module.
enum CrashEngineProbe {
    static func hasFreeFall(_ samples: [ImpactSample], settings: DetectionSettings) -> Bool {
        // The rule is exercised through a session: a strong impact with these samples, in a moving car.
        var session = DeviceSession(device: DeviceID(app: "probe", user: "probe"))
        let t0 = 1_772_433_000.0
        _ = try? session.configure(RoadSaveConfiguration(applicationID: "probe", clientUserID: "probe"), at: t0)
        _ = try? session.startMonitoring(at: t0, fetch: .fetched(settings))
        var actions: [DetectionAction] = []
        let device = DeviceID(app: "probe", user: "probe")
        actions += session.handle(
            SensorRecord(device: device, t: t0, payload: .activity(ActivityObservation(.automotive, .high))))
        for second in 1...30 {
            let fix = LocationFix(
                latitude: -33.9, longitude: 18.4 + Double(second) * 0.00015, speed: 14, horizontalAccuracy: 5)
            actions += session.handle(SensorRecord(device: device, t: t0 + Double(second), payload: .location(fix)))
        }
        actions += session.handle(
            SensorRecord(
                device: device, t: t0 + 30.5,
                payload: .impact(ImpactObservation(peakG: 40, durationMs: 10, samples: samples))))
        actions += session.advance(to: t0 + 3600)
        return actions.contains { if case .crashDismissed(_, .freeFallBeforeImpact) = $0 { true } else { false } }
    }
}
