import Foundation

/// What the notifier's security suites share: a notifier with CURVE keys and an allow-list, fed by a fake detection
/// feed, and a catch-up request made with a given key.
final class KeyedNotifier {
    let feed: NotifierDurabilityTests.Feed
    let notifier: NotifierDurabilityTests.Notifier
    let events: [[String: Any]]

    /// Started: the feed serves `events` (at `rate` a second, 0: all at once; `paused`: from `feed.resume()` on) to a
    /// notifier with the secret key `serverSecret` that lets in the keys of `allowList`.
    init(_ events: [[String: Any]], rate: Double = 0, paused: Bool = false, serverSecret: String,
         allowList: String) async throws {
        self.events = events
        feed = try await NotifierDurabilityTests.Feed(events, rate: rate, paused: paused)
        notifier = NotifierDurabilityTests.Notifier(feed: feed, extra: ["--curve-secret-key", serverSecret,
                                                                        "--allow", allowList])
        do {
            try await notifier.start()
        } catch {
            stop()
            throw error
        }
    }

    /// True once the notifier has stored every event of the feed (the feed saw its acknowledgement).
    func storedAll(timeout: Double = 15) async -> Bool {
        await eventually(timeout: timeout) { feed.acknowledged == events.count }
    }

    func stop() {
        notifier.kill()
        notifier.removeData()
        feed.kill()
    }

    /// One catch-up request with the secret key file `keyFile` (nil: a fresh key nobody listed), by `control.py` as
    /// a REQ client; the reply, nil when none came within 2 s.
    func catchUp(_ request: [String: Any], serverPublic: String, keyFile: String?) async throws -> [String: Any]? {
        try await Control.send([request], to: notifier.catchUpEndpoint, timeout: 8,
                               extra: ["--server-key", serverPublic, "--timeout", "2"]
                                   + (keyFile.map { ["--key", $0] } ?? [])).first
    }
}
