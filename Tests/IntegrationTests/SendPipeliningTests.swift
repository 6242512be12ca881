import Foundation
import RoadSaveTestKit
import Testing

/// `roadsave send --window`: several batches on their way at once, against a gateway socket (Python, not the project's
/// code) that answers out of order, holds one answer until the batch is sent again and then answers it twice.
@Suite("roadsave send pipelining")
struct SendPipeliningTests {
    /// Three devices' records, interleaved as a gateway serves them, with consecutive seqs per device.
    static func records(devices: Int, each: Int) -> String {
        var lines: [String] = []
        for seq in 0..<each {
            for device in 0..<devices {
                lines.append(
                    #"{"kind":"location","app":"demo-app","user":"pipe-\#(device)","seq":\#(seq),"t":\#(1_780_000_000 + seq).0,"lat":-33.9,"lon":18.4,"speed":3.0,"hacc":5}"#
                )
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    func run(format: String, input: String) async throws {
        let (devices, each, batch) = (3, 40, 7)
        var file = try temporaryFile(Self.records(devices: devices, each: each), suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        if input == "msgpack" {
            // The same records as concatenated MessagePack maps (what `roadsave send` reads from a .msgpack file).
            let converted = file.deletingPathExtension().appendingPathExtension("msgpack")
            let child = try Child.python("ndjson_to_msgpack.py", [file.path, converted.path])
            #expect(await child.waitForExit(timeout: 30) == 0, "\(child.tail())")
            file = converted
        }
        defer { try? FileManager.default.removeItem(at: file) }

        // Started after the conversion: the server ends after --seconds without a batch, counted from its start.
        // send's --timeout (the held batch is sent again after it) well under that, and long enough that no batch
        // the server answers in its own time is sent again on a busy machine.
        let port = Ports.reserve(1)[0]
        let server = try Child.python(
            "scrambling_ingest.py",
            [
                "--endpoint", "tcp://127.0.0.1:\(port)", "--hold", "4",
                "--late", "3", "--seconds", "6",
            ])
        defer { server.kill() }
        let deadline = now() + 20
        while !Ports.isListening(port), now() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }

        let total = devices * each
        let batches = (total + batch - 1) / batch
        let (status, send) = try await CommandFlowTests.run(
            [
                "send", file.path, "--endpoint", "tcp://127.0.0.1:\(port)", "--batch", String(batch), "--window", "8",
                "--format", format, "--timeout", "2", "--attempts", "5",
            ], timeout: 60)
        #expect(status == 0, "\(send.tail())")
        // Every batch counted once, although one was answered twice and all out of order.
        #expect(
            send.stdout.map(\.text) == ["sent \(total), accepted \(total), rejected 0, batches \(batches)"],
            "\(send.tail())")

        #expect(await server.waitForExit(timeout: 30) == 0)
        let report = try #require(server.jsonLines.last?.value as? [String: Any], "\(server.tail())")
        let arrivals = try #require(report["arrivals"] as? [String: Int])
        let answers = try #require(report["answers"] as? [String: Int])
        #expect(arrivals.count == batches)
        // The held batch came twice (sent again after --timeout) and was answered twice; the others once each.
        #expect(arrivals.values.filter { $0 == 2 }.count == 1, "\(arrivals)")
        #expect(arrivals.values.allSatisfy { $0 <= 2 }, "\(arrivals)")
        #expect(answers.values.reduce(0, +) == batches + 1, "\(answers)")
        // Stored in the order the batches first came: each device's records in file order, every one once.
        let stored = try #require(report["stored"] as? [[Any]])
        #expect(stored.count == total)
        var next: [String: Int] = [:]
        for entry in stored {
            let user = try #require(entry.first as? String)
            let seq = try #require((entry.last as? NSNumber)?.intValue)
            #expect(seq == next[user, default: 0], "\(user) seq \(seq) out of order")
            next[user] = seq + 1
        }
        #expect(next.values.allSatisfy { $0 == each }, "\(next)")
    }

    @Test(arguments: ["msgpack", "json"])
    func everyBatchAcknowledgedOnceAndInOrderPerDevice(format: String) async throws {
        try await run(format: format, input: "ndjson")
    }

    /// A .msgpack file's records go out as they are in the file, in the same pipelined way.
    @Test func messagePackInputIsSentAsRead() async throws {
        try await run(format: "msgpack", input: "msgpack")
    }
}
