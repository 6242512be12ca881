import Foundation
import RoadSaveTestKit
import Testing

/// The container files checked against the executables, without a Docker engine (`make container-test` builds and
/// runs them for real): every compose service runs an executable target of the package, with flags and environment
/// variables that executable documents, and the published ports are the ones its endpoints bind.
@Suite("Dockerfile and docker-compose.yml")
struct ContainerFileTests {
    static let composeFile = TestPaths.repository.appendingPathComponent("docker-compose.yml")
    static let dockerfile = TestPaths.repository.appendingPathComponent("Dockerfile")

    struct Service {
        var name: String
        var node: YAML
        var command: [String] { node["command"]?.strings ?? [] }
        var environment: [(key: String, value: String)] {
            guard case .map(let pairs)? = node["environment"] else { return [] }
            return pairs.compactMap { pair in pair.value.scalar.map { (pair.key, $0) } }
        }
        /// Published "HOST:CONTAINER" → the container port.
        var publishedPorts: [Int] {
            (node["ports"]?.strings ?? []).compactMap { Int($0.split(separator: ":").last ?? "") }
        }
        /// Every endpoint in the command and the environment (comma-separated lists taken apart).
        var endpoints: [String] {
            (command + environment.map(\.value)).flatMap { $0.split(separator: ",").map(String.init) }
                .filter { $0.hasPrefix("tcp://") }
        }
        /// "VOLUME:PATH" mounts → (volume, path).
        var volumes: [(volume: String, path: String)] {
            (node["volumes"]?.strings ?? []).compactMap { mount in
                let parts = mount.split(separator: ":").map(String.init)
                return parts.count >= 2 ? (parts[0], parts[1]) : nil
            }
        }
        /// Ports of the endpoints this service binds (`tcp://*:P`, `tcp://0.0.0.0:P`).
        /// The port of `--metrics-endpoint` (/metrics, /healthz, /readyz), when the service serves one.
        var metricsPort: Int? {
            guard let flag = command.firstIndex(of: "--metrics-endpoint"), flag + 1 < command.count else { return nil }
            return Int(command[flag + 1].split(separator: ":").last ?? "")
        }
        var boundPorts: [Int] {
            endpoints.filter { $0.hasPrefix("tcp://*:") || $0.hasPrefix("tcp://0.0.0.0:") }
                .compactMap { Int($0.split(separator: ":").last ?? "") }
        }
        /// (host, port) of the endpoints this service connects to.
        var connections: [(host: String, port: Int)] {
            endpoints.filter { !$0.hasPrefix("tcp://*:") && !$0.hasPrefix("tcp://0.0.0.0:") }.compactMap { endpoint in
                let address = endpoint.dropFirst("tcp://".count)
                guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...])
                else { return nil }
                return (String(address[..<colon]), port)
            }
        }
    }

    static func services() throws -> [Service] {
        guard case .map(let pairs)? = try compose()["services"] else {
            throw TestFailure("docker-compose.yml has no services")
        }
        return pairs.map { Service(name: $0.key, node: $0.value) }
    }

    static func compose() throws -> YAML {
        try YAML.parse(try String(contentsOf: composeFile, encoding: .utf8))
    }

    /// The environment values written here rather than taken from `docker compose`'s environment: where the
    /// service's volume is mounted, and where compose mounts the key secrets (paths, not the keys).
    static let literalVariables: Set<String> = [
        "ROADSAVE_DATA_DIR", "ROADSAVE_CURVE_SECRET_KEY", "ROADSAVE_ALLOW",
        "ROADSAVE_CURVE_SERVER_KEY",
    ]

    /// The executable targets of Package.swift.
    static func executableTargets() throws -> Set<String> {
        let manifest = try String(
            contentsOf: TestPaths.repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #"\.executableTarget\(\s*name:\s*"([^"]+)""#)
        let range = NSRange(manifest.startIndex..., in: manifest)
        return Set(
            pattern.matches(in: manifest, range: range).compactMap {
                Range($0.range(at: 1), in: manifest).map { String(manifest[$0]) }
            })
    }

    /// `EXECUTABLE --help`, run for real.
    static func help(_ executable: String, arguments: [String] = [], environment: [String: String] = [:]) async throws
        -> (status: Int32?, text: String)
    {
        let child = try Child(
            name: executable, executable: Executables.named(executable), arguments: arguments + ["--help"],
            environment: environment)
        defer { child.kill() }
        let status = await child.waitForExit(timeout: 20)
        return (status, (child.stdout + child.stderr).map(\.text).joined(separator: "\n"))
    }

    @Test func composeHasTheThreeServicesWithGracefulStopsAndHealthChecks() throws {
        let services = try Self.services()
        #expect(
            Set(services.map { $0.command.first ?? "" }) == ["roadsave-ingest", "roadsave-detect", "roadsave-notify"])
        for service in services {
            #expect(service.node["stop_signal"]?.scalar == "SIGTERM", "\(service.name): stop_signal")
            let grace = service.node["stop_grace_period"]?.scalar ?? ""
            // At least the detection's and notifier's own grace for work in hand (10 s).
            #expect(
                Int(grace.dropLast()) ?? 0 >= 10 && grace.hasSuffix("s"), "\(service.name): stop_grace_period \(grace)")
            let check = service.node["healthcheck"]?["test"]?.strings ?? []
            #expect(!check.isEmpty, "\(service.name): no health check")
            // The health check asks the service's own metrics endpoint whether it is alive (a GET of /healthz through
            // bash's /dev/tcp: the image has no HTTP client), and passes only on a 200. Never /readyz: readiness
            // depends on peers, and an orchestrator restarting a shard that is catching up would never let it.
            let script = check.joined(separator: " ")
            let probed = script.firstMatch(of: /\/dev\/tcp\/127\.0\.0\.1\/([0-9]+)/).flatMap { Int($0.1) }
            #expect(probed != nil && probed == service.metricsPort, "\(service.name): health check \(check)")
            #expect(
                script.contains("GET /healthz") && script.contains("= 200"), "\(service.name): health check \(check)")
            #expect(!script.contains("/readyz"), "\(service.name): a health check of readiness \(check)")
        }
    }

    @Test func everyCommandIsAnExecutableTargetAndEveryFlagIsDocumented() async throws {
        let targets = try Self.executableTargets()
        for service in try Self.services() {
            let command = service.command
            let executable = try #require(command.first, "\(service.name) has no command")
            #expect(targets.contains(executable), "\(service.name): \(executable) is not an executable target")
            #expect(FileManager.default.isExecutableFile(atPath: Executables.named(executable).path))
            let help = try await Self.help(executable)
            #expect(help.status == 0, "\(executable) --help\n\(help.text)")
            for flag in command.dropFirst() where flag.hasPrefix("-") {
                #expect(
                    help.text.contains("  \(flag) ") || help.text.contains("  \(flag)\n"),
                    "\(service.name): \(executable) does not document \(flag)")
            }
            // The whole command line parses (flags and values as the container passes them).
            let parsed = try await Self.help(executable, arguments: Array(command.dropFirst()))
            #expect(parsed.status == 0, "\(service.name): \(command.joined(separator: " ")) is refused\n\(parsed.text)")
        }
    }

    @Test func everyEnvironmentVariableIsDocumentedAndNoSecretIsWrittenDown() async throws {
        for service in try Self.services() {
            let executable = try #require(service.command.first)
            let help = try await Self.help(executable)
            for (key, value) in service.environment where key.hasPrefix("ROADSAVE_") {
                #expect(
                    help.text.contains("env \(key),") || help.text.contains("env \(key) "),
                    "\(service.name): \(executable) does not document \(key)")
                // Values come from the environment of `docker compose`, never written here (secrets above all),
                // except where the volume is mounted.
                #expect(
                    Self.literalVariables.contains(key) || (value.hasPrefix("${") && value.hasSuffix("}")),
                    "\(service.name): \(key) has a literal value")
            }
            #expect(
                !service.environment.contains { !$0.key.hasPrefix("ROADSAVE_") },
                "\(service.name): a variable the services do not read")
        }
        let all = try Self.services().flatMap(\.environment).map(\.key)
        #expect(all.contains("ROADSAVE_APPLICATIONS"))
        #expect(all.contains("ROADSAVE_WEBHOOK_SECRET"))
        // sensor-ingest cannot start without applications: compose must refuse to start rather than run it unset.
        let applications = try Self.services().flatMap(\.environment).first { $0.key == "ROADSAVE_APPLICATIONS" }
        #expect(applications?.value.contains(":?") == true, "ROADSAVE_APPLICATIONS should be required (${…:?…})")
    }

    @Test func publishedPortsAgreeWithTheEndpoints() throws {
        let services = try Self.services()
        // The endpoints outside programs use (PROTOCOL §7): gateways 5550, subscribers 5554, catch-up 5555. Control
        // (5552) is published only when asked for, with docker-compose.control.yml.
        let published = Set(services.flatMap(\.publishedPorts))
        #expect(published == [5550, 5554, 5555], "published \(published.sorted())")
        let override = try String(
            contentsOf: TestPaths.repository.appendingPathComponent("docker-compose.control.yml"),
            encoding: .utf8)
        #expect(override.contains("\"5552:5552\""), "docker-compose.control.yml does not publish the control port")
        for service in services {
            for port in service.publishedPorts {
                #expect(
                    service.boundPorts.contains(port),
                    "\(service.name) publishes \(port) but binds \(service.boundPorts)")
            }
            // Every connection goes to a service of this file, on a port that service binds.
            for connection in service.connections {
                let peer = services.first { $0.name == connection.host }
                #expect(peer != nil, "\(service.name) connects to \(connection.host), which is not a service here")
                #expect(
                    peer?.boundPorts.contains(connection.port) == true,
                    "\(service.name) connects to \(connection.host):\(connection.port), which it does not bind")
            }
        }
        // The chain: ingest's records reach detection, detection's events reach the notifier.
        let byExecutable = Dictionary(uniqueKeysWithValues: services.map { ($0.command.first ?? "", $0) })
        let ingest = try #require(byExecutable["roadsave-ingest"])
        let detect = try #require(byExecutable["roadsave-detect"])
        let notify = try #require(byExecutable["roadsave-notify"])
        #expect(detect.connections.contains { $0.host == ingest.name })
        #expect(notify.connections.contains { $0.host == detect.name })
    }

    @Test func everyServiceKeepsItsStateInAVolumeOfItsOwn() throws {
        let services = try Self.services()
        let declared: Set<String>
        if case .map(let pairs)? = try Self.compose()["volumes"] {
            declared = Set(pairs.map(\.key))
        } else {
            declared = []
        }
        let dockerfile = try String(contentsOf: Self.dockerfile, encoding: .utf8)
        var directories: [String] = []
        for service in services {
            let directory = service.environment.first { $0.key == "ROADSAVE_DATA_DIR" }?.value
            let executable = service.command.first ?? ""
            let name = executable.replacingOccurrences(of: "roadsave-", with: "")
            #expect(
                directory == "/var/lib/roadsave/\(name)", "\(service.name): ROADSAVE_DATA_DIR \(directory ?? "unset")")
            guard let directory else { continue }
            directories.append(directory)
            let mount = service.volumes.first { $0.path == directory }
            #expect(mount != nil, "\(service.name): no volume mounted at \(directory)")
            if let mount {
                #expect(declared.contains(mount.volume), "\(service.name): volume \(mount.volume) is not declared")
            }
            // The image makes the directory for the service user, so a fresh volume is writable by it.
            #expect(dockerfile.contains(directory), "the Dockerfile does not create \(directory)")
        }
        #expect(Set(directories).count == services.count, "a data directory is shared: \(directories)")
        let mounted = services.flatMap { $0.volumes.map(\.volume) }
        #expect(Set(mounted).count == mounted.count, "a volume is mounted by two services: \(mounted)")
        #expect(dockerfile.contains("chown -R roadsave:roadsave /var/lib/roadsave"))
    }

    @Test func dockerfileBuildsOnSwiftAndRunsTheServicesAsANonRootUser() throws {
        let text = try String(contentsOf: Self.dockerfile, encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.hasPrefix("#")
        }
        let froms = lines.filter { $0.hasPrefix("FROM ") }
        #expect(froms.count >= 2, "a multi-stage build")
        #expect(text.contains("swift:6.0-bookworm"))
        #expect(text.contains("debian:bookworm-slim") || text.contains("swift:6.0-bookworm-slim"))
        for package in [
            "libzmq3-dev", "libmsgpack-dev", "libsodium-dev", "libsqlite3-dev", "libzstd-dev", "libmicrohttpd-dev",
            "libzmq5", "libmsgpackc2", "libsodium23", "libsqlite3-0", "libzstd1", "libmicrohttpd12",
        ] {
            #expect(text.contains(package), "\(package)")
        }
        #expect(text.contains("swift build -c release"))
        for executable in ["roadsave-ingest", "roadsave-detect", "roadsave-notify"] {
            #expect(text.contains(executable), "\(executable) is not in the image")
        }
        // The last USER is the one the services run as: not root.
        let user = lines.last { $0.hasPrefix("USER ") }.map {
            $0.dropFirst(5).split(separator: ":").first.map(String.init) ?? ""
        }
        #expect(user != nil && user != "root" && user != "0", "runs as \(user ?? "root (no USER)")")
        #expect(lines.contains("STOPSIGNAL SIGTERM"))
        #expect(lines.contains("EXPOSE 5550 5551 5552 5553 5554 5555 9550 9551 9552"))
    }

    /// What `make container-test` relies on, checked without an engine: the files load in Debian's docker-compose
    /// 1.29, and the image it builds without a network finds every package the runtime stage asks for in its base.
    @Test func containerTestCanBuildAndRunTheFilesOffline() throws {
        let compose = try Self.compose()
        // docker-compose 1.29 refuses a top-level `name` ("does not match any of the regexes: '^x-'").
        if case .map(let pairs) = compose {
            #expect(
                Set(pairs.map(\.key)).isSubset(of: ["services", "volumes", "secrets", "networks"]),
                "top-level keys \(pairs.map(\.key))")
        }
        for service in try Self.services() {
            #expect(service.node["image"]?.scalar == "${ROADSAVE_IMAGE:-roadsave:latest}", "\(service.name): image")
        }
        // The packages of the runtime stage (the RUN after the last FROM) and those the script puts in the base.
        let dockerfile = try String(contentsOf: Self.dockerfile, encoding: .utf8)
        let runtimeStage = try #require(dockerfile.range(of: "\nFROM ", options: .backwards)).upperBound
        let script = try String(
            contentsOf: TestPaths.repository.appendingPathComponent("scripts/container-lib.sh"),
            encoding: .utf8)
        func packages(_ text: Substring, after marker: String) -> Set<String> {
            guard let start = text.range(of: marker)?.upperBound, let end = text[start...].firstIndex(of: "\"") else {
                return []
            }
            return Set(text[start..<end].split { $0 == " " || $0 == "\n" || $0 == "\\" }.map(String.init))
        }
        let runtime = packages(dockerfile[runtimeStage...], after: "packages=\"")
        let base = packages(script[...], after: "RUNTIME_PACKAGES=\"")
        #expect(runtime.contains("libzmq5") && runtime.contains("libmicrohttpd12"), "runtime stage packages \(runtime)")
        #expect(
            runtime == base, "the Dockerfile's runtime stage \(runtime.sorted()), the script's base \(base.sorted())")
        // The test's own network has no way out and publishes nothing.
        let overlay = try YAML.parse(
            String(
                contentsOf: TestPaths.repository.appendingPathComponent(
                    "scripts/container-test.compose.yml"), encoding: .utf8))
        #expect(overlay["networks"]?["default"]?["internal"]?.scalar == "true")
    }
}

