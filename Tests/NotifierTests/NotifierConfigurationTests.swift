import CommandSettings
import ServiceKit
import Testing

@testable import NotifierService

@Suite struct NotifierConfigurationTests {
    func load(_ arguments: [String]) throws(CommandLineOptions.UsageError) -> NotifierConfiguration {
        try NotifierConfiguration.load(
            ServiceConfiguration(
                specs: NotifierConfiguration.specs, arguments: arguments,
                environment: [:]))
    }

    func problem(_ arguments: [String]) -> String? {
        do {
            _ = try load(arguments)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func defaults() throws {
        // The default PUB and catch-up endpoints listen on every interface: without keys only with --insecure.
        #expect(problem([])?.hasPrefix("--publish-endpoint tcp://*:5554 is reachable from other machines") == true)
        let configuration = try load(["--insecure"])
        #expect(configuration.curve == nil)
        #expect(configuration.dataDirectory == "roadsave-data/notify")
        #expect(configuration.eventsEndpoints == ["tcp://127.0.0.1:5553"])
        #expect(configuration.catchUpEndpoint == "tcp://*:5555")
        #expect(configuration.retentionAge == 7 * 86_400)
    }

    @Test func settings() throws {
        let remote = [
            "--data-dir", "/var/lib/roadsave/notify",
            "--events-endpoint", "tcp://10.0.0.1:5553, tcp://10.0.0.2:5553",
            "--catch-up-endpoint", "none", "--retention-age", "12h",
            "--publish-endpoint", "tcp://127.0.0.1:5554",
        ]
        // Detection on other machines: a plaintext link only with --insecure (--curve-server-key otherwise).
        #expect(problem(remote)?.hasPrefix("--events-endpoint tcp://10.0.0.1:5553 is on another machine") == true)
        let configuration = try load(remote + ["--insecure"])
        #expect(configuration.eventsCurve == nil)
        #expect(configuration.dataDirectory == "/var/lib/roadsave/notify")
        #expect(configuration.eventsEndpoints == ["tcp://10.0.0.1:5553", "tcp://10.0.0.2:5553"])
        #expect(configuration.catchUpEndpoint == nil)
        #expect(configuration.retentionAge == 12 * 3600)
        #expect(try load(["--retention-age", "90", "--insecure"]).retentionAge == 90)
        #expect(try load(["--retention-age", "30m", "--insecure"]).retentionAge == 1800)
    }

    @Test func badSettingsNameTheFlag() {
        #expect(problem(["--retention-age", "a week"])?.hasPrefix("--retention-age must be a duration") == true)
        #expect(problem(["--retention-age", "-1d"])?.hasPrefix("--retention-age") == true)
        #expect(problem(["--events-endpoint", "tcp://*:5553"])?.hasPrefix("--events-endpoint") == true)
        #expect(problem(["--events-endpoint", ","]) == "--events-endpoint needs at least one endpoint")
        #expect(problem(["--catch-up-endpoint", "5555"])?.hasPrefix("--catch-up-endpoint") == true)
        #expect(problem(["--data-dir", ""]) == "--data-dir must not be empty")
        #expect(
            problem(["--webhooks", "http://h/a,http://h/a", "--webhook-secret", "0123456789abcdef"])
                == "--webhooks: \"http://h/a\" is given twice")
    }
}
