import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel

/// `roadsave-bench engines FILE.ndjson`: the per-device engines alone (ordering, session, trip, ride, whereabouts,
/// crash, GPS) on records decoded beforehand, and the memory a device costs in the states the issue names. The
/// baseline, measured in the same run, is the floor of any per-device dispatch: each record's device hashed into a
/// dictionary.
enum EngineBench {
    static let usage = """
        Usage: roadsave-bench engines FILE.ndjson [--runs N] [--devices N] [--json FILE]

        Decodes every record of FILE first (not timed), then times DeviceFleet over them (auto-monitor with the
        embedded platform's settings and evaluator, as replay does, events built and counted) and prints ns a record
        and records a second, the best of N runs (default 3), against a loop that only counts each record's device in
        a dictionary. Then measures the heap a device holds (glibc mallinfo2, N scripted devices per state, default
        10000): idle and quiet (no trip, no pending crash, reorder buffer released), idle while still sending,
        mid-trip while sending, and announced (a capabilities record and a parked fix through a gateway, released
        by its watermark: the idle devices of detection's memory benchmark). --json FILE writes the figures as a
        JSON list for `make bench`.
        """

    static func run(arguments: [String]) throws {
        guard let options = BenchArguments.read(arguments, usage: usage) else { return }
        let path = options.path
        let runs = max(1, options.value(of: "--runs").flatMap(Int.init) ?? 3)
        let deviceCount = max(1, options.value(of: "--devices").flatMap(Int.init) ?? 10_000)
        let jsonPath = options.value(of: "--json")

        guard let data = FileManager.default.contents(atPath: path) else {
            FileHandle.standardError.write(Data("roadsave-bench: cannot read \(path)\n".utf8))
            exit(2)
        }
        var records: [SensorRecord] = []
        var invalid = 0
        for line in data.split(separator: 0x0A) {
            if let record = try? RecordDecoding.record(fromJSON: [UInt8](line)) {
                records.append(record)
            } else {
                invalid += 1
            }
        }
        print("file: \(path), \(records.count) records decoded (\(invalid) invalid lines), not timed")

        var figures: [BenchFigure] = []
        // Best of the runs, on the wall clock and on the thread's CPU clock (the machine may be shared: CPU time
        // leaves out the time other processes had the core).
        var baselineBest = Timing(wall: .infinity, cpu: .infinity)
        var fleetBest = Timing(wall: .infinity, cpu: .infinity)
        var eventCount = 0
        for run in 1...runs {
            let baseline = timed { _ = dispatchFloor(records) }
            var events = 0
            let fleetTime = timed { events = replay(records) }
            eventCount = events
            baselineBest = baselineBest.best(baseline)
            fleetBest = fleetBest.best(fleetTime)
            print(
                "run \(run): fleet \(nanos(fleetTime.wall, records.count)) ns/record (CPU \(nanos(fleetTime.cpu, records.count))), baseline \(nanos(baseline.wall, records.count)) ns/record (CPU \(nanos(baseline.cpu, records.count)))"
            )
        }
        let perRecord = 1e9 / Double(records.count)
        let (fleetNs, fleetCPU) = (fleetBest.wall * perRecord, fleetBest.cpu * perRecord)
        let (baselineNs, baselineCPU) = (baselineBest.wall * perRecord, baselineBest.cpu * perRecord)
        print(
            "baseline  device hashed into a dictionary: \(String(format: "%.1f", baselineNs)) ns/record (CPU \(String(format: "%.1f", baselineCPU))), \(formatted(1e9 / baselineNs)) records/s"
        )
        print(
            "engines   DeviceFleet.receive+finish:      \(String(format: "%.1f", fleetNs)) ns/record (CPU \(String(format: "%.1f", fleetCPU))), \(formatted(1e9 / fleetNs)) records/s (\(String(format: "%.1f", fleetNs / baselineNs))x baseline), \(eventCount) events; target <= 300 ns/record"
        )
        figures.append(
            BenchFigure(
                figure: "engines", value: fleetNs, unit: "ns/record", baseline: "device hashed into a dictionary",
                baselineValue: baselineNs, target: "<= 300"))
        figures.append(
            BenchFigure(
                figure: "engines (thread CPU time)", value: fleetCPU, unit: "ns/record",
                baseline: "device hashed into a dictionary", baselineValue: baselineCPU, target: "<= 300"))
        figures.append(
            BenchFigure(
                figure: "engines rate", value: 1e9 / fleetNs, unit: "records/s",
                baseline: "device hashed into a dictionary", baselineValue: 1e9 / baselineNs, target: nil))

        let floor = bytesPerDevice(deviceCount) { devices in
            var index: [DeviceID: Int] = [:]
            for number in 0..<devices { index[scriptDevice(number)] = number }
            return index
        }
        print(
            "memory    inline per device: FleetDeviceState \(MemoryLayout<FleetDeviceState>.stride) bytes, SensorRecord \(MemoryLayout<SensorRecord>.stride), AcceptedFix \(MemoryLayout<AcceptedFix>.stride)"
        )
        for state in DeviceScript.allCases {
            let (bytes, check) = memoryPerDevice(state, devices: deviceCount)
            let target = state == .midTrip ? 16_384 : 4_096
            print(
                "memory    \(state.title): \(formatted(bytes)) bytes/device (\(check)); dictionary entry alone \(formatted(floor)); target <= \(target)"
            )
            figures.append(
                BenchFigure(
                    figure: "device memory \(state.title)", value: bytes, unit: "bytes/device",
                    baseline: "DeviceID in a dictionary", baselineValue: floor, target: "<= \(target)"))
        }
        let (announced, check) = memoryPerAnnouncedDevice(devices: deviceCount)
        print(
            "memory    announced: \(formatted(announced)) bytes/device (\(check)); dictionary entry alone \(formatted(floor))"
        )
        figures.append(
            BenchFigure(
                figure: "device memory announced", value: announced, unit: "bytes/device",
                baseline: "DeviceID in a dictionary", baselineValue: floor, target: nil))

        if let jsonPath {
            do {
                try BenchFigure.write(figures, to: jsonPath)
            } catch {
                FileHandle.standardError.write(Data("roadsave-bench: cannot write \(jsonPath): \(error)\n".utf8))
                exit(2)
            }
        }
    }