/// Just enough YAML for docker-compose.yml's and deploy/kubernetes' shapes: block maps and block lists by indentation
/// (a list indented under its key), maps as list items (`- name: x` with the rest of the map under `name`), plain or
/// quoted scalars, flow lists written as JSON (`["CMD", "bash", …]`), and several documents separated by `---` lines
/// (`documents`). Comments are whole lines starting with `#`.
indirect enum YAML {
    case scalar(String)
    case list([YAML])
    case map([(key: String, value: YAML)])

    subscript(key: String) -> YAML? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }

    var scalar: String? {
        if case .scalar(let text) = self { return text }
        return nil
    }

    var strings: [String]? {
        guard case .list(let items) = self else { return nil }
        return items.compactMap(\.scalar)
    }

    static func parse(_ text: String) throws -> YAML {
        var lines: [(indent: Int, text: String)] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            let indent = line.prefix { $0 == " " }.count
            // `- key: value` starts a map that is a list item: read as `-` alone, then `key: value` at the column it
            // starts in, where the map's further keys are.
            if trimmed.hasPrefix("- ") {
                let rest = trimmed.dropFirst(1).trimmingCharacters(in: .whitespaces)
                if keyColon(rest) != nil {
                    lines.append((indent, "-"))
                    lines.append((indent + trimmed.count - rest.count, rest))
                    continue
                }
            }
            lines.append((indent, trimmed))
        }
        var position = 0
        return try block(lines, &position, indent: 0)
    }

    /// Every document of a multi-document file (split at `---` lines), leaving out those with nothing but comments.
    static func documents(_ text: String) throws -> [YAML] {
        var documents: [[Substring]] = [[]]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces) == "---" {
                documents.append([])
            } else {
                documents[documents.count - 1].append(line)
            }
        }
        return try documents.filter { lines in
            lines.contains {
                let text = $0.trimmingCharacters(in: .whitespaces)
                return !text.isEmpty && !text.hasPrefix("#")
            }
        }.map { try parse($0.joined(separator: "\n")) }
    }

    private static func block(_ lines: [(indent: Int, text: String)], _ position: inout Int, indent: Int) throws -> YAML
    {
        guard position < lines.count else { return .map([]) }
        if lines[position].text.hasPrefix("- ") || lines[position].text == "-" {
            var items: [YAML] = []
            while position < lines.count, lines[position].indent == indent, lines[position].text.hasPrefix("-") {
                let rest = lines[position].text.dropFirst(1).trimmingCharacters(in: .whitespaces)
                position += 1
                items.append(try value(rest, lines, &position, parentIndent: indent))
            }
            return .list(items)
        }
        var pairs: [(key: String, value: YAML)] = []
        while position < lines.count, lines[position].indent == indent {
            let text = lines[position].text
            guard let colon = keyColon(text) else { throw TestFailure("YAML: expected \"key:\" in \"\(text)\"") }
            let key = unquote(String(text[..<colon]))
            let rest = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            position += 1
            pairs.append((key, try value(rest, lines, &position, parentIndent: indent)))
        }
        if position < lines.count, lines[position].indent > indent {
            throw TestFailure("YAML: unexpected indentation at \"\(lines[position].text)\"")
        }
        return .map(pairs)
    }

    /// The value after "key:" or "-": inline, or the block indented under it.
    private static func value(
        _ inline: String, _ lines: [(indent: Int, text: String)], _ position: inout Int,
        parentIndent: Int
    ) throws -> YAML {
        if inline.isEmpty {
            guard position < lines.count, lines[position].indent > parentIndent else { return .scalar("") }
            return try block(lines, &position, indent: lines[position].indent)
        }
        if inline.hasPrefix("[") {
            guard let items = try JSONSerialization.jsonObject(with: Data(inline.utf8)) as? [Any] else {
                throw TestFailure("YAML: a flow list must be written as JSON here: \(inline)")
            }
            return .list(items.map { .scalar("\($0)") })
        }
        return .scalar(unquote(inline))
    }

    /// The colon ending a mapping key (not one inside a quoted key or a value such as tcp://…).
    private static func keyColon(_ text: String) -> String.Index? {
        var quote: Character?
        for index in text.indices {
            let character = text[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == ":" {
                let next = text.index(after: index)
                if next == text.endIndex || text[next] == " " { return index }
            }
        }
        return nil
    }

    private static func unquote(_ text: String) -> String {
        if text.count >= 2, let first = text.first, first == text.last, first == "\"" || first == "'" {
            return String(text.dropFirst().dropLast())
        }
        return text
    }
}
