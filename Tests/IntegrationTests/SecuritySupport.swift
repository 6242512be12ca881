import Foundation
import RoadSaveTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What the security suites share: a notifier with CURVE keys and an allow-list, fed by a fake detection feed, and a
/// catch-up request made with a given key; a key's allow-list line changed while it has a connection open, and that
/// connection.
final class KeyedNotifier {
    let feed: EventFeed
    let notifier: NotifierDurabilityTests.Notifier
    let events: [[String: Any]]

    /// Started: the feed serves `events` (at `rate` a second, 0: all at once; `paused`: from `feed.resume()` on) to a
    /// notifier with the secret key `serverSecret` that lets in the keys of `allowList`.
    init(
        _ events: [[String: Any]], rate: Double = 0, paused: Bool = false, step: Bool = false, serverSecret: String,
        allowList: String
    ) async throws {
        self.events = events
        feed = try await EventFeed(events, rate: rate, paused: paused, step: step)
        notifier = NotifierDurabilityTests.Notifier(
            feed: feed,
            extra: [
                "--curve-secret-key", serverSecret,
                "--allow", allowList,
            ])
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
        try await Control.send(
            [request], to: notifier.catchUpEndpoint, timeout: 8,
            extra: ["--server-key", serverPublic, "--timeout", "2"]
                + (keyFile.map { ["--key", $0] } ?? [])
        ).first
    }
}

/// How a test changes the allow-list line of a key that has a connection open.
enum KeyChange: String, CaseIterable, Sendable {
    /// Another key under the same name, listed for every application.
    case replaced
    /// The line removed.
    case removed
}

/// A new key pair `file` in `folder` (`roadsave keygen`); its public key, to list under any name.
func makeKey(_ file: String, role: String, in folder: URL) async throws -> String {
    let line = try await KeyFolder.allowListLine(file, ["--role", role], in: folder)
    // "ROLE KEY NAME [APPS]"
    return String(line.split(separator: " ")[1])
}

/// Applies `change` to the line of `name` in `role` of the allow-list at `path` (a replacement lists `newKey` under
/// the name, for every application), sends SIGHUP to each of `services` and waits until each says it re-read the list.
/// False when one did not within 10 s.
func apply(
    _ change: KeyChange, role: String, name: String, newKey: String, allowList path: String,
    reloading services: [Child]
) async throws -> Bool {
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    let changed = lines.flatMap { line -> [String] in
        let fields = line.split(separator: " ")
        guard fields.count >= 3, fields[0] == role, fields[2] == name else { return [line] }
        return change == .replaced ? ["\(role) \(newKey) \(name)"] : []
    }
    try #require(changed != lines, "no line of \(role) \(name) in \(lines)")
    try (changed.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    func reloads(_ service: Child) -> Int { service.stderr.filter { $0.text.contains("allow-list re-read") }.count }
    let before = services.map(reloads)
    for service in services { service.signal(SIGHUP) }
    return await eventually(timeout: 10) { zip(services, before).allSatisfy { reloads($0) > $1 } }
}

/// A pyzmq client (`held_connection.py`) that holds one CurveZMQ connection open across a reload: it sends `requests`
/// in order on it, and waits before the one at `holdBefore` until `resume()`.
final class HeldConnection {
    let child: Child
    private let go: URL

    init(
        _ protocolName: String, endpoint: String, serverKey: String, key: String, requests: [Any],
        holdBefore: Int
    ) throws {
        go = FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-go-\(UUID().uuidString.prefix(8))")
        child = try Child.python(
            "held_connection.py",
            [
                "--protocol", protocolName, "--endpoint", endpoint, "--server-key", serverKey, "--key", key,
                "--hold-before", String(holdBefore), "--go", go.path,
            ] + requests.flatMap { ["--request", jsonLine($0)] }, name: "held \(protocolName)")
    }

    private var lines: [[String: Any]] { child.jsonLines.compactMap { $0.value as? [String: Any] } }

    /// The reply to request `index`; nil when none came within `timeout` seconds (or the client gave up).
    func reply(_ index: Int, timeout: Double = 20) async -> Any? {
        func found() -> [String: Any]? { lines.first { $0.number("index") == Double(index) } }
        _ = await eventually(timeout: timeout) { found() != nil || !child.isRunning }
        return found()?["reply"]
    }

    /// True once the client waits for `resume()` (every reply before it came).
    func holding(timeout: Double = 20) async -> Bool {
        await eventually(timeout: timeout) { lines.contains { $0["holding"] != nil } }
    }

    /// Lets the client send the rest of its requests, on the same connection.
    func resume() throws {
        try #require(FileManager.default.createFile(atPath: go.path, contents: Data()), "cannot create \(go.path)")
    }

    /// Handshakes the client made: 1 when every reply came over the one connection.
    var handshakes: Int { child.stderr.filter { $0.text.contains("{\"connected\"") }.count }

    func stop() {
        child.kill()
        try? FileManager.default.removeItem(at: go)
    }
}
