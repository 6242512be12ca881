import Wire
import ZeroMQ

/// Catch-up long-polls (`waitMs`) that found nothing for their key, waiting for an event, in the order they came, at
/// most `capacity` at once (each holds a peer's route and a request: a flood of them must not grow memory without
/// bound). A value: the tests drive it without sockets; `CatchUpServer` answers what it returns.
struct HeldCatchUps {
    struct Held: Equatable {
        /// The ROUTER frames before the request: the peer's identity (and the empty delimiter of a REQ).
        var route: [[UInt8]]
        /// The request, from the position already examined (nothing for this key up to there).
        var request: CatchUpRequest
        /// The key of the connection it came on: looked up again at each answer (a key removed or replaced since is
        /// answered with an error).
        var sender: CurvePeer?
        /// Monotonic seconds when it is answered with no events.
        var deadline: Double

        var peer: [UInt8] { route.first ?? [] }
    }

    static let defaultCapacity = 1000

    let capacity: Int
    private(set) var waiting: [Held] = []

    init(capacity: Int = HeldCatchUps.defaultCapacity) {
        self.capacity = capacity
    }

    var count: Int { waiting.count }
    var isEmpty: Bool { waiting.isEmpty }

    /// Holds a request; false (nothing held) when `capacity` are held already.
    mutating func hold(_ held: Held) -> Bool {
        guard waiting.count < capacity else { return false }
        waiting.append(held)
        return true
    }

    /// The earliest deadline, when any is held.
    var nextDeadline: Double? { waiting.map(\.deadline).min() }

    /// Removes and returns, in the order they came, the requests whose deadline is `now` or past.
    mutating func due(now: Double) -> [Held] {
        let due = waiting.filter { $0.deadline <= now }
        waiting.removeAll { $0.deadline <= now }
        return due
    }

    /// Removes and returns every held request, in the order they came.
    mutating func takeAll() -> [Held] {
        defer { waiting = [] }
        return waiting
    }

    /// Puts back requests taken with `takeAll` that still wait, ahead of any held since (they came first).
    mutating func putBack(_ held: [Held]) {
        waiting = held + waiting
    }

    /// Drops every request of a peer that is gone; how many.
    @discardableResult
    mutating func drop(peer: [UInt8]) -> Int {
        let before = waiting.count
        waiting.removeAll { $0.peer == peer }
        return before - waiting.count
    }
}
