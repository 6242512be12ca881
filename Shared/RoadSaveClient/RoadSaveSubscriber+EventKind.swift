extension RoadSaveSubscriber {
    /// The five events (PROTOCOL §3), by the name that starts their topic `<event>.<app>.<user>`.
    public enum EventKind: String, Sendable, Hashable, CaseIterable {
        /// A trip was found (`TripStartInfo`).
        case tripDidStart
        /// A trip ended (`TripInfo`).
        case tripDidEnd
        /// A crash was screened and the platform's verdict came (`CrashInfo`).
        case crashDetected
        /// What followed a reported crash, once per crash (`CrashFollowUpInfo`).
        case crashFollowUp
        /// How a trip was driven, after its `tripDidEnd` (`TripBehaviour`).
        case tripBehaviour
    }
}
