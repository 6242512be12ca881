import ZeroMQ

/// How the live socket (`--publish-endpoint`) keeps a subscriber key limited to applications to those applications.
///
/// libzmq before 4.3.5 has a use-after-free in `ZMQ_XPUB_MANUAL` (libzmq commit 2df7ab6a, "XPUB socket allows manual
/// subscription on terminated pipe"): a subscription read after its connection ended is applied to the freed
/// connection, so an authenticated subscriber that subscribes and disconnects at once can make the notifier touch
/// freed memory. Crash alerts go through this process: on those versions manual mode is never used, and keys limited
/// to applications are refused at the live socket's handshake instead (they follow live with catch-up long-polls:
/// `waitMs`, `roadsave tail --via-catch-up`).
enum LiveFiltering: Equatable, CustomStringConvertible {
    /// No subscriber keys: a plain PUB (plaintext subscribers have no key to limit).
    case none
    /// libzmq 4.3.5 or later: an XPUB with ZMQ_XPUB_MANUAL; `SubscriptionGate` applies each subscription.
    case manual
    /// libzmq before 4.3.5: a PUB where libzmq applies the subscriptions; only keys of every application get in
    /// (ZAP domain `subscriber:unlimited`).
    case unlimitedKeysOnly

    /// The first libzmq whose manual mode is safe.
    static let safeManualVersion: (major: Int32, minor: Int32, patch: Int32) = (4, 3, 5)

    /// The reason a limited key's refusal gives, in the notifier's log.
    static let refusal = "live filtering needs libzmq 4.3.5; use catch-up (waitMs, roadsave tail --via-catch-up)"

    static func choose(keys: Bool, libzmq version: (major: Int32, minor: Int32, patch: Int32)) -> LiveFiltering {
        guard keys else { return .none }
        return (version.major, version.minor, version.patch) >= safeManualVersion ? .manual : .unlimitedKeysOnly
    }

    var description: String {
        switch self {
        case .none: "none (no keys)"
        case .manual: "per subscription (XPUB manual)"
        case .unlimitedKeysOnly: "keys of every application only"
        }
    }
}
