import RoadSaveModel

/// What a device session asks its shell to do.
public enum DetectionAction: Sendable, Equatable {
    /// Deliver a delegate-equivalent event.
    case emit(RoadSaveEvent)
    /// Ask the platform to evaluate this candidate, then call `DeviceSession.crashEvaluated`.
    case evaluateCrash(CrashCandidate)
    /// A suspected crash was dismissed, with the reason (for logs and tuning; not an event).
    case crashDismissed(CrashCandidate, FalsePositiveReason)
}

extension Array where Element == DetectionAction {
    /// The events among the actions.
    public var events: [RoadSaveEvent] {
        compactMap { if case .emit(let event) = $0 { event } else { nil } }
    }
}
