/// Which detections run for a device (the brief's `CrashDetectionMode`).
public enum CrashDetectionMode: String, Sendable, Codable, CaseIterable {
    /// Trips and crashes (the default).
    case all
    /// Crash detection only, no trip tracking.
    case crashOnly
    /// Trip tracking only; crashes are not evaluated.
    case tripOnly
    /// Neither (the 3.x `CrashDetectionMode.OFF`).
    case disabled

    public var detectsTrips: Bool { self == .all || self == .tripOnly }
    public var detectsCrashes: Bool { self == .all || self == .crashOnly }
}

/// One device's configuration, as the host app passes it to `configure(with:)`.
///
/// `applicationID` is a credential issued by RoadSave: it is never printed in full (see `maskedApplicationID`).
public struct RoadSaveConfiguration: Sendable, Equatable, Codable {
    public var applicationID: String
    public var clientUserID: String
    public var detectionMode: CrashDetectionMode
    public var shouldAutoDetectTrips: Bool

    public init(
        applicationID: String, clientUserID: String,
        detectionMode: CrashDetectionMode = .all, shouldAutoDetectTrips: Bool = true
    ) {
        self.applicationID = applicationID
        self.clientUserID = clientUserID
        self.detectionMode = detectionMode
        self.shouldAutoDetectTrips = shouldAutoDetectTrips
    }

    public var device: DeviceID { DeviceID(app: applicationID, user: clientUserID) }

    /// Checks what `configure(with:)` checks; the error names the offending field.
    public func validate() throws(RoadSaveError) {
        for (field, value) in [("applicationID", applicationID), ("clientUserID", clientUserID)] {
            if value.isEmpty {
                throw .invalidConfiguration(field: field, reason: "must not be empty")
            }
            if value.utf8.count > DeviceID.maximumLength {
                throw .invalidConfiguration(field: field, reason: "longer than \(DeviceID.maximumLength) bytes")
            }
            if value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                throw .invalidConfiguration(field: field, reason: "contains control characters")
            }
        }
    }

    /// The application ID as it may appear in logs and `--help`: enough to tell two apart, not enough to reuse.
    public var maskedApplicationID: String { Secret.mask(applicationID) }
}

/// Masking of credentials wherever they are printed.
public enum Secret {
    public static func mask(_ value: String) -> String {
        guard value.count > 8 else { return String(repeating: "*", count: max(value.count, 3)) }
        return String(value.prefix(2)) + "…" + String(value.suffix(2))
    }
}
