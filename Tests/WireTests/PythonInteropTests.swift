import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

@testable import Wire

/// Against an independent MessagePack implementation: Python's `msgpack` package, run as a child process.
/// Skipped (with the reason shown) when `python3` or its `msgpack` module is not installed.
@Suite(
    "Python msgpack interoperability",
    .enabled(if: Python.hasMsgpack, "needs python3 with the msgpack module (pip install msgpack)"))
struct PythonInteropTests {
    @Test func swiftDecodesABatchEncodedByPython() throws {
        let script = """
            import sys, msgpack
            batch = [
                {"kind": "location", "app": "app-1", "user": "user-9", "seq": 1, "t": 1718708242.123,
                 "lat": -33.9248685, "lon": 18.4240553, "speed": 13.41, "course": 271.5, "hacc": 4.8},
                {"kind": "steps", "app": "app-1", "user": "user-9", "t": 1718708243, "steps": 300},
                {"kind": "impact", "app": "app-1", "user": "üser ✓", "seq": 2**40, "t": 1718708244.5, "peakG": 4.25,
                 "durationMs": 35, "samples": [[-1.0, 0.01, -0.98, 0.12], [0, 3.9, -1.1, 0.7]], "ignored": None},
                {"kind": "location", "app": "app-1", "user": "user-9", "t": 1718708245, "lat": 91, "lon": 0},
                {"kind": "capabilities", "app": "a", "user": "u", "t": 1718708246,
                 "activityAvailable": False, "pedometerAvailable": True},
            ]
            # An event body with its keys in another order, an unknown key, and no position.
            event = {"isTest": False, "event": "crashDetected", "app": "app-1", "user": "üser ✓", "crashID": "c-1",
                     "confidence": "high", "detectedAt": 1718708300.0001, "latitude": None, "longitude": None,
                     "addedLater": [1, 2]}
            sys.stdout.buffer.write(msgpack.packb(batch, use_bin_type=True))
            sys.stdout.buffer.write(b"\\n--event--\\n")
            sys.stdout.buffer.write(msgpack.packb(event, use_bin_type=True))
            """
        let output = try Python.run(script)
        let separator = Array("\n--event--\n".utf8)
        guard let split = output.firstRange(of: separator) else {
            Issue.record("no separator in Python's output")
            return
        }
        let batch = try RecordBatch.decodeBatch(Array(output[..<split.lowerBound]), contentType: .msgpack)
        let device = DeviceID(app: "app-1", user: "user-9")
        #expect(batch.records.count == 5)
        #expect(batch.rejections == [Rejection(index: 3, field: "lat", reason: "91.0 is outside -90…90")])
        #expect(
            batch.accepted == [
                SensorRecord(
                    device: device, seq: 1, t: 1_718_708_242.123,
                    payload: .location(
                        LocationFix(
                            latitude: -33.924_868_5, longitude: 18.424_055_3, speed: 13.41, course: 271.5,
                            horizontalAccuracy: 4.8))),
                SensorRecord(device: device, t: 1_718_708_243, payload: .steps(300)),
                SensorRecord(
                    device: DeviceID(app: "app-1", user: "üser ✓"), seq: 1 << 40, t: 1_718_708_244.5,
                    payload: .impact(
                        ImpactObservation(
                            peakG: 4.25, durationMs: 35,
                            samples: [
                                ImpactSample(dt: -1, x: 0.01, y: -0.98, z: 0.12),
                                ImpactSample(dt: 0, x: 3.9, y: -1.1, z: 0.7),
                            ]))),
                SensorRecord(
                    device: DeviceID(app: "a", user: "u"), t: 1_718_708_246,
                    payload: .capabilities(DeviceCapabilities(activityAvailable: false, pedometerAvailable: true))),
            ])
        let event = try EventBody.decode(Array(output[split.upperBound...]))
        #expect(
            event
                == RoadSaveEvent(
                    device: DeviceID(app: "app-1", user: "üser ✓"),
                    body: .crashDetected(
                        CrashInfo(
                            crashID: "c-1", confidence: .high, detectedAt: 1_718_708_300.000_1, latitude: nil,
                            longitude: nil,
                            isTest: false))))
    }

    @Test func pythonDecodesWhatSwiftEncodes() throws {
        // Python reads the batch, an ack and an event body, and answers with JSON (floats in repr, which round-trips).
        let batch = RecordBatch.encodeBatch(Fixtures.records, as: .msgpack)
        let ack = AcknowledgementTests.ack.encode(as: .msgpack)
        let crash = Fixtures.events.first { if case .crashDetected = $0.body { true } else { false } }!
        let event = EventBody.encode(crash)
        let script = """
            import sys, json, msgpack
            data = sys.stdin.buffer.read()
            parts = []
            unpacker = msgpack.Unpacker(raw=False, strict_map_key=True)
            unpacker.feed(data)
            for obj in unpacker:
                parts.append(obj)
            # Every string must have come as str (not bin), every double exactly.
            print(json.dumps({"parts": parts}))
            """
        let output = try Python.run(script, input: batch + ack + event)
        let value = try JSONText.decode(output)
        guard case .array(let parts)? = value["parts"], parts.count == 3 else {
            Issue.record("unexpected output: \(String(decoding: output, as: UTF8.self))")
            return
        }
        guard case .array(let records) = parts[0] else {
            Issue.record("the batch is not a list in Python")
            return
        }
        #expect(try records.map { try RecordDecoding.record(from: $0) } == Fixtures.records)
        #expect(try Acknowledgement(value: parts[1]) == AcknowledgementTests.ack)
        #expect(parts[2]["isTest"] == .bool(false))
        #expect(parts[2]["detectedAt"] == .number(1_718_708_300.000_1))
        #expect(parts[2]["event"] == .string("crashDetected"))
        #expect(parts[2]["latitude"] == .number(-33.924_868_512_345))
    }
}

enum Python {
    static let hasMsgpack: Bool = (try? run("import msgpack")) != nil

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `python3 -c script` with `input` on stdin; its stdout, or a `Failure` with stderr.
    static func run(_ script: String, input: [UInt8] = []) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Inputs are small (well under a pipe's buffer), so writing all before reading cannot deadlock.
        try stdin.fileHandleForWriting.write(contentsOf: Data(input))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        let errors = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "python3 exited with \(process.terminationStatus): "
                    + String(decoding: errors, as: UTF8.self))
        }
        return [UInt8](output)
    }
}
