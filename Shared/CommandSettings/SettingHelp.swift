import RoadSaveModel

/// The options part of a usage text, from the settings themselves, so `--help` shows the defaults the code uses.
public enum SettingHelp {
    /// A service's options: each with its environment variable and file key (flags, environment and a file all work).
    public static func service(_ settings: [any AnySetting]) -> String {
        settings.map { setting in
            let name = setting.isSwitch ? setting.flag : "\(setting.flag) VALUE"
            let padded = name.count < 28 ? name + String(repeating: " ", count: 28 - name.count) : name + " "
            return
                "  \(padded)\(setting.help)\(defaultNote(setting))\n  \(String(repeating: " ", count: 28))env \(setting.environment), file key [\(setting.key)]"
        }.joined(separator: "\n")
    }

    /// A command's options (flags only), as `roadsave replay --help` lists them: `  --flag NAME  help (default X)`,
    /// wrapped to `width` columns under the help's column (`column`, counted from 0).
    public static func command(_ settings: [any AnySetting], width: Int = 116, column: Int = 24) -> String {
        return settings.map { setting in
            let name = setting.isSwitch ? setting.flag : "\(setting.flag) \(setting.valueName)"
            let head = "  " + name
            var lines: [String] = []
            var line = head.count < column ? head + String(repeating: " ", count: column - head.count) : head + " "
            var lineHasWords = false
            for word in (setting.help + defaultNote(setting)).split(separator: " ") {
                if lineHasWords, line.count + 1 + word.count > width {
                    lines.append(line)
                    line = String(repeating: " ", count: column)
                    lineHasWords = false
                }
                line += (lineHasWords ? " " : "") + word
                lineHasWords = true
            }
            lines.append(line)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    private static func defaultNote(_ setting: any AnySetting) -> String {
        setting.defaultText.map { " (default \(setting.isSecret ? Secret.mask($0) : $0))" } ?? ""
    }
}
