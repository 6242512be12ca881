import Foundation
import RoadSaveTestKit
import Testing

/// `roadsave up --keys`: key pairs and an allow-list made in DATA-DIR/keys on the first run and reused after; every
/// socket, the links between the services included, runs with CurveZMQ; the clients use the keys up prints.
@Suite struct UpKeysTests {
    static let names = ["ingest", "detect", "notify", "gateway", "operator", "subscriber"]

    /// One device driving for 40 s at 10 m/s, five minutes ago: a trip starts (the records go through ingest's
    /// journal to detection).
    static func drive(user: String) -> String {
        let start = (Date().timeIntervalSince1970 - 300).rounded(.down)
        var lines = [
            #"{"kind":"activity","app":"demo-app","user":"\#(user)","seq":0,"t":\#(start),"activity":"automotive","confidence":"high"}"#
        ]
        for second in 1...40 {
            let longitude = 18.4241 + Double(second) * 10 / 92_500
            lines.append(
                #"{"kind":"location","app":"demo-app","user":"\#(user)","seq":\#(second),"t":\#(start + Double(second)),"lat":-33.9249,"lon":\#(longitude),"speed":10,"course":90,"hacc":5}"#
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The files of `DIR/keys`, by name, with their contents.
    static func keyFiles(_ directory: URL) -> [String: String] {
        var files: [String: String] = [:]
        for name in names {
            for file in ["\(name).key", "\(name).key.pub"] {
                files[file] = try? String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            }
        }
        return files
    }

    @Test func everyLinkRunsWithKeysAndASecondRunReusesThem() async throws {
        let dataDirectory = UpCommandTests.temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let keys = dataDirectory.appendingPathComponent("keys")
        func key(_ file: String) -> String { keys.appendingPathComponent(file).path }

        let up = try await UpCommandTests.startUp(["--keys"], dataDirectory: dataDirectory)
        defer { up.kill() }
        let lines = up.process.lines
        #expect(lines.contains("keys \(keys.path) (made); allow-list \(key("allow.txt"))"), "\(lines)")
        #expect(lines.contains("gateway key \(key("gateway.key")), server key \(key("ingest.key.pub"))"), "\(lines)")
        #expect(lines.contains("operator key \(key("operator.key")), server key \(key("detect.key.pub"))"), "\(lines)")
        #expect(
            lines.contains("subscriber key \(key("subscriber.key")), server key \(key("notify.key.pub"))"), "\(lines)")
        #expect(!up.process.stderr.contains("no CurveZMQ keys"), "\(up.process.stderr)")
        for name in Self.names {
            let attributes = try FileManager.default.attributesOfItem(atPath: key("\(name).key"))
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(name).key")
            #expect(FileManager.default.fileExists(atPath: key("\(name).key.pub")))
        }
        let allowList = try String(contentsOfFile: key("allow.txt"), encoding: .utf8)
        for (role, name) in [
            ("gateway", "gateway"), ("operator", "operator"), ("subscriber", "subscriber"),
            ("service", "ingest"), ("service", "detect"), ("service", "notify"),
        ] {
            #expect(
                allowList.split(separator: "\n").contains { $0.hasPrefix("\(role) ") && $0.hasSuffix(" \(name)") },
                "\(role) \(name): \(allowList)")
        }
        // Each service has its key, the allow-list, and the public key of the feed it reads.
        for (service, upstream) in [("ingest", nil), ("detect", "ingest"), ("notify", "detect")] as [(String, String?)]
        {
            let pid = try #require(up.pid(service))
            let arguments = ((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").split(
                separator: "\0")
            #expect(
                arguments.contains { $0 == key("\(service).key") } && arguments.contains { $0 == key("allow.txt") },
                "\(service): \(arguments)")
            #expect(arguments.contains { $0 == "--curve-server-key" } == (upstream != nil), "\(service): \(arguments)")
            if let upstream {
                #expect(arguments.contains { $0 == key("\(upstream).key.pub") }, "\(service): \(arguments)")
            }
        }

        // A subscriber with the subscriber key; records sent with the gateway key make a trip (gateway → ingest →
        // journal feed → detection → outbox feed → notifier → PUB), and an operator's test crash follows the last two.
        let tail = try await startTail(
            [
                "--endpoint", up.subscribers, "--timeout", "90",
                "--key", key("subscriber.key"), "--server-key", key("notify.key.pub"),
            ], catchUp: up.catchUp)
        defer { tail.kill() }
        let file = try temporaryFile(Self.drive(user: "keyed-driver"), suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let send = try await Roadsave.run([
            "send", file.path, "--endpoint", up.gateways,
            "--key", key("gateway.key"), "--server-key", key("ingest.key.pub"),
        ])
        #expect(send.status == 0, "\(send.stderr)")
        #expect(send.lines == ["sent 41, accepted 41, rejected 0, batches 1"], "\(send.stdout)")
        for command in ["configure", "startMonitoring", "raiseTestCrash"] {
            let result = try await Roadsave.run([
                "ctl", command, "--app", "demo-app", "--user", "keyed-crash",
                "--endpoint", up.control,
                "--key", key("operator.key"), "--server-key", key("detect.key.pub"),
            ])
            #expect(result.status == 0, "\(command): \(result.stdout) \(result.stderr)")
        }
        let deadline = Date().addingTimeInterval(60)
        func received() -> Bool {
            tail.stdout.contains("\"tripDidStart\"") && tail.stdout.contains("keyed-driver")
                && tail.stdout.contains("\"crashDetected\"") && tail.stdout.contains("keyed-crash")
        }
        while !received(), Date() < deadline { try await Task.sleep(nanoseconds: 200_000_000) }
        #expect(received(), "tail: \(tail.stdout) \(tail.stderr)\nup: \(up.process.stderr.suffix(4000))")
        // Every connection so far carried a key: up's own wait for its services' sockets makes none (it reads the
        // kernel's socket tables), so no service has a failed handshake to report.
        #expect(!up.process.stderr.contains("handshake failed"), "\(up.process.stderr.suffix(4000))")

        // Without a key, ingest does not answer.
        let plaintext = try await Roadsave.run([
            "send", file.path, "--endpoint", up.gateways, "--timeout", "1",
            "--attempts", "1",
        ])
        #expect(plaintext.status == 1, "\(plaintext.stdout) \(plaintext.stderr)")

        let firstKeys = Self.keyFiles(keys)
        #expect(firstKeys.count == 12 && firstKeys.values.allSatisfy { $0.contains("public-key") })
        up.process.signal(SIGTERM)
        #expect(await up.process.waitForExit(timeout: 60) == 0, "\(up.process.stderr.suffix(3000))")

        // The second run reuses the keys: the clients' files keep working.
        let again = try await UpCommandTests.startUp(["--keys"], dataDirectory: dataDirectory)
        defer { again.kill() }
        #expect(
            again.process.lines.contains("keys \(keys.path) (reused); allow-list \(key("allow.txt"))"),
            "\(again.process.lines)")
        #expect(Self.keyFiles(keys) == firstKeys, "the key files changed")
        let resend = try await Roadsave.run([
            "send", file.path, "--endpoint", again.gateways,
            "--key", key("gateway.key"), "--server-key", key("ingest.key.pub"),
        ])
        #expect(resend.status == 0, "\(resend.stderr)")
        again.process.signal(SIGTERM)
        #expect(await again.process.waitForExit(timeout: 60) == 0, "\(again.process.stderr.suffix(3000))")
    }

    /// A gateway key added to DIR/keys/allow.txt while up runs is let in after SIGHUP to up, which passes it on to
    /// the services (each re-reads its allow-list) and stops nothing.
    @Test func aKeyAddedToTheAllowListIsLetInAfterSIGHUPAndNothingStops() async throws {
        let dataDirectory = UpCommandTests.temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let keys = dataDirectory.appendingPathComponent("keys").path
        let up = try await UpCommandTests.startUp(["--keys"], dataDirectory: dataDirectory)
        defer { up.kill() }
        let pids = ["ingest", "detect", "notify"].compactMap { up.pid($0) }
        #expect(pids.count == 3, "\(up.process.lines)")

        let clientDirectory = dataDirectory.appendingPathComponent("new-gateway").path
        let keygen = try await Roadsave.run(["keygen", "gw-2", "--directory", clientDirectory])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let printed = try #require(keygen.lines.first { $0.hasPrefix("allow-list line: ") }, "\(keygen.stdout)")
        let allowLine = String(printed.dropFirst("allow-list line: ".count))
        let file = try temporaryFile(Self.drive(user: "new-gateway-driver"), suffix: ".ndjson")
        defer { try? FileManager.default.removeItem(at: file) }
        let send = [
            "send", file.path, "--endpoint", up.gateways, "--key", clientDirectory + "/gw-2.key",
            "--server-key", keys + "/ingest.key.pub", "--timeout", "2", "--attempts", "1",
        ]
        let refused = try await Roadsave.run(send)
        #expect(refused.status == 1, "a key not in the allow-list: \(refused.stdout) \(refused.stderr)")

        let allowList = keys + "/allow.txt"
        try (String(contentsOfFile: allowList, encoding: .utf8) + allowLine + "\n").write(
            toFile: allowList, atomically: true, encoding: .utf8)
        up.process.signal(SIGHUP)
        #expect(
            await up.process.waitForLine(timeout: 10) { $0.hasPrefix("reloading allow-lists") } != nil,
            "\(up.process.lines)")
        // Each service says when it has re-read the list; ingest's is the one the gateway needs.
        #expect(
            await eventually(timeout: 10) { up.process.stderr.contains("allow-list re-read") },
            "\(up.process.stderr.suffix(3000))")
        let admitted = try await Roadsave.run(send)
        #expect(admitted.status == 0, "\(admitted.stdout) \(admitted.stderr)")
        #expect(pids.allSatisfy(isAlive) && up.process.process.isRunning, "SIGHUP must reload, not stop")
        up.process.signal(SIGTERM)
        #expect(await up.process.waitForExit(timeout: 60) == 0, "\(up.process.stderr.suffix(3000))")
    }

    /// With --keys, a --bind-host other machines can reach needs no --insecure; --dry-run makes no keys.
    @Test func keysLetUpBindOffLoopbackWithoutInsecure() async throws {
        let dataDirectory = UpCommandTests.temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = "demo-app"
        let refused = try await Roadsave.run(
            ["up", "--bind-host", "0.0.0.0", "--dry-run", "--data-dir", dataDirectory.path],
            environment: environment)
        #expect(refused.status == 2 && refused.stderr.contains("--keys"), "\(refused.stderr)")
        let keyed = try await Roadsave.run(
            ["up", "--keys", "--bind-host", "0.0.0.0", "--dry-run", "--data-dir", dataDirectory.path],
            environment: environment)
        #expect(keyed.status == 0, "\(keyed.stderr)")
        #expect(!keyed.stdout.contains("--insecure"), "\(keyed.stdout)")
        let keys = dataDirectory.appendingPathComponent("keys").path
        for (service, flags) in [
            ("ingest", "--curve-secret-key \(keys)/ingest.key --allow \(keys)/allow.txt"),
            (
                "detect",
                "--curve-secret-key \(keys)/detect.key --allow \(keys)/allow.txt --curve-server-key \(keys)/ingest.key.pub"
            ),
            (
                "notify",
                "--curve-secret-key \(keys)/notify.key --allow \(keys)/allow.txt --curve-server-key \(keys)/detect.key.pub"
            ),
        ] {
            #expect(
                keyed.lines.contains { $0.hasPrefix("\(service):") && $0.contains(flags) },
                "\(service): \(keyed.stdout)")
        }
        #expect(!FileManager.default.fileExists(atPath: keys), "--dry-run made keys")
        #expect(try await Roadsave.run(["up", "--help"]).stdout.contains("--keys"))
    }

    /// up never replaces half a key pair (a client may hold the other half): it stops and says which file is missing.
    @Test func halfAKeyPairStopsUpBeforeAnyServiceStarts() async throws {
        let dataDirectory = UpCommandTests.temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        let keys = dataDirectory.appendingPathComponent("keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        try "not a key\n".write(to: keys.appendingPathComponent("gateway.key"), atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = "demo-app"
        let result = try await Roadsave.run(
            [
                "up", "--keys", "--base-port", String(Ports.reserveRange(6)),
                "--data-dir", dataDirectory.path,
            ], environment: environment)
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("\(keys.path)/gateway.key.pub is missing"), "\(result.stderr)")
        #expect(!result.stdout.contains("started"), "\(result.stdout)")
    }
}
