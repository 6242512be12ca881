import RoadSaveModel

/// A crash sent for evaluation whose follow-up is still to be sent: its evidence, and its confidence once the
/// platform has answered (it is sent only after `crashDetected`, and never for a crash the platform dismissed).
struct CrashFollowUpWatch: Sendable, Equatable, Codable {
    var crashID: String
    var isTest: Bool
    var evidence: AfterImpact
    var confidence: CrashConfidence?

    /// When it is due: the end of its watch, once the crash is reported.
    var due: Double? { confidence == nil ? nil : evidence.until }
}
