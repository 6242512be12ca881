import DetectionEngine
import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import DetectionService

/// Control commands are inputs like records: stored before their reply leaves, re-run after a crash, kept in the
/// checkpoint after a graceful stop.
@Suite(.serialized) struct ControlPersistenceTests {
    static func command(_ name: String, _ user: String, _ extra: String = "") -> String {
        #"{"command":"\#(name)","app":"app-1","user":"\#(user)"\#(extra)}"#
    }

    static func state(_ answer: DetectionRig.ControlAnswer, _ key: String) -> String? {
        guard let first = answer.states.first else { return nil }
        if case .string(let text)? = first[key] { return text }
        return nil
    }

    @Test func commandsSurviveARestart() async throws {
        try await DetectionRig.with { rig in
            // No checkpoint while running: after the crash, the commands can only come back from the input log.
            try rig.startDetection(checkpointInterval: 3600)
            var answer = try await rig.control(Self.command("configure", "ctl-a"))
            #expect(answer.ok && Self.state(answer, "lifecycle") == "configured", "\(answer.json)")
            answer = try await rig.control(Self.command("startMonitoring", "ctl-a"))
            #expect(answer.ok && Self.state(answer, "lifecycle") == "monitoring", "\(answer.json)")
            answer = try await rig.control(Self.command("setDetectionMode", "ctl-a", #","mode":"disabled""#))
            #expect(answer.ok && Self.state(answer, "detectionMode") == "disabled", "\(answer.json)")
            _ = try await rig.control(Self.command("configure", "ctl-b"))
            _ = try await rig.control(Self.command("startMonitoring", "ctl-b"))
            answer = try await rig.control(Self.command("stopMonitoring", "ctl-b"))
            #expect(answer.ok && Self.state(answer, "lifecycle") == "configured", "\(answer.json)")

            try await rig.abandonDetection()
            let view = try rig.storeView()
            #expect(view.checkpointInput == nil)
            let commands = view.inputs.compactMap { entry -> String? in
                if case .control(let text, _, _) = entry.input {
                    (try? JSONParser.parse(text))?["command"].flatMap {
                        if case .string(let name) = $0 { name } else { nil }
                    }
                } else {
                    nil
                }
            }
            #expect(
                commands == [
                    "configure", "startMonitoring", "setDetectionMode", "configure", "startMonitoring",
                    "stopMonitoring",
                ])

            // Re-run from the input log.
            try rig.startDetection(checkpointInterval: 3600)
            answer = try await rig.control(Self.command("raiseTestCrash", "ctl-a"))
            #expect(answer.error == "crashDetectionDisabled", "ctl-a's mode was lost: \(answer.json)")
            answer = try await rig.control(Self.command("raiseTestCrash", "ctl-b"))
            #expect(answer.error == "notMonitoring", "ctl-b's stop was lost: \(answer.json)")

            // ctl-a (monitored, mode disabled) and ctl-b (stopped) drive; ctl-c, met first in the records, is
            // monitored automatically and gives the trip the others must not.
            let drives = Streams.interleave(
                ["ctl-a", "ctl-b", "ctl-c"].enumerated().map { index, user in
                    Streams.drive(user: user, drive: 60, standstill: 5, longitude: 18.4 + Double(index) * 0.05)
                })
            try await rig.send(drives, batch: "drives")
            try await rig.until("ctl-c's trip") {
                rig.uniqueEvents.contains { $0.event.device.user == "ctl-c" && $0.event.name == "tripDidStart" }
            }
            try await rig.until("the drives applied") { try rig.appliedPosition() == rig.journalHead() }
            #expect(
                !rig.uniqueEvents.contains { $0.event.device.user != "ctl-c" },
                "\(rig.uniqueEvents.map { ($0.event.name, $0.event.device.user) })")
            answer = try await rig.control(Self.command("setAutoTripDetection", "ctl-a", #","enabled":false"#))
            #expect(
                answer.ok && Self.state(answer, "detectionMode") == "disabled"
                    && answer.states.first?["tripInProgress"] == .bool(false), "\(answer.json)")

            // A graceful stop: the state is in the checkpoint, no input is left to re-run.
            try await rig.stopDetection()
            let stopped = try rig.storeView()
            #expect(stopped.checkpointInput != nil && stopped.inputs.isEmpty, "\(stopped.inputs.map(\.input))")
            #expect(
                try stopped.positions.values.max() == rig.journalHead(),
                "the last checkpoint does not say how far the journal was read: \(stopped.positions)")
            try rig.startDetection(checkpointInterval: 3600)
            answer = try await rig.control(Self.command("raiseTestCrash", "ctl-a"))
            #expect(answer.error == "crashDetectionDisabled", "\(answer.json)")
            answer = try await rig.control(Self.command("raiseTestCrash", "ctl-b"))
            #expect(answer.error == "notMonitoring", "\(answer.json)")
            answer = try await rig.control(Self.command("setDetectionMode", "ctl-a", #","mode":"all""#))
            #expect(
                answer.ok && Self.state(answer, "lifecycle") == "monitoring"
                    && answer.states.first?["autoTripDetection"] == .bool(false), "\(answer.json)")
        }
    }
}
