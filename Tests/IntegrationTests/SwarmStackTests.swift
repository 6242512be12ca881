import Foundation
import RoadSaveTestKit
import Testing

/// deploy/swarm/stack.yml checked against the executables and docker-compose.yml, without an engine (`make swarm-test`
/// deploys it for real on three docker-in-docker nodes): every service runs an executable target with flags and
/// variables it documents, the health checks are liveness, ports are published in host mode with no virtual IPs, the
/// shards agree (ingests' --shards, detection's replicas and ROADSAVE_SHARD, the notifier's list of detection
/// hostnames), each stateful process has a volume of its own and each secret key is readable by the services' user
/// alone. Reuses ContainerFileTests' YAML reader, its `--help` runs and its view of a compose service.
@Suite("Docker Swarm stack")
struct SwarmStackTests {
    static let stackFile = TestPaths.repository.appendingPathComponent("deploy/swarm/stack.yml")

    static func stack() throws -> YAML {
        try YAML.parse(try String(contentsOf: stackFile, encoding: .utf8))
    }

    static func services() throws -> [ContainerFileTests.Service] {
        guard case .map(let pairs)? = try stack()["services"] else { throw TestFailure("stack.yml has no services") }
        return pairs.map { ContainerFileTests.Service(name: $0.key, node: $0.value) }
    }

    static func service(_ name: String) throws -> ContainerFileTests.Service {
        try #require(try services().first { $0.name == name }, "stack.yml has no service \(name)")
    }

    static func variable(_ name: String, of service: ContainerFileTests.Service) -> String? {
        service.environment.first { $0.key == name }?.value
    }

