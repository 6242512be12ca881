import CommandSettings
import DetectionEngine
import Foundation

/// The platform settings `roadsave detect`, `replay` and `report` share, so each has one default, one range and one
/// URL rule wherever it is given: `--platform` is an http:// or https:// URL with a host everywhere (anything else
/// could only fail later, at the first request).
public enum PlatformSettings {
    public static let url = Setting<URL?>(
        flag: "--platform", environment: "ROADSAVE_PLATFORM_URL", key: "platform", valueName: "URL",
        help:
            "the RoadSave platform's base URL (http:// or https://) for settings and crash evaluation (default: the embedded platform: built-in settings and evaluator)"
    ) {
        text, flag throws(CommandLineOptions.UsageError) in
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
            url.host != nil
        else {
            throw .init("\(flag): \"\(text)\" is not an http:// or https:// URL")
        }
        return url
    }

    public static let settingsFile = Setting<String?>.text(
        flag: "--settings", environment: "ROADSAVE_SETTINGS_FILE", key: "settings", valueName: "FILE",
        help: "JSON thresholds that replace the platform's settings (any subset of the fields)")

    /// The defaults are `HTTPPlatform.Options`' own.
    public static let timeout = Setting<Double>(
        flag: "--platform-timeout", environment: "ROADSAVE_PLATFORM_TIMEOUT", key: "platformTimeout",
        default: HTTPPlatform.Options().requestTimeout, range: 0.1...300, valueName: "S",
        help: "seconds per platform request")

    public static let attempts = Setting<Int>(
        flag: "--platform-attempts", environment: "ROADSAVE_PLATFORM_ATTEMPTS", key: "platformAttempts",
        default: HTTPPlatform.Options().attempts, range: 1...20, valueName: "N",
        help: "attempts per platform call, with exponential backoff")

    public static let all: [any AnySetting] = [url, timeout, attempts, settingsFile]

    /// The request options of `--platform-timeout` and `--platform-attempts`.
    public static func options(_ values: SettingValues) throws(CommandLineOptions.UsageError) -> HTTPPlatform.Options {
        HTTPPlatform.Options(requestTimeout: try values.value(timeout), attempts: try values.value(attempts))
    }

    /// The platform these settings ask for (a settings file is read now, so a bad one is reported at once).
    public static func platform(_ values: SettingValues) throws -> any Platform {
        try PlatformSetup.platform(
            url: values.value(url), options: options(values), settingsFile: values.value(settingsFile))
    }
}
