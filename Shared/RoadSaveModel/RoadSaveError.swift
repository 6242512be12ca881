/// The errors of the brief's API (`RoadSaveError`), plus those a service meets in its input.
public enum RoadSaveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A call other than `configure` before `configure`.
    case notConfigured
    /// The platform could not be reached and the last successful settings fetch is older than the offline grace limit.
    case offlineLimitExceeded(lastSuccessfulFetch: Double?, graceSeconds: Double)
    /// The call needs monitoring to be running.
    case notMonitoring
    /// `raiseTestCrash` while crash detection is off for the device (its mode or the platform's settings).
    case crashDetectionDisabled
    case invalidConfiguration(field: String, reason: String)
    /// A sensor record that fails PROTOCOL §2.
    case invalidRecord(RecordError)

    /// The stable code used on the wire (`"error"` of a control reply).
    public var code: String {
        switch self {
        case .notConfigured: "notConfigured"
        case .offlineLimitExceeded: "offlineLimitExceeded"
        case .notMonitoring: "notMonitoring"
        case .crashDetectionDisabled: "crashDetectionDisabled"
        case .invalidConfiguration: "invalidConfiguration"
        case .invalidRecord: "invalidRecord"
        }
    }

    public var description: String { "\(code): \(message)" }

    /// What went wrong, without the code (for replies that carry the code separately).
    public var message: String {
        switch self {
        case .notConfigured:
            "call configure before any other call"
        case .offlineLimitExceeded(let last, let grace):
            "the platform cannot be reached and "
                + (last.map { "the last successful settings fetch (\(ISO8601.string(fromSeconds: $0))) is" }
                    ?? "settings were never fetched, which is")
                + " older than the offline grace limit of \(Int(grace)) s"
        case .notMonitoring:
            "call startMonitoring first"
        case .crashDetectionDisabled:
            "the detection mode or the platform's settings leave crash detection off"
        case .invalidConfiguration(let field, let reason):
            "\(field) \(reason)"
        case .invalidRecord(let error):
            "\(error)"
        }
    }
}

/// What is wrong with one record: the field and why, for the error line or the ingest acknowledgement.
public struct RecordError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { "\(field): \(reason)" }
}
