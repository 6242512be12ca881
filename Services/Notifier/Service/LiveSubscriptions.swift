import ZeroMQ

/// The subscriptions of the notifier's XPUB in manual mode, by connection: what each subscriber asked for and what was
/// applied for it (`LivePrefixes`), so that an unsubscribe undoes exactly what its subscribe applied and nothing
/// another request of the same connection still needs (two requests may apply the same prefix: "" and
/// "crashDetected" both give "crashDetected.app-1." to a key limited to app-1). A value: the tests drive it without
/// sockets; `SubscriptionGate` carries out what it returns.
///
/// Connections are told apart by the number the ZAP handler gives each accepted handshake
/// (`ZAPHandler.connectionProperty`). libzmq drops a connection's subscriptions itself when it ends, but tells the
/// application only with unsubscriptions that carry no metadata, so the entries of ended connections stay here until
/// `capacity` pushes the least recently used out. A connection whose entry was pushed out still unsubscribes safely:
/// what its key's applications give now is removed (at worst a prefix it still wanted, never one it should not have).
struct LiveSubscriptions {
    /// What to apply on the connection of the message just received.
    struct Change: Equatable {
        var subscribe: [[UInt8]] = []
        var unsubscribe: [[UInt8]] = []
    }

    private struct Connection {
        /// Requested prefix → what was applied for it.
        var requests: [[UInt8]: [[UInt8]]] = [:]
        var lastUse: UInt64 = 0
    }

    let capacity: Int
    private var connections: [String: Connection] = [:]
    private var clock: UInt64 = 0
    /// Every application a limited key got a live prefix for since the start (a superset of those held now).
    private(set) var limitedApplications: Set<String> = []

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    var connectionCount: Int { connections.count }

    /// A subscription message: `key` is the sender's allow-list entry now, nil when the key is no longer listed
    /// (refused: nothing applied). Asking again for a prefix applies the same prefixes again (libzmq keeps one
    /// subscription per prefix and connection, so that is harmless).
    mutating func subscribe(connection: String, key: CurveAllowList.Entry?, requested: [UInt8]) -> Change {
        guard let key else { return Change() }
        clock += 1
        var entry = connections[connection] ?? Connection()
        entry.lastUse = clock
        let applied =
            entry.requests[requested] ?? LivePrefixes.applied(requested: requested, applications: key.applications)
        entry.requests[requested] = applied
        if connections[connection] == nil && connections.count >= capacity { evictLeastRecentlyUsed() }
        connections[connection] = entry
        if let applications = key.applications {
            for app in applications
            where LivePrefixes.separable(app)
                && !LivePrefixes.applied(requested: requested, applications: [app]).isEmpty
            {
                limitedApplications.insert(app)
            }
        }
        return Change(subscribe: applied)
    }

    /// An unsubscription message (libzmq's SUB sends one when its last subscription to the prefix goes).
    mutating func unsubscribe(connection: String, key: CurveAllowList.Entry?, requested: [UInt8]) -> Change {
        clock += 1
        var entry = connections[connection] ?? Connection()
        let applied: [[UInt8]]
        if let held = entry.requests.removeValue(forKey: requested) {
            applied = held
        } else if let key {
            applied = LivePrefixes.applied(requested: requested, applications: key.applications)
        } else {
            applied = []
        }
        let stillNeeded = Set(entry.requests.values.joined())
        if entry.requests.isEmpty {
            connections[connection] = nil
        } else {
            entry.lastUse = clock
            connections[connection] = entry
        }
        return Change(unsubscribe: applied.filter { !stillNeeded.contains($0) })
    }

    /// Every connection is gone (the socket was bound again).
    mutating func removeAll() {
        connections = [:]
    }

    /// Whether an event of `application` must stay off the live socket: its ID has a ".", and the part before the first
    /// "." is an application a limited key got a prefix for, which would match this event's topic too.
    func withholds(application: String) -> Bool {
        guard let dot = application.utf8.firstIndex(of: UInt8(ascii: ".")) else { return false }
        return limitedApplications.contains(String(application[..<dot]))
    }

    private mutating func evictLeastRecentlyUsed() {
        guard let oldest = connections.min(by: { $0.value.lastUse < $1.value.lastUse })?.key else { return }
        connections[oldest] = nil
    }
}