    // MARK: Time

    /// The floor of any per-device work: find the device's slot in a dictionary.
    @inline(never)
    static func dispatchFloor(_ records: [SensorRecord]) -> Int {
        var counts: [DeviceID: Int] = [:]
        for record in records { counts[record.device, default: 0] += 1 }
        return counts.count
    }

    /// The fleet over the records, platform calls answered at once by the embedded platform (as replay does).
    @inline(never)
    static func replay(_ records: [SensorRecord]) -> Int {
        var driver = EngineBenchShell()
        for record in records { driver.receive(record, now: nil) }
        driver.finish()
        return driver.events
    }

    // MARK: Memory

    enum DeviceScript: CaseIterable {
        case idleQuiet, idleSending, midTrip

        var title: String {
            switch self {
            case .idleQuiet: "idle quiet"
            case .idleSending: "idle sending"
            case .midTrip: "mid-trip"
            }
        }
    }

    static func scriptDevice(_ number: Int) -> DeviceID {
        DeviceID(app: "demo-app", user: "user-\(String(format: "%06d", number))")
    }

    /// Heap bytes in use after `build` made `devices` devices (its result kept alive), less before, per device.
    static func bytesPerDevice<T>(_ devices: Int, _ build: (Int) -> T) -> Double {
        let before = heapInUse()
        let built = build(devices)
        let after = heapInUse()
        withExtendedLifetime(built) {}
        return (Double(after) - Double(before)) / Double(devices)
    }

