import Foundation
import Logging
import RoadSaveModel

#if canImport(Glibc)
    import Glibc
    private func sendKill(_ pid: pid_t) { _ = Glibc.kill(pid, SIGKILL) }
#elseif canImport(Darwin)
    import Darwin
    private func sendKill(_ pid: pid_t) { _ = Darwin.kill(pid, SIGKILL) }
#endif

/// Support/webhook_receiver.py on a free loopback port. Its output is read by a thread of its own (so a busy receiver
/// never blocks on a full pipe, and no test blocks a thread of Swift's small cooperative pool waiting for it: with 2
/// cores, that would delay the sinks' timers under test).
final class Receiver: @unchecked Sendable {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "webhook_receiver.py")

    let process = Process()
    private(set) var port = 0
    let secret: [UInt8]
    private let output = Pipe()
    private let lock = NSLock()
    private var buffer = Data()
    private var finished = false
    private var killed = false

    /// A logged request.
    struct Request {
        var object: [String: Any]
        var eventID: String { header("x-roadsave-event-id") ?? "" }
        var status: Int { object["status"] as? Int ?? 0 }
        var raw: String { object["raw"] as? String ?? "" }
        var body: [String: Any]? { object["body"] as? [String: Any] }
        var path: String { object["path"] as? String ?? "" }
        var signature: String { object["signature"] as? String ?? "" }
        var signatureValid: Bool { object["signatureValid"] as? Bool ?? false }
        var arrived: Double { object["arrived"] as? Double ?? 0 }
        var answered: Double { object["answered"] as? Double ?? 0 }
        func header(_ name: String) -> String? { (object["headers"] as? [String: Any])?[name] as? String }
    }

    private init(secret: [UInt8]) {
        self.secret = secret
    }

    /// Starts the receiver and waits (without blocking a thread) for the port it prints.
    static func start(secret: [UInt8], _ arguments: [String] = []) async throws -> Receiver {
        let receiver = Receiver(secret: secret)
        try receiver.launch(arguments)
        let end = Date().addingTimeInterval(20)
        while Date() < end {
            if let port = receiver.firstLine.flatMap({ Int($0) }) {
                receiver.port = port
                return receiver
            }
            if receiver.lock.withLock({ receiver.finished }) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        receiver.kill()
        throw CocoaError(.fileReadCorruptFile)
    }

    private func launch(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", Self.script.path, "--secret-hex", secret.map { String(format: "%02x", $0) }.joined()]
            + arguments
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let handle = output.fileHandleForReading
        let thread = Thread { [self] in
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                lock.withLock { buffer.append(data) }
            }
            lock.withLock { finished = true }
        }
        thread.start()
    }

    private var lines: [Substring] {
        let data = lock.withLock { buffer }
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    }

    private var firstLine: String? {
        let lines = self.lines
        return lines.count > 1 ? String(lines[0]) : nil
    }

    func url(_ path: String = "/hooks/roadsave") -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// The requests logged so far.
    var requests: [Request] {
        lines.dropFirst().compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]).map(Request.init)
        }
    }

    /// Waits (without blocking a thread) until `condition` holds for the requests, or `timeout` passes.
    func wait(timeout: Double, until condition: ([Request]) -> Bool) async -> [Request] {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            let requests = self.requests
            if condition(requests) { return requests }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return requests
    }

    /// Kills the receiver and returns everything it logged.
    func stop() async -> [Request] {
        kill()
        let end = Date().addingTimeInterval(5)
        while !lock.withLock({ finished }) && Date() < end { try? await Task.sleep(for: .milliseconds(5)) }
        return requests
    }

    /// SIGKILL (a signal mask inherited from the test runner cannot block it); does not wait.
    func kill() {
        let first = lock.withLock { () -> Bool in
            defer { killed = true }
            return !killed
        }
        if first && process.processIdentifier > 0 { sendKill(process.processIdentifier) }
    }

    deinit { kill() }
}

/// Events of the three kinds, built as the engines build them.
enum TestEvents {
    static let app = "app-key-0123456789"

    static func device(_ user: String) -> DeviceID { DeviceID(app: app, user: user) }

    static func tripStart(_ user: String, trip: String, at time: Double = 1_700_000_000) -> RoadSaveEvent {
        RoadSaveEvent(device: device(user), body: .tripDidStart(TripStartInfo(tripID: trip, startDate: time)))
    }

    static func tripEnd(_ user: String, trip: String, at time: Double = 1_700_000_600) -> RoadSaveEvent {
        RoadSaveEvent(
            device: device(user),
            body: .tripDidEnd(
                TripInfo(
                    tripID: trip, startDate: time - 600, endDate: time,
                    distanceMetres: 5432.1, endReason: .stopDelay)))
    }

    static func crash(_ user: String, crash: String, isTest: Bool = false, at time: Double = 1_700_000_300)
        -> RoadSaveEvent
    {
        RoadSaveEvent(
            device: device(user),
            body: .crashDetected(
                CrashInfo(
                    crashID: crash, confidence: .high, detectedAt: time, latitude: -33.9248685, longitude: 18.4240553,
                    isTest: isTest)))
    }

    /// A trip with a crash in it: start, crash, end.
    static func journey(_ user: String, _ number: Int) -> [RoadSaveEvent] {
        let base = 1_700_000_000 + Double(number) * 3600
        return [
            tripStart(user, trip: "\(user)-trip-\(number)", at: base),
            crash(user, crash: "\(user)-crash-\(number)", isTest: number % 2 == 1, at: base + 300),
            tripEnd(user, trip: "\(user)-trip-\(number)", at: base + 600),
        ]
    }

    static func json(_ text: String) -> NSDictionary? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? NSDictionary
    }
}

/// A log for sinks under test: warnings and errors only, so expected failures stay visible but quiet.
let testLog = Log(category: "notifier-sink-tests", minimumLevel: .error, timestamps: false)
