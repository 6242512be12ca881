import RoadSaveModel

/// The RoadSave platform (PROTOCOL §5): settings per application and crash evaluation. The embedded default and
/// the HTTP client both implement it; service shells call it off their reactor threads, so a slow platform holds
/// up only the device waiting for it.
public protocol Platform: Sendable {
    /// The settings for an application; throws when the platform cannot be reached.
    func settings(applicationID: String) async throws -> DetectionSettings
    /// The verdict on a candidate; throws when the platform cannot be reached (after its own retries).
    func evaluate(_ candidate: CrashCandidate) async throws -> CrashVerdict
}

/// The result of a settings fetch, as the session's startup guard sees it.
public enum SettingsFetch: Sendable, Equatable, Codable {
    case fetched(DetectionSettings)
    case unreachable
}

extension Platform {
    /// Fetches settings and folds failure into `.unreachable` for the startup guard.
    public func fetchSettings(applicationID: String) async -> SettingsFetch {
        do {
            return .fetched(try await settings(applicationID: applicationID))
        } catch {
            return .unreachable
        }
    }

    /// Evaluates and folds failure into `.unreachable` (reported as confidence `unknown`).
    public func evaluation(of candidate: CrashCandidate) async -> CrashEvaluationOutcome {
        do {
            return .verdict(try await evaluate(candidate))
        } catch {
            return .unreachable
        }
    }
}

/// The platform built in to the services, used when no platform URL is configured: built-in settings and an
/// evaluator that scores the candidate's features.
public struct EmbeddedPlatform: Platform {
    public var defaultSettings: DetectionSettings
    public var evaluator: CrashEvaluator

    public init(settings: DetectionSettings = DetectionSettings(), evaluator: CrashEvaluator = CrashEvaluator()) {
        self.defaultSettings = settings
        self.evaluator = evaluator
    }

    public func settings(applicationID: String) async throws -> DetectionSettings { defaultSettings }

    public func evaluate(_ candidate: CrashCandidate) async throws -> CrashVerdict { evaluator.verdict(for: candidate) }
}

/// The embedded evaluator: points for impact strength, speed before, stop after and context, mapped to a verdict.
/// Pure, so replay is deterministic and every threshold is testable.
public struct CrashEvaluator: Sendable {
    public init() {}

    public func score(_ candidate: CrashCandidate) -> Int {
        var score = 0
        // Impact strength: a car crash gives the phone tens of g; dropped phones and bumps give far less.
        switch candidate.peakG {
        case 30...: score += 3
        case 15..<30: score += 2
        case 8..<15: score += 1
        default: break
        }
        if let duration = candidate.durationMs, duration >= 40 { score += 1 }
        // Speed before: the energy of the vehicle.
        switch candidate.speedBefore ?? 0 {
        case 13.9...: score += 2
        case 6.9..<13.9: score += 1
        default: break
        }
        // Stop after: a vehicle in a crash comes to rest; an unknown speed after is weak evidence either way.
        switch candidate.speedAfter {
        case let speed? where speed < 1.5: score += 2
        case nil: score += 1
        default: break
        }
        // Context: the classifier or a trip puts the phone in a vehicle; several impacts suggest a collision.
        if candidate.activity == "inVehicle" || candidate.tripInProgress { score += 1 }
        if candidate.impactCount > 1 { score += 1 }
        return score
    }

    public func verdict(for candidate: CrashCandidate) -> CrashVerdict {
        switch score(candidate) {
        case 8...: .high
        case 6..<8: .medium
        case 4..<6: .low
        default: .none
        }
    }
}

/// A platform whose settings are replaced by fixed ones (`--settings FILE`), evaluating through another.
public struct SettingsOverridePlatform: Platform {
    public var base: any Platform
    public var fixedSettings: DetectionSettings

    public init(base: any Platform, settings: DetectionSettings) {
        self.base = base
        self.fixedSettings = settings
    }

    public func settings(applicationID: String) async throws -> DetectionSettings { fixedSettings }

    public func evaluate(_ candidate: CrashCandidate) async throws -> CrashVerdict {
        try await base.evaluate(candidate)
    }
}