    /// Devices built by a script of ten minutes of 1 Hz records (location, activity, steps), as the simulator sends.
    static func memoryPerDevice(_ state: DeviceScript, devices: Int) -> (Double, String) {
        var inTrip = 0
        var pendingCalls = 0
        var buffered = 0
        let bytes = bytesPerDevice(devices) { devices -> EngineBenchShell in
            var driver = EngineBenchShell()
            let start = 1_772_433_000.0
            var lastTime = start
            for number in 0..<devices {
                let device = scriptDevice(number)
                // Each device a little apart, so the fleet's state is not the same number everywhere.
                let latitude0 = -33.9 + Double(number % 100) * 0.001
                let longitude0 = 18.4 + Double(number / 100) * 0.001
                driver.receive(
                    SensorRecord(device: device, seq: 0, t: start, payload: .capabilities(.full)), now: start)
                var seq: UInt64 = 1
                for second in 0..<600 {
                    let t = start + Double(second) + 0.125
                    lastTime = max(lastTime, t)
                    func send(_ payload: SensorRecord.Payload) {
                        driver.receive(SensorRecord(device: device, seq: seq, t: t, payload: payload), now: t)
                        seq += 1
                    }
                    let jitter = Double((second * 7919 + number * 104_729) % 11) - 5
                    switch state {
                    case .idleQuiet, .idleSending:
                        // Three minutes' walk, then seven at rest: no trip.
                        let walked = Double(min(second, 180)) * 1.4
                        if second == 0 { send(.activity(ActivityObservation(.walking, .high))) }
                        if second == 180 { send(.activity(ActivityObservation(.stationary, .high))) }
                        send(
                            .location(
                                LocationFix(
                                    latitude: latitude0 + (walked + jitter * 0.3) / 111_320,
                                    longitude: longitude0, speed: second < 180 ? 1.4 : 0,
                                    horizontalAccuracy: 5)))
                        if second % 10 == 0 { send(.steps(min(second, 180) * 2)) }
                    case .midTrip:
                        // A minute at rest, then driving at 14 m/s for nine minutes: a trip in progress.
                        let driven = Double(max(0, second - 60)) * 14
                        if second == 55 { send(.activity(ActivityObservation(.automotive, .high))) }
                        send(
                            .location(
                                LocationFix(
                                    latitude: latitude0 + jitter * 0.3 / 111_320,
                                    longitude: longitude0 + driven / 92_300, speed: second < 60 ? 0 : 14,
                                    horizontalAccuracy: 5)))
                        if second % 10 == 0 { send(.steps(40)) }
                    }
                }
            }
            if state == .idleQuiet { driver.tick(now: lastTime + 5) }
            for number in 0..<devices {
                let device = scriptDevice(number)
                if driver.fleet.session(device)?.isTripInProgress == true { inTrip += 1 }
                buffered += driver.fleet.deviceState(device)?.ordering.bufferedCount ?? 0
            }
            pendingCalls = driver.fleet.pendingPlatformCalls.count
            _ = driver.fleet.takeChangedDevices()
            return driver
        }
        return (
            bytes,
            "\(inTrip) of \(devices) in a trip, \(buffered / devices) records buffered each, \(pendingCalls) platform calls pending"
        )
    }

