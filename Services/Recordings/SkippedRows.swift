// The rows of a dataset's CSV files a converter could not read. One bad row does not stop a conversion of thousands,
// but it is never dropped silently either: each is counted and named by file and line, with what was wrong, so a
// person can open the file at that line.

public struct SkippedRows: Sendable, Equatable {
    public struct Entry: Sendable, Equatable, CustomStringConvertible {
        public var file: String
        public var line: Int
        public var reason: String

        public var description: String { "\(file) line \(line): \(reason)" }
    }

    public private(set) var entries: [Entry] = []

    public init() {}

    public var count: Int { entries.count }

    mutating func add(file: String, line: Int, _ reason: String) {
        entries.append(Entry(file: file, line: line, reason: reason))
    }

    mutating func append(contentsOf other: SkippedRows) { entries += other.entries }

    /// Each row as a line of the report; past `limit`, how many more.
    public func lines(limit: Int = 20) -> [String] {
        let shown = entries.prefix(limit).map(\.description)
        return shown + (count > limit ? ["and \(count - limit) more rows of the same files"] : [])
    }
}
