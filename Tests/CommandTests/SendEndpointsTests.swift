import Foundation
import RecordCodecs
import RoadSaveModel
import RoadSaveTestKit
import Storage
import Testing
import Wire

/// `roadsave send --endpoint A --endpoint B`: a gateway reaching two real `roadsave ingest`s, each device's records
/// in the journal of the ingest its hash names, and none in the other.
@Suite struct SendEndpointsTests {
    /// A record as the journal keeps it, by what identifies it.
    struct Stored: Hashable {
        var app: String
        var user: String
        var seq: Int
        var device: DeviceID { DeviceID(app: app, user: user) }
    }

    /// What one ingest's journal holds, read after it stopped: its records in journal order, and the gateway names of
    /// the headers that said a stream was over (ingest keeps one in each of its shards).
    struct Journal {
        var records: [Stored] = []
        var ends: [String] = []

        /// Each device's seqs in journal order (ingest stores a batch shard by shard, so only a device's own order
        /// is the order sent).
        var byDevice: [DeviceID: [Int]] { SendEndpointsTests.byDevice(records) }
    }

    /// Each device's seqs in the order of `records`.
    static func byDevice(_ records: [Stored]) -> [DeviceID: [Int]] {
        Dictionary(grouping: records, by: \.device).mapValues { $0.map(\.seq) }
    }

    static func readJournal(in directory: String) throws -> Journal {
        let database = try SQLiteDatabase(path: directory + "/journal.sqlite")
        defer { database.close() }
        var journal = Journal()
        try database.statement("SELECT records, body, gateway, watermark FROM chunks ORDER BY position").query { row in
            if row.integer(0) == 0 {
                // A header alone; the end of a stream is one with a gateway and no watermark.
                if !row.isNull(2), row.isNull(3) { journal.ends.append(row.text(2)) }
                return
            }
            guard case .array(let items) = try MessagePack.decode(row.blob(1)) else {
                throw TestFailure("a chunk that is not an array of records")
            }
            for item in items {
                guard case .string(let app)? = item["app"], case .string(let user)? = item["user"],
                    case .number(let seq)? = item["seq"]
                else { throw TestFailure("a record without app, user, seq") }
                journal.records.append(Stored(app: app, user: user, seq: Int(seq)))
            }
        }
        return journal
    }

