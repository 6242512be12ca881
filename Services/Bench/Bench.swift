import DetectionEngine
import Foundation
import Replay
import RoadSaveModel

/// `roadsave-bench FILE.ndjson`: how fast records are decoded and replayed, against a baseline measured in the
/// same run (Foundation's JSONDecoder on the same lines), so the ratios mean something on a shared, noisy machine.
/// Figures, not assertions: `make bench` prints them.

/// The shape Foundation's decoder gets: the record fields of CONTRACT §2.
struct FoundationRecord: Decodable {
    var kind: String
    var app: String
    var user: String
    var seq: UInt64?
    var t: Double
    var lat: Double?
    var lon: Double?
    var speed: Double?
    var course: Double?
    var hacc: Double?
    var activity: String?
    var confidence: String?
    var steps: Int?
    var peakG: Double?
    var durationMs: Double?
    var samples: [[Double]]?
    var activityAvailable: Bool?
    var pedometerAvailable: Bool?
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func peakResidentMegabytes() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

func format(_ value: Double) -> String { String(format: "%.0f", value) }

@main
struct Bench {
    static func main() async throws {
        try await measure()
    }

    /// Off the main actor: the replayer is not Sendable and lives only in this function.
    nonisolated static func measure() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "ack-server" {
            try AckServer.run(endpoint: arguments.dropFirst().first ?? "tcp://127.0.0.1:0")
        }
        if arguments.first == "engines" {
            try EngineBench.run(arguments: Array(arguments.dropFirst()))
            return
        }
        guard let path = arguments.first, !path.hasPrefix("-") else {
            print("Usage: roadsave-bench FILE.ndjson [--baseline-lines N]\n\nTimes decoding and replay of FILE and prints records a second, with Foundation's JSONDecoder as the baseline (on the first N lines, default 200000).\n\n       roadsave-bench ack-server ENDPOINT\n\nA bare ROUTER that unpacks, validates and acknowledges gateway batches at once: the baseline of scripts/bench_services.py.")
            exit(arguments.contains("--help") || arguments.contains("-h") ? 0 : 2)
        }
        var baselineLines = 200_000
        if let index = arguments.firstIndex(of: "--baseline-lines"), index + 1 < arguments.endIndex,
           let n = Int(arguments[index + 1]) { baselineLines = n }

        guard let data = FileManager.default.contents(atPath: path) else {
            FileHandle.standardError.write(Data("roadsave-bench: cannot read \(path)\n".utf8))
            exit(2)
        }
        let lines = data.split(separator: 0x0A).map { [UInt8]($0) }
        print("file: \(path), \(lines.count) records, \(data.count / 1_048_576) MiB")

        // Baseline: Foundation's JSONDecoder, one record at a time as a service would receive them.
        let sample = Array(lines.prefix(baselineLines))
        let decoder = JSONDecoder()
        var foundationCount = 0
        let foundationTime = try seconds {
            for line in sample {
                _ = try decoder.decode(FoundationRecord.self, from: Data(line))
                foundationCount += 1
            }
        }
        let foundationRate = Double(foundationCount) / foundationTime

        // The project's decoder and validation on the same lines.
        var valid = 0
        let decodeTime = seconds {
            for line in sample where (try? RecordDecoding.record(fromJSON: line)) != nil { valid += 1 }
        }
        let decodeRate = Double(sample.count) / decodeTime

        // The whole replay: decode, order per device, engines, events encoded (and discarded).
        var eventCount = 0
        let replayer = Replayer(platform: EmbeddedPlatform(), log: Log(category: "bench", minimumLevel: .error)) { event in
            eventCount += event.json().utf8.count > 0 ? 1 : 0
        }
        let start = DispatchTime.now().uptimeNanoseconds
        for (index, line) in lines.enumerated() { await replayer.feed(line: line, number: index + 1) }
        await replayer.finish()
        let replayTime = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let replayRate = Double(lines.count) / replayTime

        print("baseline  Foundation JSONDecoder: \(format(foundationRate)) records/s (\(foundationCount) records)")
        print("decode    RecordDecoding:         \(format(decodeRate)) records/s  (\(String(format: "%.1f", decodeRate / foundationRate))x baseline)")
        print("replay    decode+order+engines:   \(format(replayRate)) records/s  (\(String(format: "%.1f", replayRate / foundationRate))x baseline), \(eventCount) events, \(replayer.summary.devices) devices")
        print("peak RSS: \(format(peakResidentMegabytes())) MiB")
    }
}
