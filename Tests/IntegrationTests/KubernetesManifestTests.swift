import Foundation
import RoadSaveTestKit
import Testing

/// deploy/kubernetes checked against the executables and docker-compose.yml, without a cluster (scripts/check-kubernetes.sh
/// validates the same files against the Kubernetes schemas): each service is a StatefulSet running an executable target
/// with flags and variables that executable documents, the same variables, data directories and grace periods as
/// compose, container ports that its endpoints bind, probes on its metrics port, and shards and peers that agree (ingest's
/// --shards, detection's replicas and --shard, the endpoint lists naming every pod of the headless Services). Reuses
/// ContainerFileTests' YAML reader and its `--help` runs.
@Suite("Kubernetes manifests")
struct KubernetesManifestTests {
    static let directory = TestPaths.repository.appendingPathComponent("deploy/kubernetes")

    struct Resource {
        var file: String
        var node: YAML
        var kind: String { node["kind"]?.scalar ?? "" }
        var name: String { node["metadata"]?["name"]?.scalar ?? "" }
    }

    /// A StatefulSet and its service container (the one whose command is a roadsave executable).
    struct Workload {
        var resource: Resource
        var spec: YAML { resource.node["spec"] ?? .map([]) }
        var pod: YAML { spec["template"]?["spec"] ?? .map([]) }
        var podLabels: [(key: String, value: String)] { spec["template"]?["metadata"]?["labels"]?.pairs ?? [] }
        var replicas: Int { Int(spec["replicas"]?.scalar ?? "1") ?? -1 }
        var container: YAML {
            pod["containers"]?.items.first { ($0["command"]?.strings?.first ?? "").hasPrefix("roadsave-") } ?? .map([])
        }
        var initContainers: [YAML] { pod["initContainers"]?.items ?? [] }
        var executable: String { container["command"]?.strings?.first ?? "" }
        var arguments: [String] {
            Array((container["command"]?.strings ?? []).dropFirst()) + (container["args"]?.strings ?? [])
        }
        var environment: [YAML] { container["env"]?.items ?? [] }
        func variable(_ name: String) -> YAML? { environment.first { $0["name"]?.scalar == name } }
        func argument(after flag: String) -> String? {
            guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        /// The arguments as the kubelet passes them to pod `index`: `$(VAR)` replaced by the variable's value, and
        /// by the pod's ordinal for one from the pod-index label.
        func arguments(pod index: Int) -> [String] {
            arguments.map { argument in
                var text = argument
                for match in argument.matches(of: /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/) {
                    let name = String(match.1)
                    let entry = variable(name)
                    let value =
                        entry?["valueFrom"]?["fieldRef"]?["fieldPath"]?.scalar == KubernetesManifestTests.podIndexField
                        ? String(index) : entry?["value"]?.scalar ?? ""
                    text = text.replacingOccurrences(of: "$(\(name))", with: value)
                }
                return text
            }
        }
        /// containerPort by name.
        var ports: [String: Int] {
            Dictionary(
                (container["ports"]?.items ?? []).compactMap { port in
                    port["name"]?.scalar.flatMap { name in Int(port["containerPort"]?.scalar ?? "").map { (name, $0) } }
                }, uniquingKeysWith: { first, _ in first })
        }
        /// Ports of the endpoints the service binds (`tcp://*:P`) and of --metrics-endpoint.
        var boundPorts: Set<Int> {
            Set(
                arguments.flatMap { $0.split(separator: ",") }.filter { $0.hasPrefix("tcp://*:") }
                    .compactMap { Int($0.split(separator: ":").last ?? "") })
        }
        var metricsPort: Int? {
            argument(after: "--metrics-endpoint").flatMap { Int($0.split(separator: ":").last ?? "") }
        }
        /// `tcp://` endpoints this service connects to.
        func connections(_ flag: String) -> [String] {
            (argument(after: flag) ?? "").split(separator: ",").map(String.init)
        }
        /// The volume mounted at or above `path`, and its mount.
        func mount(holding path: String) -> (mount: YAML, volume: String)? {
            let mounts = container["volumeMounts"]?.items ?? []
            let holding = mounts.filter { mount in
                guard let at = mount["mountPath"]?.scalar else { return false }
                return path == at || path.hasPrefix(at.hasSuffix("/") ? at : at + "/")
            }.max { ($0["mountPath"]?.scalar ?? "").count < ($1["mountPath"]?.scalar ?? "").count }
            return holding.flatMap { mount in mount["name"]?.scalar.map { (mount, $0) } }
        }
        func volume(_ name: String) -> YAML? { pod["volumes"]?.items.first { $0["name"]?.scalar == name } }
        var claimTemplates: [String] {
            spec["volumeClaimTemplates"]?.items.compactMap { $0["metadata"]?["name"]?.scalar } ?? []
        }
    }

