// What a conversion returns: the device's records and NDJSON lines, plus a report that says in words what was taken
// from the recording and what was derived or assumed, so a test or a person reading the output knows what it stands on.

import GatewayKit
import RecordCodecs
import RoadSaveModel

public enum Dataset: String, Sendable, CaseIterable {
    case tmd
    case cbs
    case phoneDrops = "phone-drops"
    case escooter
    case envirocar
    case emission
    case mobilitynet
    case aalto
    case gotrack

    /// The folder under ../shared/data.
    public var folder: String {
        switch self {
        case .tmd: return "us-transportation-mode"
        case .cbs: return "cbs-smart-survey-gps"
        case .phoneDrops: return "phone-drops"
        case .escooter: return "escooter-impacts"
        case .envirocar: return "envirocar-car-tracks"
        case .emission: return "emission-activity-traces"
        case .mobilitynet: return "mobilitynet-whole-journeys"
        case .aalto: return "aalto-trafficsense-helsinki"
        case .gotrack: return "gotrack-aracaju"
        }
    }
}

/// One converted recording = one device (`app`, `user`).
public struct ConvertedRecording: Sendable {
    public var dataset: Dataset
    /// File name of the recording (for phone drops: `raw_data.tar.gz/fall_3`).
    public var sourceFile: String
    public var app: String
    public var user: String
    /// The records in device order, each with the device (`app`, `user`) and its `seq`: `records[i]` has `seq` i.
    public var records: [SensorRecord]
    /// NDJSON, one record a line (`records[i].json()`), capabilities first, then in time order.
    public var lines: [String]
    public var report: ConversionReport
    /// The recording's own label: the TMD mode (Car, Bus, …), the phone-drop trial name, the e-scooter file's tag.
    public var label: String?
    /// Every impact the gateway's trigger cut from the accelerometer stream (also present as impact records).
    public var impacts: [TriggeredImpact]
    /// The accelerometer stream the impacts were cut from, summarised; nil when the recording has none.
    public var accelerometer: AccelerometerSummary?
    /// CBS only: the travel-diary segments (runs of identical stop flag and mode).
    public var diarySegments: [DiarySegment]

    /// The device (`app`, `user`).
    public var device: DeviceID { DeviceID(app: app, user: user) }

    /// Number of records of one `kind`.
    public func count(of kind: RecordKind) -> Int {
        records.reduce(0) { $0 + ($1.kind == kind ? 1 : 0) }
    }

    /// Orders the records (all of `device`), numbers them (`seq` 0, 1, 2, …) and writes the lines and the record
    /// counts of the report.
    init(
        dataset: Dataset, sourceFile: String, device: DeviceID, records: [SensorRecord],
        label: String?, impacts: [TriggeredImpact] = [], accelerometer: AccelerometerSummary? = nil,
        diarySegments: [DiarySegment] = [], derived: [String], notes: [String]
    ) {
        assert(records.allSatisfy { $0.device == device }, "a converted recording is one device")
        self.dataset = dataset
        self.sourceFile = sourceFile
        self.app = device.app
        self.user = device.user
        var ordered = RecordOrder.deviceOrder(records)
        for index in ordered.indices { ordered[index].seq = UInt64(index) }
        self.records = ordered
        self.lines = ordered.map { $0.json() }
        self.label = label
        self.impacts = impacts
        self.accelerometer = accelerometer
        self.diarySegments = diarySegments
        var counts: [RecordKind: Int] = [:]
        for record in self.records { counts[record.kind, default: 0] += 1 }
        self.report = ConversionReport(
            dataset: dataset, source: sourceFile, app: app, user: user, label: label,
            countsByKind: counts, derived: derived, notes: notes)
    }
}

/// What a conversion did, in words.
public struct ConversionReport: Sendable, Equatable {
    public var dataset: Dataset
    public var source: String
    public var app: String
    public var user: String
    public var label: String?
    public var countsByKind: [RecordKind: Int]
    /// Everything in the output that is not a direct reading of the recording: derived values, assumed context.
    public var derived: [String]
    /// What was read, skipped or noticed: sample rates, skipped lines, duplicates.
    public var notes: [String]

    /// The report as a few lines of text (what `roadsave convert` prints on stderr).
    public var text: String {
        var lines = [
            "\(dataset.rawValue) \(source) -> app \(app), user \(user)" + (label.map { " (label \($0))" } ?? "")
        ]
        let counts = Self.kindOrder.map { "\(countsByKind[$0] ?? 0) \($0.rawValue)" }.joined(separator: ", ")
        lines.append("  records: \(counts); \(countsByKind.values.reduce(0, +)) in all")
        lines += derived.map { "  derived: \($0)" }
        lines += notes.map { "  note: \($0)" }
        return lines.joined(separator: "\n")
    }

    /// The order the report counts kinds in: the order a device sends them.
    static let kindOrder: [RecordKind] = [.capabilities, .location, .activity, .steps, .impact]
}