    @Test func everyServiceRunsADocumentedCommandLineWithDocumentedVariables() async throws {
        let targets = try ContainerFileTests.executableTargets()
        let compose = try ContainerFileTests.services()
        for service in try Self.services() {
            let command = service.command
            let executable = try #require(command.first, "\(service.name) has no command")
            #expect(targets.contains(executable), "\(service.name): \(executable) is not an executable target")
            let help = try await ContainerFileTests.help(executable)
            for flag in command.dropFirst() where flag.hasPrefix("-") {
                #expect(
                    help.text.contains("  \(flag) ") || help.text.contains("  \(flag)\n"),
                    "\(service.name): \(executable) does not document \(flag)")
            }
            // The command line parses with the variables as a task of slot 1 gets them (templates filled in).
            var environment: [String: String] = [:]
            for (key, value) in service.environment {
                #expect(
                    help.text.contains("env \(key),") || help.text.contains("env \(key) "),
                    "\(service.name): \(executable) does not document \(key)")
                if !value.hasPrefix("${") {
                    environment[key] = value.replacingOccurrences(of: "{{.Task.Slot}}", with: "1")
                }
            }
            if executable == "roadsave-ingest" { environment["ROADSAVE_APPLICATIONS"] = "app-1" }
            environment["ROADSAVE_CURVE_SECRET_KEY"] = nil
            environment["ROADSAVE_CURVE_SERVER_KEY"] = nil
            environment["ROADSAVE_ALLOW"] = nil
            let parsed = try await ContainerFileTests.help(
                executable, arguments: Array(command.dropFirst()) + ["--insecure"],
                environment: environment)
            #expect(parsed.status == 0, "\(service.name): \(command.joined(separator: " ")) is refused\n\(parsed.text)")
            // The same variables as the single-host compose file, whose values this one follows.
            let single = try #require(compose.first { $0.command.first == executable })
            #expect(
                Set(service.environment.map(\.key)).subtracting(["ROADSAVE_SHARD", "ROADSAVE_SHARD_BASE"])
                    == Set(single.environment.map(\.key)), "\(service.name): variables differ from compose's")
        }
    }

    @Test func theHealthCheckIsLivenessAndThereAreNoVirtualIPs() throws {
        for service in try Self.services() {
            let script = (service.node["healthcheck"]?["test"]?.strings ?? []).joined(separator: " ")
            let probed = script.firstMatch(of: /\/dev\/tcp\/127\.0\.0\.1\/([0-9]+)/).flatMap { Int($0.1) }
            #expect(probed != nil && probed == service.metricsPort, "\(service.name): health check \(script)")
            #expect(script.contains("GET /healthz") && !script.contains("/readyz"), "\(service.name): \(script)")
            #expect(service.node["deploy"]?["endpoint_mode"]?.scalar == "dnsrr", "\(service.name): endpoint_mode")
            #expect(service.node["stop_signal"]?.scalar == "SIGTERM", "\(service.name): stop_signal")
            for port in service.node["ports"]?.items ?? [] {
                #expect(port["mode"]?.scalar == "host", "\(service.name): a port not in host mode")
                let target = Int(port["target"]?.scalar ?? "")
                #expect(target.map(service.boundPorts.contains) == true, "\(service.name) publishes \(target as Any)")
            }
        }
        let published = try Self.services().flatMap { $0.node["ports"]?.items ?? [] }.compactMap {
            Int($0["published"]?.scalar ?? "")
        }
        #expect(Set(published) == [5550, 5554, 5555], "published \(published)")
    }

    @Test func theShardsAndThePeersAgree() throws {
        let services = try Self.services()
        let ingests = services.filter { $0.command.first == "roadsave-ingest" }
        #expect(ingests.count == 2)
        let detect = try Self.service("detect")
        let replicas = try #require(Int(detect.node["deploy"]?["replicas"]?.scalar ?? ""))
        for ingest in ingests {
            let shards = ingest.command.firstIndex(of: "--shards").map { ingest.command[$0 + 1] }
            #expect(
                shards == String(replicas),
                "\(ingest.name): --shards \(shards ?? "none"), detection has \(replicas) replicas")
            #expect(ingest.node["hostname"]?.scalar == ingest.name)
        }
        // Slot S of N is shard S - 1: the slot names the shard, the hostname and the volume.
        #expect(Self.variable("ROADSAVE_SHARD", of: detect) == "{{.Task.Slot}}/\(replicas)")
        #expect(Self.variable("ROADSAVE_SHARD_BASE", of: detect) == "1")
        #expect(detect.node["hostname"]?.scalar == "detect-{{.Task.Slot}}")
        #expect(try Self.stack()["volumes"]?["detect-data"]?["name"]?.scalar?.contains("{{.Task.Slot}}") == true)
        #expect(detect.node["deploy"]?["placement"]?["max_replicas_per_node"]?.scalar == "1")
        // Detection reads every ingest's journal; the notifier every shard's outbox.
        #expect(Set(detect.connections.map(\.host)) == Set(ingests.map(\.name)))
        #expect(Set(detect.connections.map(\.port)) == [5551])
        let notify = try Self.service("notify")
        #expect(notify.connections.map(\.host) == (1...replicas).map { "detect-\($0)" })
        #expect(Set(notify.connections.map(\.port)) == [5553])
    }

    @Test func stateLivesInVolumesAndSecretKeysAreTheServicesOwn() throws {
        var volumes: [String] = []
        for service in try Self.services() {
            let dataDirectory = try #require(Self.variable("ROADSAVE_DATA_DIR", of: service))
            let mount = service.volumes.first { $0.path == dataDirectory }
            #expect(mount != nil, "\(service.name): no volume at \(dataDirectory)")
            volumes += mount.map { [$0.volume] } ?? []
            // Ingests and the notifier stay with their volume: pinned by a node label.
            if service.name != "detect" {
                let constraints = service.node["deploy"]?["placement"]?["constraints"]?.strings ?? []
                #expect(constraints.contains { $0.hasPrefix("node.labels.roadsave.") }, "\(service.name): not pinned")
            }
            let secretKey = try #require(Self.variable("ROADSAVE_CURVE_SECRET_KEY", of: service))
            let secret = (service.node["secrets"]?.items ?? []).first {
                "/run/secrets/" + ($0["source"]?.scalar ?? "") == secretKey
            }
            #expect(
                secret?["uid"]?.scalar == "10001" && secret?["mode"]?.scalar == "0400",
                "\(service.name): \(secretKey) is not the services' user's alone")
        }
        #expect(Set(volumes).count == volumes.count, "a volume shared by two services: \(volumes)")
        for (name, secret) in (try Self.stack()["secrets"]).map({ if case .map(let pairs) = $0 { pairs } else { [] } })
            ?? []
        {
            #expect(secret["external"]?.scalar == "true", "secret \(name) is not external")
        }
    }
}
