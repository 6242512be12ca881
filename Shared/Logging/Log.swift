import RecordCodecs
import RoadSaveModel
import TerminalProgress

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Structured log lines (logfmt) on standard error, each carrying the subsystem of the SDK's OSLog,
/// `co.za.roadsave.RoadSaveKit`. One `write(2)` per line, so lines from several threads never interleave.
public struct Log: Sendable {
    public static let subsystem = "co.za.roadsave.RoadSaveKit"

    public enum Level: String, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        private var rank: Int { Level.allCases.firstIndex(of: self)! }
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    public var category: String
    public var minimumLevel: Level
    /// Wall-clock timestamps on each line; off where output must be repeatable (tests of replay).
    public var timestamps: Bool

    public init(category: String, minimumLevel: Level = .info, timestamps: Bool = true) {
        self.category = category
        self.minimumLevel = minimumLevel
        self.timestamps = timestamps
    }

    public func debug(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.debug, message, fields)
    }
    public func info(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) { write(.info, message, fields) }
    public func warning(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.warning, message, fields)
    }
    public func error(_ message: String, _ fields: KeyValuePairs<String, String> = [:]) {
        write(.error, message, fields)
    }

    public func write(_ level: Level, _ message: String, _ fields: KeyValuePairs<String, String>) {
        write(level, message, pairs: fields.map { ($0.key, $0.value) })
    }

    /// A line whose fields are made at run time (a value that decides what to log returns them so).
    public func write(_ level: Level, _ message: String, pairs fields: [(String, String)]) {
        guard level >= minimumLevel else { return }
        var line = ""
        if timestamps {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            line += "ts=" + ISO8601.string(fromSeconds: Double(now.tv_sec) + Double(now.tv_nsec) / 1e9) + " "
        }
        line += "level=\(level.rawValue) subsystem=\(Log.subsystem) category=\(category) msg=\(Log.quote(message))"
        for (key, value) in fields { line += " \(key)=\(Log.quote(value))" }
        line += "\n"
        // A progress line on the terminal is cleared for the log line and drawn again below it.
        if StatusLine.standardError.isShowing {
            StatusLine.standardError.writeAbove(line)
        } else {
            writeAll(2, line)
        }
    }

    static func quote(_ value: String) -> String {
        let plain =
            !value.isEmpty
            && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0 != "\"" && $0 != "=" && $0.value < 0x7F }
        return plain ? value : JSONObjectWriter.quoted(value)
    }
}