    static let podIndexField = "metadata.labels['apps.kubernetes.io/pod-index']"

    static func resources() throws -> [Resource] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
            .sorted()
        return try files.flatMap { file in
            try YAML.documents(String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8))
                .map { Resource(file: file, node: $0) }
        }
    }

    static func workloads() throws -> [String: Workload] {
        let sets = try resources().filter { $0.kind == "StatefulSet" }.map { Workload(resource: $0) }
        return Dictionary(sets.map { ($0.executable, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static func compose() throws -> [String: ContainerFileTests.Service] {
        Dictionary(
            try ContainerFileTests.services().map { ($0.command.first ?? "", $0) },
            uniquingKeysWith: { first, _ in first })
    }

    /// The pods of a StatefulSet by their stable names: `NAME-I.SERVICE` for I in 0..<replicas.
    static func podNames(_ workload: Workload) -> [String] {
        let service = workload.spec["serviceName"]?.scalar ?? "?"
        return (0..<max(workload.replicas, 0)).map { "\(workload.resource.name)-\($0).\(service)" }
    }

    static func selects(_ selector: [(key: String, value: String)], _ labels: [(key: String, value: String)]) -> Bool {
        !selector.isEmpty
            && selector.allSatisfy { pair in labels.contains { $0.key == pair.key && $0.value == pair.value } }
    }

    @Test func eachServiceIsOneStatefulSetOfAnExecutableTargetInAFileWithAHeader() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter {
            $0.hasSuffix(".yaml")
        }
        #expect(Set(files).isSuperset(of: ["ingest.yaml", "detect.yaml", "notify.yaml"]), "\(files)")
        for file in files {
            let text = try String(contentsOf: Self.directory.appendingPathComponent(file), encoding: .utf8)
            #expect(text.hasPrefix("# RoadSave "), "\(file) does not start with its header comment")
        }
        let sets = try Self.resources().filter { $0.kind == "StatefulSet" }.map(Workload.init)
        #expect(
            sets.map(\.executable).sorted() == ["roadsave-detect", "roadsave-ingest", "roadsave-notify"],
            "\(sets.map(\.executable))")
        let targets = try ContainerFileTests.executableTargets()
        for workload in sets {
            #expect(targets.contains(workload.executable), "\(workload.resource.name): \(workload.executable)")
            #expect(
                workload.resource.file == workload.executable.replacingOccurrences(of: "roadsave-", with: "") + ".yaml",
                "\(workload.executable) is in \(workload.resource.file)")
        }
        let replicas = try Self.workloads().mapValues(\.replicas)
        #expect(replicas == ["roadsave-ingest": 2, "roadsave-detect": 2, "roadsave-notify": 1], "\(replicas)")
    }

    @Test func everyFlagIsDocumentedAndEachPodsCommandLineParses() async throws {
        for (executable, workload) in try Self.workloads() {
            let help = try await ContainerFileTests.help(executable)
            #expect(help.status == 0, "\(executable) --help\n\(help.text)")
            for flag in workload.arguments where flag.hasPrefix("-") {
                #expect(
                    help.text.contains("  \(flag) ") || help.text.contains("  \(flag)\n"),
                    "\(workload.resource.file): \(executable) does not document \(flag)")
            }
            // A $(VAR) the kubelet cannot expand stays in the argument as it is written.
            for argument in workload.arguments {
                for match in argument.matches(of: /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/) {
                    #expect(
                        workload.variable(String(match.1)) != nil,
                        "\(workload.resource.file): \(argument) names no variable")
                }
            }
            for index in 0..<workload.replicas {
                let arguments = workload.arguments(pod: index)
                let parsed = try await ContainerFileTests.help(executable, arguments: arguments)
                #expect(
                    parsed.status == 0,
                    "\(workload.resource.name)-\(index): \(arguments.joined(separator: " ")) is refused\n\(parsed.text)"
                )
            }
        }
    }

    @Test func theEnvironmentIsComposesAndNoCredentialIsWrittenDown() async throws {
        let compose = try Self.compose()
        for (executable, workload) in try Self.workloads() {
            let help = try await ContainerFileTests.help(executable)
            let names = workload.environment.compactMap { $0["name"]?.scalar }
            let roadsave = names.filter { $0.hasPrefix("ROADSAVE_") }
            for name in roadsave {
                #expect(
                    help.text.contains("env \(name),") || help.text.contains("env \(name) "),
                    "\(workload.resource.file): \(executable) does not document \(name)")
            }
            let composed = Set(compose[executable]?.environment.map(\.key) ?? [])
            #expect(
                Set(roadsave) == composed,
                "\(workload.resource.file): \(roadsave.sorted()), compose \(composed.sorted())")
            #expect(Set(names).count == names.count, "\(workload.resource.file): a variable is set twice")
            for entry in workload.environment {
                let name = entry["name"]?.scalar ?? ""
                if name.hasPrefix("ROADSAVE_") {
                    // Paths and the log level are written down; what compose takes from its environment (the
                    // applications, the webhooks and their secret) comes from a Secret.
                    if ContainerFileTests.literalVariables.contains(name) || name == "ROADSAVE_LOG_LEVEL" {
                        #expect(
                            entry["value"]?.scalar?.isEmpty == false, "\(workload.resource.file): \(name) has no value")
                    } else {
                        #expect(
                            entry["value"] == nil && entry["valueFrom"]?["secretKeyRef"]?["name"] != nil,
                            "\(workload.resource.file): \(name) is not taken from a Secret")
                    }
                } else {
                    // Other variables only for $(NAME) in the arguments, from the downward API.
                    #expect(
                        workload.arguments.contains { $0.contains("$(\(name))") }
                            && entry["valueFrom"]?["fieldRef"] != nil,
                        "\(workload.resource.file): \(name) is neither read by the service nor used in the arguments")
                }
            }
            if let applications = workload.variable("ROADSAVE_APPLICATIONS") {
                // ingest cannot start without applications: the pod must not start with the Secret missing.
                #expect(applications["valueFrom"]?["secretKeyRef"]?["optional"]?.scalar != "true")
            }
        }
    }

    @Test func containerPortsAreTheBoundOnesAndProbesAskTheMetricsPort() throws {
        let compose = try Self.compose()
        let resources = try Self.resources()
        for (executable, workload) in try Self.workloads() {
            let file = workload.resource.file
            let metrics = try #require(workload.metricsPort, "\(file): no --metrics-endpoint")
            #expect(
                Set(workload.ports.values) == workload.boundPorts.union([metrics]),
                "\(file): container ports \(workload.ports.values.sorted()), bound \(workload.boundPorts.sorted()) and metrics \(metrics)"
            )
            #expect(workload.ports.values.count == Set(workload.ports.values).count)
            // The same ports as compose.
            if let service = compose[executable] {
                #expect(
                    workload.boundPorts == Set(service.boundPorts),
                    "\(file): binds \(workload.boundPorts), compose \(service.boundPorts)")
                #expect(
                    metrics == service.metricsPort, "\(file): metrics \(metrics), compose \(service.metricsPort ?? 0)")
            }
            for (probe, path) in [
                ("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"), ("startupProbe", "/healthz"),
            ] {
                let get = workload.container[probe]?["httpGet"]
                #expect(get?["path"]?.scalar == path, "\(file): \(probe) asks \(get?["path"]?.scalar ?? "nothing")")
                let port = get?["port"]?.scalar ?? ""
                #expect(
                    (workload.ports[port] ?? Int(port)) == metrics,
                    "\(file): \(probe) on port \(port), metrics on \(metrics)")
            }
            // Every Service that selects these pods forwards to ports they have, under the same numbers.
            let pods = (0..<workload.replicas).map { index in
                workload.podLabels + [
                    (key: "statefulset.kubernetes.io/pod-name", value: "\(workload.resource.name)-\(index)")
                ]
            }
            let services = resources.filter { $0.kind == "Service" }.filter { service in
                pods.contains { Self.selects(service.node["spec"]?["selector"]?.pairs ?? [], $0) }
            }
            #expect(!services.isEmpty, "\(file): no Service selects \(workload.resource.name)'s pods")
            for service in services {
                for port in service.node["spec"]?["ports"]?.items ?? [] {
                    let target = port["targetPort"]?.scalar ?? ""
                    let number = workload.ports[target] ?? Int(target)
                    #expect(
                        number != nil && number == Int(port["port"]?.scalar ?? ""),
                        "\(service.name): port \(port["port"]?.scalar ?? "?") → \(target), not a port of \(workload.resource.name)"
                    )
                }
            }
        }
        // Published outside the cluster: what compose publishes (gateways, subscribers, catch-up), no more.
        let published = Set(
            resources.filter { $0.kind == "Service" && $0.node["spec"]?["type"]?.scalar == "LoadBalancer" }
                .flatMap { $0.node["spec"]?["ports"]?.items ?? [] }.compactMap { Int($0["port"]?.scalar ?? "") })
        let composed = Set(compose.values.flatMap(\.publishedPorts))
        #expect(published == composed, "published \(published.sorted()), compose \(composed.sorted())")
    }

    @Test func shardsAndPeersAgreeThroughTheHeadlessServices() throws {
        let workloads = try Self.workloads()
        let resources = try Self.resources()
        let ingest = try #require(workloads["roadsave-ingest"])
        let detect = try #require(workloads["roadsave-detect"])
        let notify = try #require(workloads["roadsave-notify"])
        for workload in [ingest, detect, notify] {
            // Each StatefulSet's pods get their DNS names from a headless Service that lists them ready or not.
            let name = workload.spec["serviceName"]?.scalar ?? ""
            let service = resources.first { $0.kind == "Service" && $0.name == name }
            #expect(
                service?.node["spec"]?["clusterIP"]?.scalar == "None",
                "\(workload.resource.file): \(name) is not headless")
            #expect(
                service?.node["spec"]?["publishNotReadyAddresses"]?.scalar == "true",
                "\(workload.resource.file): \(name) hides pods that are not ready")
            #expect(Self.selects(service?.node["spec"]?["selector"]?.pairs ?? [], workload.podLabels))
            #expect(Self.selects(workload.spec["selector"]?["matchLabels"]?.pairs ?? [], workload.podLabels))
        }
        // ingest stores N shards, detection runs N pods, pod I taking shard I/N from the pod-index label.
        let shards = try #require(Int(ingest.argument(after: "--shards") ?? ""), "ingest.yaml: no --shards")
        #expect(detect.replicas == shards, "detect replicas \(detect.replicas), ingest --shards \(shards)")
        #expect(
            detect.argument(after: "--shard") == "$(POD_INDEX)/\(shards)",
            "\(detect.argument(after: "--shard") ?? "no --shard")")
        #expect(detect.variable("POD_INDEX")?["valueFrom"]?["fieldRef"]?["fieldPath"]?.scalar == Self.podIndexField)
        #expect(
            (0..<detect.replicas).map { detect.arguments(pod: $0)[detect.arguments.firstIndex(of: "--shard")! + 1] }
                == (0..<shards).map { "\($0)/\(shards)" })
        // Each reader lists every pod of its upstream, by its stable name, on the port the upstream binds.
        let records = try #require(ingest.ports["records"])
        #expect(
            detect.connections("--records-endpoint") == Self.podNames(ingest).map { "tcp://\($0):\(records)" },
            "detect --records-endpoint \(detect.connections("--records-endpoint"))")
        #expect(ingest.argument(after: "--records-endpoint") == "tcp://*:\(records)")
        let events = try #require(detect.ports["events"])
        #expect(
            notify.connections("--events-endpoint") == Self.podNames(detect).map { "tcp://\($0):\(events)" },
            "notify --events-endpoint \(notify.connections("--events-endpoint"))")
        #expect(detect.argument(after: "--events-endpoint") == "tcp://*:\(events)")
        // Gateways reach each ingest pod on its own Service (they pick one by device hash), never a load balancer of all.
        let gatewayServices = resources.filter { resource in
            resource.kind == "Service"
                && (resource.node["spec"]?["ports"]?.items ?? []).contains { $0["targetPort"]?.scalar == "gateway" }
                && resource.node["spec"]?["clusterIP"]?.scalar != "None"
        }
        let pods = gatewayServices.map {
            $0.node["spec"]?["selector"]?["statefulset.kubernetes.io/pod-name"]?.scalar ?? "all"
        }
        #expect(pods.sorted() == (0..<ingest.replicas).map { "ingest-\($0)" }, "gateway Services select \(pods)")
    }

    @Test func podsRunAsTheImageUserWithComposesStoresGracePeriodsAndKeys() throws {
        let compose = try Self.compose()
        for (executable, workload) in try Self.workloads() {
            let file = workload.resource.file
            let pod = workload.pod
            for key in ["runAsUser", "runAsGroup", "fsGroup"] {
                #expect(pod["securityContext"]?[key]?.scalar == "10001", "\(file): \(key)")
            }
            #expect(pod["securityContext"]?["runAsNonRoot"]?.scalar == "true", "\(file): runAsNonRoot")
            #expect(
                pod["automountServiceAccountToken"]?.scalar == "false", "\(file): a service account token is mounted")
            for container in [workload.container] + workload.initContainers {
                let context = container["securityContext"]
                #expect(context?["allowPrivilegeEscalation"]?.scalar == "false", "\(file): privilege escalation")
                #expect(context?["readOnlyRootFilesystem"]?.scalar == "true", "\(file): writable root file system")
                #expect(context?["capabilities"]?["drop"]?.strings == ["ALL"], "\(file): capabilities")
                #expect(
                    container["resources"]?["limits"]?["memory"] != nil
                        && container["resources"]?["requests"]?["cpu"] != nil,
                    "\(file): \(container["name"]?.scalar ?? "?") has no memory limit or CPU request")
            }
            let service = try #require(compose[executable], "\(executable) is not in docker-compose.yml")
            // compose's stop_grace_period ("15s").
            let grace = service.node["stop_grace_period"]?.scalar ?? ""
            #expect(
                pod["terminationGracePeriodSeconds"]?.scalar == String(grace.dropLast()),
                "\(file): grace period, compose \(grace)")
            // The store: compose's data directory, on the pod's own claim.
            let directory = workload.variable("ROADSAVE_DATA_DIR")?["value"]?.scalar ?? ""
            #expect(
                directory == service.environment.first { $0.key == "ROADSAVE_DATA_DIR" }?.value,
                "\(file): ROADSAVE_DATA_DIR \(directory)")
            let store = workload.mount(holding: directory)
            #expect(
                store?.mount["mountPath"]?.scalar == directory && workload.claimTemplates.contains(store?.volume ?? ""),
                "\(file): \(directory) is not on a volumeClaimTemplate")
            // Keys: the public keys and the allow list read where a Secret is mounted read-only (whole, so that an
            // updated allow list reaches the pod); the secret key from a memory emptyDir an init container fills 0400.
            for name in ["ROADSAVE_ALLOW", "ROADSAVE_CURVE_SERVER_KEY"] {
                guard let path = workload.variable(name)?["value"]?.scalar else { continue }
                let mount = workload.mount(holding: path)
                #expect(
                    mount?.mount["readOnly"]?.scalar == "true" && mount?.mount["subPath"] == nil
                        && workload.volume(mount?.volume ?? "")?["secret"] != nil,
                    "\(file): \(name) \(path) is not in a Secret volume")
            }
            let key = try #require(
                workload.variable("ROADSAVE_CURVE_SECRET_KEY")?["value"]?.scalar, "\(file): no secret key")
            let keyMount = workload.mount(holding: key)
            #expect(keyMount?.mount["readOnly"]?.scalar == "true")
            #expect(
                workload.volume(keyMount?.volume ?? "")?["emptyDir"]?["medium"]?.scalar == "Memory", "\(file): \(key)")
            let copy = workload.initContainers.first { $0["command"]?.strings?.last == key }?["command"]?.strings ?? []
            #expect(
                copy.starts(with: ["install", "-m", "0400"]) && copy.count == 5,
                "\(file): no init container copies \(key) 0400")
        }
    }
}

extension YAML {
    /// A block list's items.
    var items: [YAML] {
        if case .list(let items) = self { return items }
        return []
    }

    /// A map's scalar values by key.
    var pairs: [(key: String, value: String)] {
        guard case .map(let pairs) = self else { return [] }
        return pairs.compactMap { pair in pair.value.scalar.map { (pair.key, $0) } }
    }
}
