// A CSV file with a header row, read as RFC 4180 has it: a quoted field may hold commas, doubled quotes and line
// breaks (manual_log.csv's stops hold commas and its comments run over several lines), so each row is named by the
// line it starts on, the line a person finds it at in an editor.

import Foundation

public struct CSVTable: Sendable {
    public struct Row: Sendable, Equatable {
        /// The file's line the row starts on (the header is line 1).
        public var line: Int
        public var fields: [String]
    }

    /// The header's names, trimmed of spaces: manual_log.csv writes " vehicle_arr_stop" and "st_exit_time ".
    public var columns: [String]
    public var rows: [Row]

    /// Reads `text` (of `file`, named in errors). An empty file, a column named twice, a column of `required` missing
    /// and a quoted field left open are errors; rows of the wrong length are kept for the caller to judge.
    public init(text: String, file: String, required: [String] = []) throws {
        var records = try Self.records(Array(text.utf8), file: file)[...]
        guard let header = records.popFirst() else { throw RecordingError.malformed(file: file, reason: "empty") }
        let columns = header.fields.map { $0.trimmingCharacters(in: .whitespaces) }
        if let repeated = columns.first(where: { name in columns.filter { $0 == name }.count > 1 }) {
            throw RecordingError.malformed(file: file, reason: "the header names column \(repeated) twice")
        }
        for column in required where !columns.contains(column) {
            throw RecordingError.malformed(file: file, reason: "no column \(column) in the header")
        }
        self.columns = columns
        rows = Array(records)
    }

    /// Where `column` is in each row (nil when the header lacks it).
    public func index(of column: String) -> Int? { columns.firstIndex(of: column) }

    /// One value of a CSV file being written: quoted when it holds a comma, a quote or a line break.
    public static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Every record of the file, blank lines left out.
    static func records(_ bytes: [UInt8], file: String) throws -> [Row] {
        let quote = UInt8(ascii: "\"")
        let comma = UInt8(ascii: ",")
        let newline = UInt8(ascii: "\n")
        let carriageReturn = UInt8(ascii: "\r")
        var rows: [Row] = []
        var fields: [String] = []
        var field: [UInt8] = []
        var line = 1
        var rowLine = 1
        var quoted = false
        var quoteOpenedOn = 0
        var index = 0
        func endField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
        }
        func endRow() {
            endField()
            // A blank line is one empty field: no row.
            if !(fields.count == 1 && fields[0].isEmpty) { rows.append(Row(line: rowLine, fields: fields)) }
            fields.removeAll(keepingCapacity: true)
        }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if quoted {
                if byte == quote {
                    if index < bytes.count, bytes[index] == quote {
                        field.append(quote)
                        index += 1
                    } else {
                        quoted = false
                    }
                } else {
                    if byte == newline { line += 1 }
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case quote where field.isEmpty:
                quoted = true
                quoteOpenedOn = line
            case comma:
                endField()
            case newline:
                endRow()
                line += 1
                rowLine = line
            case carriageReturn where index < bytes.count && bytes[index] == newline:
                break
            default:
                field.append(byte)
            }
        }
        if quoted {
            throw RecordingError.malformed(
                file: file, reason: "line \(quoteOpenedOn): a quoted field is not closed before the end of the file")
        }
        if !field.isEmpty || !fields.isEmpty { endRow() }
        return rows
    }
}
