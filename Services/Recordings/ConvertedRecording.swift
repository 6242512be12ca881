// What a conversion returns: the device's records and NDJSON lines, plus a report that says in words what was taken
// from the recording and what was derived or assumed, so a test or a person reading the output knows what it stands on.

import GatewayKit

public enum Dataset: String, Sendable, CaseIterable {
    case tmd
    case cbs
    case phoneDrops = "phone-drops"
    case escooter

    /// The folder under ../shared/data.
    public var folder: String {
        switch self {
        case .tmd: return "us-transportation-mode"
        case .cbs: return "cbs-smart-survey-gps"
        case .phoneDrops: return "phone-drops"
        case .escooter: return "escooter-impacts"
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
    /// The records in device order: `records[i]` is the line with `seq` i.
    public var records: [SensorRecord]
    /// NDJSON, one record a line, capabilities first, then in time order.
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

    /// Number of records of one `kind`.
    public func count(of kind: String) -> Int {
        records.reduce(0) { $0 + ($1.kind == kind ? 1 : 0) }
    }

    /// Orders the records, numbers them and writes the lines and the record counts of the report.
    init(dataset: Dataset, sourceFile: String, app: String, user: String, records: [SensorRecord],
         label: String?, impacts: [TriggeredImpact] = [], accelerometer: AccelerometerSummary? = nil,
         diarySegments: [DiarySegment] = [], derived: [String], notes: [String]) {
        self.dataset = dataset
        self.sourceFile = sourceFile
        self.app = app
        self.user = user
        self.records = NDJSONWriter.deviceOrder(records)
        self.lines = NDJSONWriter.lines(self.records, app: app, user: user)
        self.label = label
        self.impacts = impacts
        self.accelerometer = accelerometer
        self.diarySegments = diarySegments
        var counts: [String: Int] = [:]
        for record in self.records { counts[record.kind, default: 0] += 1 }
        self.report = ConversionReport(dataset: dataset, source: sourceFile, app: app, user: user, label: label,
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
    public var countsByKind: [String: Int]
    /// Everything in the output that is not a direct reading of the recording: derived values, assumed context.
    public var derived: [String]
    /// What was read, skipped or noticed: sample rates, skipped lines, duplicates.
    public var notes: [String]

    /// The report as a few lines of text (what `roadsave convert` prints on stderr).
    public var text: String {
        var lines = ["\(dataset.rawValue) \(source) -> app \(app), user \(user)" + (label.map { " (label \($0))" } ?? "")]
        let counts = SensorRecord.kinds.map { "\(countsByKind[$0] ?? 0) \($0)" }.joined(separator: ", ")
        lines.append("  records: \(counts); \(countsByKind.values.reduce(0, +)) in all")
        lines += derived.map { "  derived: \($0)" }
        lines += notes.map { "  note: \($0)" }
        return lines.joined(separator: "\n")
    }
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
        "accelerometer: \(sampleCount) samples over \(NDJSONWriter.number(durationSeconds, decimals: 1)) s, "
            + "mean rate \(NDJSONWriter.number(meanRateHz, decimals: 1)) Hz, "
            + "median interval \(NDJSONWriter.number(medianIntervalSeconds * 1000, decimals: 1)) ms "
            + "(longest \(NDJSONWriter.number(maxIntervalSeconds * 1000, decimals: 0)) ms), "
            + "max |a| \(NDJSONWriter.number(maxG, decimals: 2, trimZeros: false)) g, "
            + "\(samplesAboveTrigger) samples above \(NDJSONWriter.number(ImpactTrigger.gatewayThresholdG, decimals: 1)) g"
    }
}

/// Meters per second squared in one g.
let standardGravity = 9.80665

/// Cuts impacts with the gateway's trigger and describes the result for the report.
func cutImpacts(_ samples: [AccelerationSample], rateRemark: String? = nil)
    -> (impacts: [TriggeredImpact], records: [SensorRecord], summary: AccelerometerSummary, derived: String) {
    let impacts = ImpactTrigger().impacts(in: samples)
    let summary = AccelerometerSummary(samples)
    var derived = "impact records cut from the accelerometer stream (m/s² divided by \(standardGravity) to g) "
        + "with the gateway's ImpactTrigger (|a| > 2 g, window -1 s..+2 s around the peak): "
        + (impacts.count == 1 ? "1 impact" : "\(impacts.count) impacts")
    if let low = impacts.map(\.peakG).min(), let high = impacts.map(\.peakG).max() {
        let range = [low, high].map { NDJSONWriter.number($0, decimals: 2, trimZeros: false) }
        derived += low == high ? ", peak \(range[0]) g" : ", peak \(range[0])–\(range[1]) g"
    }
    if let rateRemark { derived += "; \(rateRemark)" }
    let records = impacts.map { SensorRecord(t: $0.t, body: .impact($0)) }
    return (impacts, records, summary, derived)
}

/// A user id made from a file name: characters other than letters, digits, '-' and '_' become '-', because the user
/// ends up in event topics (`<event>.<app>.<user>`) where a '.' would split the topic.
func userID(from stem: String) -> String {
    String(stem.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
}

/// A file name without its compression and format extensions (`a.csv.gz` → `a`).
func fileStem(_ name: String) -> String {
    var stem = Substring(name)
    for ext in [".gz", ".csv", ".tsv", ".txt"] where stem.hasSuffix(ext) {
        stem = stem.dropLast(ext.count)
    }
    return String(stem)
}