/// The shape of an accelerometer stream, in g.
public struct AccelerometerSummary: Sendable, Equatable {
    public var sampleCount: Int
    public var durationSeconds: Double
    public var meanRateHz: Double
    public var medianIntervalSeconds: Double
    /// The longest gap between samples: shows where the logger bunched or dropped samples.
    public var maxIntervalSeconds: Double
    public var maxG: Double
    public var samplesAboveTrigger: Int

    public init(_ samples: [AccelerationSample], triggerG: Double = ImpactTrigger.gatewayThresholdG) {
        sampleCount = samples.count
        durationSeconds = samples.count > 1 ? samples[samples.count - 1].t - samples[0].t : 0
        meanRateHz = durationSeconds > 0 ? Double(samples.count - 1) / durationSeconds : 0
        let intervals = zip(samples.dropFirst(), samples).map { $0.t - $1.t }.sorted()
        medianIntervalSeconds = intervals.isEmpty ? 0 : intervals[intervals.count / 2]
        maxIntervalSeconds = intervals.last ?? 0
        maxG = samples.map(\.magnitude).max() ?? 0
        samplesAboveTrigger = samples.reduce(0) { $0 + ($1.magnitude > triggerG ? 1 : 0) }
    }

    public var sentence: String {
        "accelerometer: \(sampleCount) samples over \(decimal(durationSeconds, 1)) s, "
            + "mean rate \(decimal(meanRateHz, 1)) Hz, "
            + "median interval \(decimal(medianIntervalSeconds * 1000, 1)) ms "
            + "(longest \(decimal(maxIntervalSeconds * 1000, 0)) ms), "
            + "max |a| \(decimal(maxG, 2, fixed: true)) g, "
            + "\(samplesAboveTrigger) samples above \(decimal(ImpactTrigger.gatewayThresholdG, 1)) g"
    }
}

/// Meters per second squared in one g.
let standardGravity = 9.80665

/// A number for the reports' sentences: rounded to `decimals`, trailing zeros dropped unless `fixed`.
func decimal(_ value: Double, _ decimals: Int, fixed: Bool = false) -> String {
    fixed ? JSONObjectWriter.fixedNumber(value, decimals: decimals) : JSONObjectWriter.number(value, decimals: decimals)
}

/// Cuts impacts with the gateway's trigger and describes the result for the report; the impact records are `device`'s.
func cutImpacts(_ samples: [AccelerationSample], device: DeviceID, rateRemark: String? = nil)
    -> (impacts: [TriggeredImpact], records: [SensorRecord], summary: AccelerometerSummary, derived: String)
{
    let impacts = ImpactTrigger().impacts(in: samples)
    let summary = AccelerometerSummary(samples)
    var derived =
        "impact records cut from the accelerometer stream (m/s² divided by \(standardGravity) to g) "
        + "with the gateway's ImpactTrigger (|a| > 2 g, window -1 s..+2 s around the peak): "
        + (impacts.count == 1 ? "1 impact" : "\(impacts.count) impacts")
    if let low = impacts.map(\.peakG).min(), let high = impacts.map(\.peakG).max() {
        let range = [low, high].map { decimal($0, 2, fixed: true) }
        derived += low == high ? ", peak \(range[0]) g" : ", peak \(range[0])–\(range[1]) g"
    }
    if let rateRemark { derived += "; \(rateRemark)" }
    let records = impacts.map { SensorRecord(device: device, t: $0.t, payload: .impact(ImpactObservation($0))) }
    return (impacts, records, summary, derived)
}

extension ImpactObservation {
    /// What the gateway's trigger cut, as the record's payload (sample times relative to the peak, as in the record).
    init(_ impact: TriggeredImpact) {
        self.init(
            peakG: impact.peakG, durationMs: impact.durationMs,
            samples: impact.samples.map { ImpactSample(dt: $0.t, x: $0.x, y: $0.y, z: $0.z) })
    }
}

/// A user id made from a file name: characters other than letters, digits, '-' and '_' become '-', because the user
/// ends up in event topics (`<event>.<app>.<user>`) where a '.' would split the topic.
func userID(from stem: String) -> String {
    String(stem.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
}

/// A file name without its compression and format extensions (`a.csv.gz` → `a`, `a.json.gz` → `a`).
func fileStem(_ name: String) -> String {
    var stem = Substring(name)
    for ext in [".gz", ".csv", ".tsv", ".txt", ".json"] where stem.hasSuffix(ext) {
        stem = stem.dropLast(ext.count)
    }
    return String(stem)
}

extension SensorRecord {
    /// A converted recording's first record: what the phone could sense, as of its first reading.
    static func capabilities(of device: DeviceID, at t: Double, activity: Bool, pedometer: Bool) -> SensorRecord {
        SensorRecord(
            device: device, t: t,
            payload: .capabilities(DeviceCapabilities(activityAvailable: activity, pedometerAvailable: pedometer)))
    }
}
