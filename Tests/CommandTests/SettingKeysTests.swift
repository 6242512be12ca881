import CommandSettings
import DetectionService
import IngestService
import NotifierService
import Testing

/// The config-file keys of the three services, read together: an operator who writes one service's file from
/// another's expects the same words. Each key is its flag in camelCase (`--webhook-max-backoff`:
/// `webhookMaxBackoff`), but for the data directory, `dataDirectory` in every service; a flag the services share
/// has one key.
struct SettingKeysTests {
    static let services: [(name: String, specs: [any AnySetting])] = [
        ("ingest", IngestConfiguration.specs), ("detect", DetectionConfiguration.specs),
        ("notify", NotifierConfiguration.specs),
    ]

    /// "--webhook-max-backoff" as "webhookMaxBackoff".
    static func camelCase(_ flag: String) -> String {
        let words = flag.drop(while: { $0 == "-" }).split(separator: "-")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }

    @Test func everyKeyIsItsFlagInCamelCase() {
        for (name, specs) in Self.services {
            for setting in specs {
                let expected = setting.flag == "--data-dir" ? "dataDirectory" : Self.camelCase(setting.flag)
                #expect(setting.key == expected, "\(name) \(setting.flag)")
            }
        }
    }

    @Test func aFlagTheServicesShareHasOneKey() {
        var keys: [String: Set<String>] = [:]
        for (_, specs) in Self.services {
            for setting in specs { keys[setting.flag, default: []].insert(setting.key) }
        }
        for (flag, used) in keys { #expect(used.count == 1, "\(flag): \(used.sorted())") }
        #expect(keys["--data-dir"] == ["dataDirectory"] && keys["--log-level"] == ["logLevel"])
    }
}