    /// Devices as the million idle ones of detection's memory benchmark (`bench_memory.py`): each announced through
    /// a gateway with a capabilities record and one parked fix, released by the gateway's watermark at a tick, then
    /// quiet until it leaves memory.
    static func memoryPerAnnouncedDevice(devices: Int) -> (Double, String) {
        let stream = "journal/0/gw-1"
        var buffered = 0
        let bytes = bytesPerDevice(devices) { devices -> EngineBenchShell in
            var driver = EngineBenchShell()
            let start = 1_772_433_000.0
            for number in 0..<devices {
                let device = scriptDevice(number)
                let t = start + Double(number) * 0.001
                let fix = LocationFix(
                    latitude: -33.9 + Double(number % 100) * 0.001, longitude: 18.4 + Double(number / 100) * 0.001,
                    speed: 0, horizontalAccuracy: 14)
                for (seq, payload) in [(UInt64(0), SensorRecord.Payload.capabilities(.full)), (1, .location(fix))] {
                    let record = SensorRecord(device: device, seq: seq, t: t + 0.2 * Double(seq), payload: payload)
                    driver.perform(driver.fleet.receive(record, from: stream, now: t))
                }
            }
            let end = start + Double(devices) * 0.001 + 1
            driver.fleet.watermarkRead(stream: stream, watermark: end, now: end)
            driver.tick(now: end)
            for number in 0..<devices {
                buffered += driver.fleet.deviceState(scriptDevice(number))?.ordering.bufferedCount ?? 0
            }
            _ = driver.fleet.takeChangedDevices()
            return driver
        }
        return (bytes, "through a gateway, released by its watermark: \(buffered) records still buffered")
    }

    // MARK: Helpers

    /// glibc's `mallinfo2`, which Swift's Glibc module does not export (malloc.h is not in it): looked up by name and
    /// called with a C struct return type of at least its size (both are returned through memory by the C ABI, so
    /// the bytes land in the larger one). Bytes in use: `uordblks` (arena chunks) + `hblkhd` (mmapped chunks).
    static func heapInUse() -> Int {
        typealias MallInfo2 = @convention(c) () -> rusage
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallinfo2") else { return 0 }
        var info = unsafeBitCast(symbol, to: MallInfo2.self)()
        precondition(MemoryLayout<rusage>.size >= 10 * MemoryLayout<Int>.size)
        return withUnsafeBytes(of: &info) { bytes in
            bytes.load(fromByteOffset: 4 * 8, as: Int.self) + bytes.load(fromByteOffset: 7 * 8, as: Int.self)
        }
    }

    static func nanos(_ seconds: Double, _ count: Int) -> String {
        String(format: "%.1f", seconds * 1e9 / Double(count))
    }

    static func formatted(_ value: Double) -> String { String(format: "%.0f", value) }

    struct Timing {
        var wall: Double
        var cpu: Double

        func best(_ other: Timing) -> Timing { Timing(wall: min(wall, other.wall), cpu: min(cpu, other.cpu)) }
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func timed(_ body: () -> Void) -> Timing {
        let start = DispatchTime.now().uptimeNanoseconds
        let cpuStart = threadCPUSeconds()
        body()
        let cpu = threadCPUSeconds() - cpuStart
        return Timing(wall: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, cpu: cpu)
    }
}

/// A shell for the fleet without I/O: settings and evaluations answered at once by the embedded platform.
struct EngineBenchShell {
    var fleet = DeviceFleet()
    let platform = EmbeddedPlatform()
    var events = 0

    /// Reused for every record: nearly all ask for nothing.
    var scratch: [FleetAction] = []

    mutating func receive(_ record: consuming SensorRecord, now: Double?) {
        fleet.receive(record, now: now, into: &scratch)
        guard !scratch.isEmpty else { return }
        var actions: [FleetAction] = []
        swap(&actions, &scratch)
        perform(actions)
        actions.removeAll(keepingCapacity: true)
        swap(&actions, &scratch)
    }

    mutating func tick(now: Double) {
        perform(fleet.tick(now: now))
    }

    mutating func finish() {
        perform(fleet.finish())
    }

    mutating func perform(_ actions: [FleetAction]) {
        for action in actions {
            switch action {
            case .emit:
                events += 1
            case .fetchSettings(let app):
                perform(fleet.settingsFetched(app: app, .fetched(platform.defaultSettings), now: nil))
            case .evaluateCrash(let device, let candidate):
                let outcome = CrashEvaluationOutcome.verdict(platform.evaluator.verdict(for: candidate))
                perform(fleet.crashEvaluated(device: device, crashID: candidate.crashID, outcome: outcome))
            case .crashDismissed, .recordRejected, .deviceNotMonitored, .watermarkHoldExpired:
                break
            }
        }
    }
}
