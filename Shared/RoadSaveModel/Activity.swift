/// The motion activity classes of the brief, mapped from Core Motion.
public enum ActivityType: String, Sendable, Codable, CaseIterable {
    case automotive, walking, running, cycling, stationary, unknown
}

/// How sure the classifier is. Only `high` automotive can start a trip; `medium` keeps one going; `low` is ignored.
public enum ActivityConfidence: String, Sendable, Codable, CaseIterable, Comparable {
    case low, medium, high

    private var rank: Int {
        switch self {
        case .low: 0
        case .medium: 1
        case .high: 2
        }
    }

    public static func < (lhs: ActivityConfidence, rhs: ActivityConfidence) -> Bool { lhs.rank < rhs.rank }
}
