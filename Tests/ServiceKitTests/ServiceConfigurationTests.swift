import CommandSettings
import Foundation
import Testing

@testable import ServiceKit

@Suite struct ServiceConfigurationTests {
    static let endpoint = Setting<String>(
        flag: "--endpoint", environment: "T_ENDPOINT", key: "endpoint", default: "tcp://*:1",
        help: "e")
    static let secret = Setting<String?>.text(
        flag: "--secret", environment: "T_SECRET", key: "secret", help: "s", secret: true)
    static let verbose = Setting<Bool>(
        flag: "--verbose", environment: "T_VERBOSE", key: "verbose", help: "v", switch: true)
    let specs: [any AnySetting] = [Self.endpoint, Self.secret, Self.verbose]

    func file(_ json: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "roadsave-config-\(UUID().uuidString).json")
        try json.write(to: url, atomically: false, encoding: .utf8)
        return url.path
    }

    @Test func flagsWinOverTheEnvironmentWhichWinsOverTheFileWhichWinsOverDefaults() throws {
        let path = try file(#"{"endpoint": "tcp://file:3", "secret": "from-file-secret"}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let onlyFile = try ServiceConfiguration(specs: specs, arguments: ["--config", path], environment: [:])
        #expect(try onlyFile.value(Self.endpoint) == "tcp://file:3")
        let environment = try ServiceConfiguration(
            specs: specs, arguments: ["--config", path],
            environment: ["T_ENDPOINT": "tcp://env:2"])
        #expect(try environment.value(Self.endpoint) == "tcp://env:2")
        let flag = try ServiceConfiguration(
            specs: specs, arguments: ["--config", path, "--endpoint", "tcp://flag:1"],
            environment: ["T_ENDPOINT": "tcp://env:2"])
        #expect(try flag.value(Self.endpoint) == "tcp://flag:1")
        let defaults = try ServiceConfiguration(specs: specs, arguments: [], environment: [:])
        #expect(try defaults.value(Self.endpoint) == "tcp://*:1")
        #expect(try defaults.value(Self.secret) == nil)
        #expect(try ServiceConfiguration(specs: specs, arguments: ["--verbose"], environment: [:]).value(Self.verbose))
        #expect(try !defaults.value(Self.verbose))
    }

    @Test func secretsAreMaskedInTheDescription() throws {
        let configuration = try ServiceConfiguration(
            specs: specs, arguments: ["--secret", "a-very-long-shared-secret"],
            environment: [:])
        let text = configuration.describe()
        #expect(!text.contains("a-very-long-shared-secret"))
        #expect(text.contains("secret=a-…et (flag)"))
        #expect(text.contains("endpoint=tcp://*:1 (default)"))
    }

    @Test func mistakesAreReportedWithTheSettingAtFault() throws {
        #expect(throws: CommandLineOptions.UsageError.self) {
            try ServiceConfiguration(specs: specs, arguments: ["--nope"], environment: [:])
        }
        let unknown = try file(#"{"endpont": "x"}"#)
        defer { try? FileManager.default.removeItem(atPath: unknown) }
        do {
            _ = try ServiceConfiguration(specs: specs, arguments: ["--config", unknown], environment: [:])
            Issue.record("an unknown key in the file was accepted")
        } catch {
            #expect(error.message.contains("unknown setting \"endpont\""))
        }
        do {
            _ = try ServiceConfiguration(specs: specs, arguments: ["--config", "/nonexistent.json"], environment: [:])
            Issue.record("a missing file was accepted")
        } catch {
            #expect(error.message.contains("cannot read /nonexistent.json"))
        }
        let bad = try ServiceConfiguration(specs: specs, arguments: [], environment: ["T_VERBOSE": "perhaps"])
        #expect(throws: CommandLineOptions.UsageError.self) { try bad.value(Self.verbose) }
    }

    @Test func aRenamedSettingIsStillReadFromFilesUnderItsFormerKey() throws {
        let renamed = Setting<String>(
            flag: "--data-dir", environment: "T_DATA", key: "dataDirectory", default: "d", help: "d"
        ).formerly("dataDir")
        let specs: [any AnySetting] = [renamed]
        let former = try file(#"{"dataDir": "/old"}"#)
        let current = try file(#"{"dataDirectory": "/new"}"#)
        let both = try file(#"{"dataDir": "/old", "dataDirectory": "/new"}"#)
        defer { for path in [former, current, both] { try? FileManager.default.removeItem(atPath: path) } }
        let fromFormer = try ServiceConfiguration(specs: specs, arguments: ["--config", former], environment: [:])
        #expect(try fromFormer.value(renamed) == "/old")
        #expect(fromFormer.describe().contains("dataDirectory=/old (file)"))
        let fromCurrent = try ServiceConfiguration(specs: specs, arguments: ["--config", current], environment: [:])
        #expect(try fromCurrent.value(renamed) == "/new")
        do {
            _ = try ServiceConfiguration(specs: specs, arguments: ["--config", both], environment: [:])
            Issue.record("a setting given under both its names was accepted")
        } catch {
            #expect(error.message.contains("\"dataDir\" is the former name of \"dataDirectory\""))
        }
        // The former key is not a second setting: --help and the description show the current one only.
        #expect(!ServiceConfiguration.optionsHelp(specs).contains("dataDir]"))
    }

    @Test func endpointsAreCheckedAtStart() throws {
        #expect(try Endpoint.validate("tcp://*:5550", flag: "--x") == "tcp://*:5550")
        #expect(try Endpoint.validate("ipc:///tmp/x", flag: "--x") == "ipc:///tmp/x")
        for bad in ["5550", "tcp://*", "tcp://host:0", "tcp://host:99999", "udp://x:1", "tcp://:1"] {
            #expect(throws: CommandLineOptions.UsageError.self, "\(bad)") { try Endpoint.validate(bad, flag: "--x") }
        }
        #expect(Endpoint.connectable("tcp://*:5551") == "tcp://127.0.0.1:5551")
        // A client (or a service's subscription) connects: `*` is no host or port there.
        #expect(try Endpoint.validate("tcp://127.0.0.1:5551", flag: "--x", connecting: true) == "tcp://127.0.0.1:5551")
        for bad in ["tcp://*:5551", "tcp://127.0.0.1:*"] {
            #expect(throws: CommandLineOptions.UsageError.self, "\(bad)") {
                try Endpoint.validate(bad, flag: "--x", connecting: true)
            }
        }
    }
}
