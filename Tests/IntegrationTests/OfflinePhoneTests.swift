import Foundation
import RoadSaveTestKit
import Testing

/// Issue 29, phones that were offline: a phone keeps recording while it has no connection and uploads its buffer when
/// it is back, in order, minutes after the other devices' records through the same gateway. The demo's morning (four
/// devices, one crash), user-003's records held back as such a phone would hold them, fed to the three services
/// through `roadsave send -` at 2,000 records a second (so `send` knows only what it has read, as a live gateway
/// does), with and without watermarks: every event's JSON must be replay's for the same file, each once. Default
/// settings: the stop delay (240 s) is far shorter than the phone's silences, the offline grace (1,800 s) longer.
@Suite("Phones that were offline", .serialized)
struct OfflinePhoneTests {
    /// 2026-03-02T06:30:00Z, the simulated morning's start.
    static let morning = 1_772_433_000.0
    static func at(_ hour: Int, _ minute: Int) -> Double { morning + Double((hour - 6) * 3600 + (minute - 30) * 60) }

    /// What user-003's phone did: offline from `offlineFrom` until `uploadedAt`, its records of that time reach the
    /// gateway only once the rest of the input has reached `uploadedAt`, in their own order. (User-003 drives
    /// 06:34:50–06:55:27 on this morning.)
    struct Offline: CustomTestStringConvertible, Sendable {
        var name: String
        var offlineFrom: Double
        var uploadedAt: Double
        var held: Range<Double> { offlineFrom..<uploadedAt }
        var testDescription: String { name }
    }

    static let cases: [Offline] = [
        Offline(name: "offline 06:40–06:45 mid-trip", offlineFrom: at(6, 40), uploadedAt: at(6, 45)),
        Offline(name: "offline 06:38–06:53 mid-trip", offlineFrom: at(6, 38), uploadedAt: at(6, 53)),
        Offline(name: "the whole trip (06:34–06:56) uploaded at 07:05", offlineFrom: at(6, 34), uploadedAt: at(7, 5)),
    ]

    /// The morning's lines with user-003's `held` ones moved to where the input reaches `uploadedAt`.
    static func holdBack(_ lines: [Substring], _ offline: Offline) throws -> String {
        var kept: [Substring] = []
        var held: [Substring] = []
        var placed = false
        for line in lines {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let t = try #require(record.number("t"))
            if !placed, t >= offline.uploadedAt {
                kept += held
                placed = true
            }
            if record.string("user") == "user-003", offline.held.contains(t) {
                held.append(line)
            } else {
                kept.append(line)
            }
        }
        if !placed { kept += held }
        #expect(held.count > 100, "the phone held back its records (\(offline.name))")
        return kept.joined(separator: "\n") + "\n"
    }

    @Test(arguments: cases, [true, false])
    func aPhoneThatUploadsLaterGetsReplaysEvents(_ offline: Offline, watermarks: Bool) async throws {
        try await withPipelineSlot {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-offline-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let morning = folder.appendingPathComponent("morning.ndjson")
            _ = try await PipelineDurabilityTests.run([
                "simulate", "--devices", "4", "--crashes", "1", "--seed", "7",
                "--duration", "45", "--output", morning.path, "--no-progress",
            ])
            let lines = try String(contentsOf: morning, encoding: .utf8).split(separator: "\n")
            let recording = folder.appendingPathComponent("offline.ndjson")
            try Self.holdBack(lines, offline).write(to: recording, atomically: true, encoding: .utf8)

            let expected = try await PipelineDurabilityTests.replayed(recording).events
            // The premise: user-003's one trip, as the whole morning gives it.
            let trips = expected.values.filter { $0.string("event") == "tripDidEnd" && $0.string("user") == "user-003" }
            #expect(trips.count == 1, "replay gives user-003 one trip (\(offline.name))")

            var options = Services.Options()
            options.settings = nil
            let services = try await Services.start(options)
            defer { services.kill() }
            let tail = try Child.tailFromStart(services)
            defer { tail.kill() }
            let context = "\(offline.name), \(watermarks ? "with" : "without") watermarks"
            let gateway = try Child(
                name: "send", executable: Executables.named("roadsave"),
                arguments: [
                    "send", "-", "--endpoint", services.gatewayEndpoint, "--rate", "2000", "--no-progress",
                ] + (watermarks ? [] : ["--no-watermark"]), input: try Data(contentsOf: recording))
            defer { gateway.kill() }
            #expect(await gateway.waitForExit(timeout: 120) == 0, "\(context)\n\(gateway.tail())\n\(services.logs())")
            let arrived = await eventually(timeout: 120) {
                PipelineDurabilityTests.printed(tail).count >= expected.count
            }
            // Anything more than expected (a repeat, a trip cut in two) would come right after.
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let events = PipelineDurabilityTests.printed(tail).map(\.event)
            #expect(arrived, "\(events.count) of \(expected.count) events (\(context))\n\(services.logs())")
            PipelineDurabilityTests.checkExactlyOnce(events, expected: expected, "subscriber", context: context)
            print("offline phone: \(context): \(events.count) events, replay \(expected.count)")
        }
    }
}
