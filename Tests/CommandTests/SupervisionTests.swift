import Foundation
import RoadSaveTestKit
import Testing

/// Durability of `roadsave up` and the services: no service outlives its supervisor, each service holds its data
/// directory alone, and a new `up` resumes on the directory of one that was killed.
@Suite struct SupervisionTests {
    /// Waits until none of `pids` is alive; the ones still alive after `timeout`.
    static func survivors(_ pids: [Int32], timeout: Double) async -> [Int32] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if !pids.contains(where: isAlive) { return [] }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
        return pids.filter(isAlive)
    }

    /// Whether process `pid` has `file` open (Linux: its /proc/PID/fd links): a service waiting for a data directory's
    /// lock holds its LOCK file open while it retries.
    static func hasOpen(_ pid: Int32, _ file: URL) -> Bool {
        let folder = "/proc/\(pid)/fd"
        let target = file.resolvingSymlinksInPath().path
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return descriptors.contains {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)")) == target
        }
    }

    static func lockHolder(_ directory: URL) -> Int32? {
        (try? String(contentsOf: directory.appendingPathComponent("LOCK"), encoding: .utf8))
            .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    @Test func servicesStopWhenUpIsKilledAndANewUpResumesOnTheSameDirectories() async throws {
        let first = try await UpCommandTests.startUp()
        defer {
            first.kill()
            try? FileManager.default.removeItem(at: first.dataDirectory)
        }
        #expect(
            first.process.lines.contains("data \(first.dataDirectory.standardizedFileURL.path)"),
            "\(first.process.lines)")
        let services = ["ingest", "detect", "notify"]
        let pids = services.compactMap { first.pid($0) }
        try #require(pids.count == 3, "\(first.process.lines)")
        // Each service has its own directory under --data-dir, locked with its pid; DIR itself is locked by up.
        for (service, pid) in zip(services, pids) {
            let directory = first.dataDirectory.appendingPathComponent(service)
            var isDirectory: ObjCBool = false
            #expect(
                FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory)
                    && isDirectory.boolValue,
                "\(directory.path)")
            #expect(Self.lockHolder(directory) == pid, "\(service)")
        }
        #expect(Self.lockHolder(first.dataDirectory) == first.process.pid)

        // A new up on the same directory and ports, at once: its services wait for the locks of the old ones, which
        // are stopping.
        first.process.signal(SIGKILL)
        let second = try await UpCommandTests.startUp(base: first.base, dataDirectory: first.dataDirectory)
        defer { second.kill() }
        let left = await Self.survivors(pids, timeout: 15)
        #expect(
            left.isEmpty,
            "services still running after up was SIGKILLed: \(left)\nstderr: \(first.process.stderr.suffix(3000))")
        // They stopped the graceful way: the parent-death SIGTERM was taken by each service's signal thread.
        _ = await first.process.waitForExit(timeout: 10)
        let stderr = first.process.stderr
        for service in services {
            #expect(
                stderr.contains("category=\(service) msg=\"shutting down\" signal=SIGTERM"),
                "\(service): \(stderr.suffix(3000))")
        }
        let newPids = services.compactMap { second.pid($0) }
        #expect(newPids.count == 3 && newPids.allSatisfy(isAlive), "\(second.process.lines)")
        // (The old services may have answered the readiness probe while stopping: the new ones take over their
        // locks within the lock's retry interval of the old ones' end.)
        for (service, pid) in zip(services, newPids) {
            let directory = first.dataDirectory.appendingPathComponent(service)
            let deadline = Date().addingTimeInterval(5)
            while Self.lockHolder(directory) != pid && Date() < deadline {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            #expect(Self.lockHolder(directory) == pid, "\(service)")
        }
        second.process.signal(SIGTERM)
        let status = await second.process.waitForExit(timeout: 60)
        #expect(status == 0, "stdout: \(second.process.stdout)\nstderr: \(second.process.stderr.suffix(3000))")
    }

    @Test func aSecondUpOnTheSameDirectoryIsRefused() async throws {
        let first = try await UpCommandTests.startUp()
        defer {
            first.kill()
            try? FileManager.default.removeItem(at: first.dataDirectory)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = "demo-app"
        let second = try await Roadsave.run(
            ["up", "--base-port", String(Ports.reserveRange(6)), "--data-dir", first.dataDirectory.path],
            environment: environment, limit: 60)
        #expect(second.status == 1, "stdout: \(second.stdout)\nstderr: \(second.stderr)")
        #expect(
            second.stderr.contains(
                "data directory \(first.dataDirectory.standardizedFileURL.path) is in use by process \(first.process.pid)"
            ),
            "\(second.stderr)")
        #expect(!second.stdout.contains("started "), "no service was started: \(second.stdout)")
        #expect(["ingest", "detect", "notify"].compactMap { first.pid($0) }.allSatisfy(isAlive))
    }

    @Test func upDryRunShowsTheServicesCommandLines() async throws {
        let directory = UpCommandTests.temporaryDataDirectory()
        let result = try await Roadsave.run([
            "up", "--applications", "secret-app", "--base-port", "6000",
            "--data-dir", directory.path, "--dry-run",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path), "a dry run creates nothing")
        let lines = Dictionary(
            uniqueKeysWithValues: result.lines.compactMap { line -> (String, [String])? in
                let words = line.split(separator: " ").map(String.init)
                guard let name = words.first, name.hasSuffix(":"), words.count > 2 else { return nil }
                return (String(name.dropLast()), Array(words.dropFirst(2)))
            })
        let data = directory.standardizedFileURL.path
        #expect(
            lines["ingest"] == [
                "ingest", "--gateway-endpoint", "tcp://127.0.0.1:6000",
                "--records-endpoint", "tcp://127.0.0.1:6001", "--data-dir", "\(data)/ingest",
            ],
            "\(result.stdout)")
        #expect(
            lines["detect"] == [
                "detect", "--records-endpoint", "tcp://127.0.0.1:6001",
                "--control-endpoint", "tcp://127.0.0.1:6002", "--events-endpoint", "tcp://127.0.0.1:6003",
                "--data-dir", "\(data)/detect",
            ], "\(result.stdout)")
        #expect(
            lines["notify"] == [
                "notify", "--events-endpoint", "tcp://127.0.0.1:6003",
                "--publish-endpoint", "tcp://127.0.0.1:6004", "--catch-up-endpoint", "tcp://127.0.0.1:6005",
                "--data-dir", "\(data)/notify",
            ], "\(result.stdout)")
        #expect(!result.stdout.contains("secret-app"), "secrets stay off command lines")

        // ROADSAVE_DATA_DIR when no flag; bind host and log level reach every service.
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_DATA_DIR"] = "/srv/roadsave"
        environment["ROADSAVE_APPLICATIONS"] = "a"
        // (Every interface without keys: --insecure, passed on to every service.)
        let fromEnvironment = try await Roadsave.run(
            [
                "up", "--dry-run", "--bind-host", "*", "--log-level", "debug",
                "--insecure",
            ], environment: environment)
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.stderr)")
        #expect(
            fromEnvironment.stdout.contains(
                "--catch-up-endpoint tcp://*:5555 --data-dir /srv/roadsave/notify --log-level debug --insecure"),
            "\(fromEnvironment.stdout)")
        #expect(
            fromEnvironment.stdout.contains("--records-endpoint tcp://127.0.0.1:5551 --control-endpoint tcp://*:5552"),
            "\(fromEnvironment.stdout)")
    }

    @Test func aServiceWhoseSupervisorIsNotItsParentDoesNotStart() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["ROADSAVE_APPLICATIONS"] = "app-1"
        // This test process is the service's parent; its own parent is not.
        environment["ROADSAVE_SUPERVISOR_PID"] = String(getppid())
        let base = Ports.reserveRange(2)
        let result = try await Roadsave.run(
            [
                "ingest", "--gateway-endpoint", Ports.tcp(base),
                "--records-endpoint", Ports.tcp(base + 1),
            ], environment: environment, limit: 20)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("the supervising roadsave up (pid \(getppid())"), "\(result.stderr)")
        #expect(!result.stderr.contains("msg=starting"), "\(result.stderr)")

        environment["ROADSAVE_SUPERVISOR_PID"] = "up"
        let bad = try await Roadsave.run(["ingest"], environment: environment, limit: 20)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("ROADSAVE_SUPERVISOR_PID must be the pid"), "\(bad.stderr)")
    }

    @Test func aServiceWhoseSupervisorDiesStopsGracefully() async throws {
        // `sh` stands in for up: the service's parent, named in its environment, then killed with SIGKILL.
        let directory = UpCommandTests.temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = Ports.reserveRange(2)
        let script = """
            ROADSAVE_SUPERVISOR_PID=$$ ROADSAVE_APPLICATIONS=app-1 "$0" ingest --gateway-endpoint \(Ports.tcp(base)) \
            --records-endpoint \(Ports.tcp(base + 1)) --data-dir \(directory.path) &
            echo "service $!"
            wait
            """
        let shell = try RunningProcess(
            ["-c", script, Roadsave.executable.path], executable: URL(fileURLWithPath: "/bin/sh"))
        defer { shell.kill() }
        let line = await shell.waitForLine(timeout: 10) { $0.hasPrefix("service ") }
        let service = try #require(line?.split(separator: " ").last.flatMap { Int32($0) }, "\(shell.stdout)")
        defer { if isAlive(service) { kill(service, SIGKILL) } }
        // Running once it holds its data directory.
        let deadline = Date().addingTimeInterval(20)
        while Self.lockHolder(directory) != service && Date() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(Self.lockHolder(directory) == service, "\(shell.stderr)")
        #expect(await waitForError(shell, containing: "msg=starting", timeout: 10), "\(shell.stderr)")

        shell.signal(SIGKILL)
        let left = await Self.survivors([service], timeout: 15)
        #expect(left.isEmpty, "the service outlived its supervisor: \(shell.stderr)")
        #expect(await waitForError(shell, containing: "msg=stopped", timeout: 10), "\(shell.stderr)")
        #expect(shell.stderr.contains("msg=\"shutting down\" signal=SIGTERM"), "\(shell.stderr)")
    }

    @Test func twoServicesOnOneDataDirectory() async throws {
        let directory = UpCommandTests.temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func ingest(_ base: Int) throws -> RunningProcess {
            try RunningProcess([
                "ingest", "--applications", "app-1", "--gateway-endpoint", Ports.tcp(base),
                "--records-endpoint", Ports.tcp(base + 1), "--data-dir", directory.path,
            ])
        }
        let first = try ingest(Ports.reserveRange(2))
        defer { first.kill() }
        let deadline = Date().addingTimeInterval(20)
        while Self.lockHolder(directory) != first.pid && Date() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        try #require(Self.lockHolder(directory) == first.pid, "\(first.stderr)")

        // The second waits, then gives up naming the directory and the holder.
        let started = Date()
        let second = try ingest(Ports.reserveRange(2))
        defer { second.kill() }
        let status = await second.waitForExit(timeout: 30)
        #expect(status == 1, "\(second.stderr)")
        #expect(Date().timeIntervalSince(started) >= 9, "it waits for the lock before giving up")
        #expect(
            second.stderr.contains("data directory \(directory.path) is in use by process \(first.pid)"),
            "\(second.stderr)")
        #expect(!second.stderr.contains("msg=starting"), "\(second.stderr)")
        #expect(isAlive(first.pid))

        // A third one started while the first is still there takes over once the first has stopped.
        // It waits on the lock (LOCK open, not started), seen as it happens rather than after a pause, which would eat
        // into the 10 s it waits before giving up.
        let third = try ingest(Ports.reserveRange(2))
        defer { third.kill() }
        let lockFile = directory.appendingPathComponent("LOCK")
        let opening = Date().addingTimeInterval(20)
        while !Self.hasOpen(third.pid, lockFile) && third.process.isRunning && Date() < opening {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        #expect(Self.hasOpen(third.pid, lockFile), "it never opened \(lockFile.path): \(third.stderr)")
        #expect(third.process.isRunning && !third.stderr.contains("msg=starting"), "it waits: \(third.stderr)")
        await stopGracefully(first)
        let takeover = Date().addingTimeInterval(10)
        while Self.lockHolder(directory) != third.pid && Date() < takeover {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(Self.lockHolder(directory) == third.pid, "\(third.stderr)")
        #expect(await waitForError(third, containing: "msg=starting", timeout: 10), "\(third.stderr)")
        await stopGracefully(third)
    }
}