    /// The records of an NDJSON file, in file order.
    static func records(of file: URL) throws -> [Stored] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
            guard let app = object["app"] as? String, let user = object["user"] as? String,
                let seq = object["seq"] as? Int
            else { throw TestFailure("a line without app, user, seq: \(line)") }
            return Stored(app: app, user: user, seq: seq)
        }
    }

    /// A small fleet from `roadsave simulate` (6 devices, 3 minutes: about 1,100 records), in `folder`.
    static func simulatedFleet(in folder: URL) async throws -> URL {
        let file = folder.appendingPathComponent("fleet.ndjson")
        let simulated = try await Roadsave.run([
            "simulate", "--devices", "6", "--duration", "3", "--seed", "7",
            "--output", file.path,
        ])
        #expect(simulated.status == 0, "\(simulated.stderr)")
        return file
    }

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-endpoints-\(UUID().uuidString.prefix(12))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Each device's records all go to the ingest at index DeviceShard.of(device, shards: 2): both journals together
    /// hold every record once, each in the file's order per device, and each stream ends with its own last header.
    @Test func eachDeviceGoesToTheIngestItsHashNames() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fleet = try await Self.simulatedFleet(in: folder)
        let sent = try Self.records(of: fleet)
        let base = Ports.reserveRange(4)
        let directories = [
            folder.appendingPathComponent("ingest-0").path, folder.appendingPathComponent("ingest-1").path,
        ]
        let ingests = try (0..<2).map { index in
            try SendCommandTests.ingest(base: base + 2 * index, directory: directories[index], applications: "demo-app")
        }
        defer { for ingest in ingests { ingest.kill() } }
        for ingest in ingests {
            #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20), "ingest: \(ingest.stderr)")
        }
        let endpoints = [Ports.tcp(base), Ports.tcp(base + 2)]

        let result = try await Roadsave.run([
            "send", fleet.path, "--endpoint", endpoints[0], "--endpoint", endpoints[1],
            "--batch", "50", "--gateway", "gw-two", "--log-level", "info",
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let expected = (0..<2).map { index in sent.filter { DeviceShard.of($0.device, shards: 2) == index } }
        #expect(expected.allSatisfy { !$0.isEmpty }, "the fleet's devices all hash to one ingest: no test")
        let batches = expected.map { ($0.count + 49) / 50 }.reduce(0, +)
        #expect(
            result.lines == ["sent \(sent.count), accepted \(sent.count), rejected 0, batches \(batches)"],
            "\(result.stdout)")
        // With several ingests each has its own line at info level.
        for index in 0..<2 {
            #expect(
                result.errorLines.contains {
                    $0.contains("msg=\"finished with ingest\"") && $0.contains("endpoint=\(endpoints[index])")
                        && $0.contains("sent=\(expected[index].count) ")
                        && $0.contains("accepted=\(expected[index].count) ")
                }, "\(result.stderr)")
        }

        for ingest in ingests { await stopGracefully(ingest) }
        for index in 0..<2 {
            let journal = try Self.readJournal(in: directories[index])
            // Exactly the records of its devices, each once, each device's in the order of the file.
            #expect(journal.records.count == expected[index].count, "ingest \(index)")
            #expect(Set(journal.records) == Set(expected[index]), "ingest \(index)")
            #expect(journal.byDevice == Self.byDevice(expected[index]), "ingest \(index)")
            #expect(
                !journal.ends.isEmpty && Set(journal.ends) == ["gw-two"],
                "ingest \(index)'s stream ends, under the gateway's name")
        }
    }

    /// One ingest down: the other still gets all of its devices' records and its last header, and the send fails
    /// (exit 1) naming the endpoint that never answered. The down one's batches fit in its window, so the reader
    /// is not held up (a full window would hold it, as with one ingest).
    @Test func anIngestThatIsDownDoesNotStopTheOther() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fleet = try await Self.simulatedFleet(in: folder)
        let sent = try Self.records(of: fleet)
        let base = Ports.reserveRange(3)
        let directory = folder.appendingPathComponent("ingest").path
        let ingest = try SendCommandTests.ingest(base: base, directory: directory, applications: "demo-app")
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20), "ingest: \(ingest.stderr)")
        // Index 0 answers, index 1 is a port nobody listens on.
        let (up, down) = (Ports.tcp(base), Ports.tcp(base + 2))
        let expected = sent.filter { DeviceShard.of($0.device, shards: 2) == 0 }
        let lost = sent.count - expected.count
        #expect(
            !expected.isEmpty && lost > 0 && lost <= 8 * 100,
            "premise: both ingests have devices, and the down one's fit its window")

        // Long timeouts, so that the answering ingest has all the time it needs before the other one is given up: a
        // hang bound of 20 s an attempt (about 40 s for the down one to be given up), not a speed check on the other.
        let result = try await Roadsave.run(
            [
                "send", fleet.path, "--endpoint", up, "--endpoint", down, "--batch", "100",
                "--window", "8", "--timeout", "20", "--attempts", "2", "--gateway", "gw-half",
            ],
            limit: 180)
        #expect(result.status == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("not acknowledged by \(down) after 2 attempts"), "\(result.stderr)")
        #expect(!result.stderr.contains("not acknowledged by \(up)"), "\(result.stderr)")
        let batches = (expected.count + 99) / 100 + (lost + 99) / 100
        #expect(
            result.lines == ["sent \(expected.count), accepted \(expected.count), rejected 0, batches \(batches)"],
            "\(result.stdout)")

        await stopGracefully(ingest)
        let journal = try Self.readJournal(in: directory)
        #expect(journal.records.count == expected.count)
        #expect(Set(journal.records) == Set(expected))
        #expect(journal.byDevice == Self.byDevice(expected))
        #expect(
            !journal.ends.isEmpty && Set(journal.ends) == ["gw-half"],
            "its stream ended although the other ingest never answered")
    }

    @Test func aRepeatedOrBadEndpointIsAUsageError() async throws {
        let file = try temporaryFile(SendCommandTests.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        for (arguments, mention) in [
            (
                ["--endpoint", "tcp://127.0.0.1:5550", "--endpoint", "tcp://127.0.0.1:5550"],
                "tcp://127.0.0.1:5550 is listed twice"
            ),
            (["--endpoint", "tcp://127.0.0.1:5550", "--endpoint", "localhost:5560"], "--endpoint"),
        ] {
            let result = try await Roadsave.run(["send", file.path] + arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(mention), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        let help = try await Roadsave.run(["send", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("FNV-1a-64(app, 0xFF, user) mod (number of endpoints)"), "\(help.stdout)")
        #expect(help.stdout.contains("given several times"), "\(help.stdout)")
    }
}
