import CommandSettings
import DetectionEngine
import Foundation
import RoadSaveModel

/// The platform a command or service is configured with: the embedded one unless a URL is given, and thresholds
/// from a settings file replacing the platform's. Shared by `roadsave replay` and the detection service, so both
/// read the same files the same way and report a bad one the same way.
public enum PlatformSetup {
    public static func platform(
        url: URL?, options: HTTPPlatform.Options = .init(),
        settingsFile: String?, flag: String = "--settings"
    ) throws -> any Platform {
        var platform: any Platform = EmbeddedPlatform()
        if let url { platform = try HTTPPlatform(baseURL: url, options: options) }
        if let settingsFile {
            platform = SettingsOverridePlatform(
                base: platform, settings: try settings(fromFile: settingsFile, flag: flag))
        }
        return platform
    }

    /// Thresholds from a JSON file (any subset of `DetectionSettings`' fields); the error names the file and field.
    public static func settings(fromFile path: String, flag: String = "--settings") throws -> DetectionSettings {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandLineOptions.UsageError("\(flag): cannot read \(path)")
        }
        do {
            return try JSONDecoder().decode(DetectionSettings.self, from: data)
        } catch let error as RoadSaveError {
            throw CommandLineOptions.UsageError("\(flag) \(path): \(error)")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw CommandLineOptions.UsageError("\(flag) \(path): \(field): \(context.debugDescription)")
        } catch {
            throw CommandLineOptions.UsageError("\(flag) \(path): not a JSON object of thresholds (\(error))")
        }
    }
}
