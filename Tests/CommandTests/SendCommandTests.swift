import Foundation
import RecordCodecs
import RoadSaveTestKit
import Testing
import Wire

/// `roadsave send` against a real `roadsave ingest`, and against nothing.
@Suite struct SendCommandTests {
    /// A data directory of its own for each ingest (its journal), so tests running at once do not share one.
    static func dataDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("roadsave-send-\(UUID().uuidString.prefix(12))")
            .path
    }

    /// sensor-ingest on the ports `base` (gateways) and `base + 1` (records), its journal in `directory`.
    static func ingest(base: Int, directory: String, applications: String = "app-1") throws -> RunningProcess {
        try RunningProcess([
            "ingest", "--applications", applications, "--gateway-endpoint", Ports.tcp(base),
            "--records-endpoint", Ports.tcp(base + 1), "--data-dir", directory,
        ])
    }

    /// Line 1–2 good, 3 invalid here, 4 blank, 5 of an application ingest does not know, 6–7 good.
    static let smallFile = """
        {"kind":"location","app":"app-1","user":"u1","seq":1,"t":1772433001.0,"lat":-33.9,"lon":18.4,"speed":1.2,"hacc":5}
        {"kind":"activity","app":"app-1","user":"u1","seq":2,"t":1772433002.0,"activity":"walking","confidence":"high"}
        {"kind":"location","app":"app-1","user":"u1","seq":3,"t":1772433003.0,"lat":95.5,"lon":18.4}

        {"kind":"steps","app":"other-app","user":"u2","seq":1,"t":1772433004.0,"steps":12}
        {"kind":"steps","app":"app-1","user":"u1","seq":4,"t":1772433005.0,"steps":20}
        {"kind":"impact","app":"app-1","user":"u1","seq":5,"t":1772433006.0,"peakG":2.5}

        """

    @Test(arguments: ["msgpack", "json"])
    func sendsToIngestAndMapsRejectionsToLines(format: String) async throws {
        let base = Ports.reserveRange(2)
        let journalDirectory = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journalDirectory) }
        let ingest = try Self.ingest(base: base, directory: journalDirectory)
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20), "ingest: \(ingest.stderr)")
        let file = try temporaryFile(Self.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }

        // Batches of two records: the rejected record sits in the second batch, as its index 1.
        let result = try await Roadsave.run([
            "send", file.path, "--endpoint", Ports.tcp(base), "--format", format,
            "--batch", "2", "--timeout", "5",
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.lines == ["sent 5, accepted 4, rejected 1, batches 3"])
        #expect(result.stderr.contains("line 3: lat: 95.5 is outside -90…90 (not sent)"), "\(result.stderr)")
        #expect(
            result.stderr.contains("line 5: app: unknown application (rejected by sensor-ingest)"), "\(result.stderr)")
        #expect(result.errorLines.filter { $0.hasPrefix("line ") }.count == 2, "\(result.stderr)")
        #expect(result.stderr.contains("1 line not sent (invalid)"))
        await stopGracefully(ingest)
        #expect(ingest.stderr.contains("accepted=4"), "ingest's own count: \(ingest.stderr)")
    }

    /// A MessagePack file with a bad record and a cut-off end: the bad record is named and not sent, every good
    /// record before the damage is sent and acknowledged, and then the damage is the error (status 1).
    @Test func aDamagedMessagePackFileSendsWhatCameBeforeTheDamage() async throws {
        let base = Ports.reserveRange(2)
        let journalDirectory = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journalDirectory) }
        let ingest = try Self.ingest(base: base, directory: journalDirectory)
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20), "ingest: \(ingest.stderr)")
        // The small file's records without its blank line: 1, 2, 5 and 6 good, 3 invalid here (lat), 4 of an
        // application ingest does not know; then half of a record, the 7th.
        let records = try Self.smallFile.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        var bytes = records.flatMap { MessagePack.encode($0) }
        let cut = MessagePack.encode(records[0])
        bytes += cut.prefix(cut.count / 2)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "damaged-\(UUID().uuidString.prefix(8)).msgpack")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let result = try await Roadsave.run([
            "send", file.path, "--endpoint", Ports.tcp(base), "--batch", "2",
            "--timeout", "5",
        ])
        #expect(result.status == 1, "stderr: \(result.stderr)")
        #expect(result.lines == ["sent 5, accepted 4, rejected 1, batches 3"], "\(result.stdout)")
        #expect(result.stderr.contains("record 3: lat: 95.5 is outside -90…90 (not sent)"), "\(result.stderr)")
        #expect(
            result.stderr.contains("record 4: app: unknown application (rejected by sensor-ingest)"), "\(result.stderr)"
        )
        #expect(result.stderr.contains("record 7"), "the damage names its record: \(result.stderr)")
        #expect(result.stderr.contains("truncated"), "\(result.stderr)")
        #expect(!result.stderr.contains("--help"), "not a usage error: \(result.stderr)")
        await stopGracefully(ingest)
        #expect(ingest.stderr.contains("accepted=4"), "ingest's own count: \(ingest.stderr)")
    }

    @Test func readsStandardInputAndSendsTheFixture() async throws {
        let base = Ports.reserveRange(2)
        let journalDirectory = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journalDirectory) }
        let ingest = try Self.ingest(base: base, directory: journalDirectory, applications: "demo-app")
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20))
        let data = try Data(contentsOf: Roadsave.fixture("morning.ndjson"))
        let result = try await Roadsave.run(["send", "-", "--endpoint", Ports.tcp(base)], input: data)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        // 867 lines, three of them bad (lines 6, 7 and 8).
        #expect(result.lines == ["sent 864, accepted 864, rejected 0, batches 2"])
        #expect(
            result.errorLines.filter { $0.hasPrefix("line ") }.map { $0.prefix(7) } == [
                "line 6:", "line 7:", "line 8:",
            ])
        await stopGracefully(ingest)
    }

    @Test func failsWhenNoAcknowledgementComes() async throws {
        let port = Ports.reserveRange(1)
        let file = try temporaryFile(Self.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let started = Date()
        let result = try await Roadsave.run(
            [
                "send", file.path, "--endpoint", Ports.tcp(port), "--timeout", "0.3",
                "--attempts", "3",
            ], limit: 20)
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 1)
        #expect(result.stderr.contains("not acknowledged by \(Ports.tcp(port)) after 3 attempts"), "\(result.stderr)")
        #expect(result.stderr.contains("lines 1–7"), "names the batch's lines: \(result.stderr)")
        #expect(result.stderr.components(separatedBy: "sending the batch again").count - 1 == 2, "\(result.stderr)")
        #expect(result.lines == ["sent 0, accepted 0, rejected 0, batches 1"])
        // Three waits of 0.3 s and pauses of 0.25 s and 0.5 s; the upper bound only shows it gave up (the run's
        // limit is 20 s), loose because test machines are shared and busy.
        #expect(elapsed >= 1.5 && elapsed < 18, "took \(elapsed) s")
    }

    /// A gateway keeps the batch until it is acknowledged: ingest starting late still gets it, under the same batchID.
    @Test func resendsUntilIngestComesUp() async throws {
        let base = Ports.reserveRange(2)
        let file = try temporaryFile(Self.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let send = try RunningProcess([
            "send", file.path, "--endpoint", Ports.tcp(base), "--timeout", "1", "--attempts", "20",
            "--log-level", "info",
        ])
        defer { send.kill() }
        // Ingest comes up only once the batch has gone unanswered and been sent again (waited for, not slept: a busy
        // machine may take longer than any pause to get there).
        #expect(await waitForError(send, containing: "sending the batch again", timeout: 30), "stderr: \(send.stderr)")
        let journalDirectory = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journalDirectory) }
        let ingest = try Self.ingest(base: base, directory: journalDirectory)
        defer { ingest.kill() }
        let status = await send.waitForExit(timeout: 30)
        #expect(status == 0, "stderr: \(send.stderr)")
        #expect(send.lines == ["sent 5, accepted 4, rejected 1, batches 1"])
        #expect(send.stderr.contains("sending the batch again"))
        await stopGracefully(ingest)
    }

    /// A batch the journal cannot store (its write lock held by another process past ingest's busy timeout) is
    /// refused with `store` and a time to send it again: send waits and sends it again, using up no attempt, and
    /// once the journal can write, the batch is stored. Nothing is lost.
    @Test func sendsABatchAgainThatTheJournalCouldNotStore() async throws {
        let base = Ports.reserveRange(2)
        let journalDirectory = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journalDirectory) }
        let ingest = try Self.ingest(base: base, directory: journalDirectory)
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20), "ingest: \(ingest.stderr)")

        // Another process holds the journal's write lock until the file `release` appears.
        let release = journalDirectory + "/release"
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "python3", "-c",
            """
            import os, sqlite3, sys, time
            connection = sqlite3.connect(sys.argv[1], isolation_level=None)
            connection.execute("BEGIN IMMEDIATE")
            print("locked", flush=True)
            while not os.path.exists(sys.argv[2]):
                time.sleep(0.05)
            connection.execute("ROLLBACK")
            """,
            journalDirectory + "/journal.sqlite", release,
        ]
        let output = Pipe()
        holder.standardOutput = output
        try holder.run()
        defer { if holder.isRunning { holder.terminate() } }
        let locked = output.fileHandleForReading.availableData
        #expect(String(decoding: locked, as: UTF8.self).contains("locked"))

        let file = try temporaryFile(Self.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let send = try RunningProcess([
            "send", file.path, "--endpoint", Ports.tcp(base), "--timeout", "30", "--attempts", "1",
        ])
        defer { send.kill() }
        #expect(
            await waitForError(send, containing: "could not store the batch", timeout: 60), "stderr: \(send.stderr)")
        #expect(FileManager.default.createFile(atPath: release, contents: nil))
        let status = await send.waitForExit(timeout: 60)
        #expect(status == 0, "stderr: \(send.stderr)")
        #expect(send.lines == ["sent 5, accepted 4, rejected 1, batches 1"], "\(send.stdout)")
        await stopGracefully(ingest)
        #expect(ingest.stderr.contains("accepted=4"), "ingest's own count: \(ingest.stderr)")
    }

    @Test func reportsBadOptions() async throws {
        let file = try temporaryFile(Self.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        for (arguments, mention) in [
            (["send"], "FILE missing"),
            (["send", file.path, "--window", "0"], "--window"),
            (["send", file.path, "--input-format", "csv"], "--input-format"),
            (["send", "/nonexistent/records.ndjson"], "cannot read /nonexistent/records.ndjson"),
            (["send", file.path, "--batch", "0"], "--batch"),
            (["send", file.path, "--format", "xml"], "--format"),
            (["send", file.path, "--timeout", "soon"], "--timeout"),
            (["send", file.path, "--endpoint", "localhost:5550"], "--endpoint"),
            (["send", file.path, "--rate", "10", "--realtime"], "--rate"),
            (["send", file.path, "--bogus"], "--bogus"),
        ] {
            let result = try await Roadsave.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(mention), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        let help = try await Roadsave.run(["send", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("Usage: roadsave send FILE [options]"))
        #expect(help.stdout.contains("--window N"))
    }

    /// `--rate` paces the records: 6 records at 10 a second take about half a second.
    @Test func pacesAtTheGivenRate() async throws {
        let base = Ports.reserveRange(2)
        let journalDirectory = Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: journalDirectory) }
        let ingest = try Self.ingest(base: base, directory: journalDirectory)
        defer { ingest.kill() }
        #expect(await waitForError(ingest, containing: "msg=listening", timeout: 20))
        let file = try temporaryFile(Self.smallFile, suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let started = Date()
        let result = try await Roadsave.run(["send", file.path, "--endpoint", Ports.tcp(base), "--rate", "10"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.stderr)")
        // Paced batches are cut every quarter second of pace: [0, 0.1, 0.2] and [0.3, 0.4].
        #expect(result.lines == ["sent 5, accepted 4, rejected 1, batches 2"])
        #expect(elapsed >= 0.35, "took \(elapsed) s")
        await stopGracefully(ingest)
    }
}
