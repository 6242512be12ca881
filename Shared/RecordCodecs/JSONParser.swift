/// A small, strict JSON parser over UTF-8 bytes (RFC 8259). Records are decoded through it rather than
/// Foundation's `JSONDecoder`, which manages only ~75,000 records a second here and reports errors without the
/// field that caused them.
public struct JSONParser {
    /// Deepest nesting accepted: records are flat, so deep input is an attack or a mistake.
    public static let maximumDepth = 32

    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        /// 1-based column (byte offset) in the text.
        public var column: Int
        public var reason: String
        public var description: String { "column \(column): \(reason)" }
    }

    /// Parses one complete JSON text; anything but white space after it is an error.
    public static func parse(_ bytes: some Collection<UInt8>) throws(SyntaxError) -> JSONValue {
        // Free for an array (it is shared, not copied); other collections are copied once.
        let buffer = Array(bytes)
        return try buffer.withUnsafeBufferPointer { (pointer) throws(SyntaxError) -> JSONValue in
            var parser = JSONParser(bytes: pointer, end: pointer.count)
            parser.skipWhitespace()
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            if parser.index != parser.end {
                throw parser.error("unexpected \(parser.describeCurrent()) after the JSON value")
            }
            return value
        }
    }

    public static func parse(_ text: String) throws(SyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private let end: Int
    private var index = 0

    private init(bytes: UnsafeBufferPointer<UInt8>, end: Int) {
        self.bytes = bytes
        self.end = end
    }

    private func error(_ reason: String) -> SyntaxError { SyntaxError(column: index + 1, reason: reason) }

    private func describeCurrent() -> String {
        guard index < end else { return "end of input" }
        let byte = bytes[index]
        return byte >= 0x20 && byte < 0x7F
            ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }

    private mutating func skipWhitespace() {
        while index < end {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(SyntaxError) -> JSONValue {
        guard index < end else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected \(describeCurrent())")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(SyntaxError) {
        let count = literal.utf8CodeUnitCount
        let matches = index + count <= end && (0..<count).allSatisfy { bytes[index + $0] == literal.utf8Start[$0] }
        guard matches else { throw error("unexpected \(describeCurrent())") }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(SyntaxError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        index += 1
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if index < end, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a member name in quotes, found \(describeCurrent())")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < end, bytes[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after member name \"\(key)\", found \(describeCurrent())")
            }
            index += 1
            skipWhitespace()
            members.append((key, try parseValue(depth: depth)))
            skipWhitespace()
            guard index < end else { throw error("unexpected end of input inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            } else {
                throw error("expected ',' or '}' in an object, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(SyntaxError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < end, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < end else { throw error("unexpected end of input inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            } else {
                throw error("expected ',' or ']' in an array, found \(describeCurrent())")
            }
        }
    }

    /// Checks the JSON number grammar (Double(_:) alone would also take hex, `inf` and `nan`), then converts.
    private mutating func parseNumber() throws(SyntaxError) -> Double {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < end, isDigit(bytes[index]) else { throw error("a number needs digits") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < end, isDigit(bytes[index]) { index += 1 }
        }
        if index < end, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < end, isDigit(bytes[index]) else { throw error("a number needs digits after '.'") }
            while index < end, isDigit(bytes[index]) { index += 1 }
        }
        if index < end, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < end, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < end, isDigit(bytes[index]) else { throw error("a number needs digits in its exponent") }
            while index < end, isDigit(bytes[index]) { index += 1 }
        }
        // Swift's Double(_:) parses in the C locale whatever the process's locale (plain strtod follows
        // setlocale), and the grammar was checked above. Numbers are short, so the string stays inline (no allocation).
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text) else { throw error("not a number") }
        guard value.isFinite else {
            index = start
            throw error("number out of range")
        }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func parseString() throws(SyntaxError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes, so the bytes are the string.
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                guard let text = String(validating: slice, as: UTF8.self) else {
                    throw SyntaxError(column: start + 1, reason: "string is not valid UTF-8")
                }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in a string") }
            index += 1
        }
        var scalars = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < end {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: scalars, as: UTF8.self) else {
                    throw SyntaxError(column: start + 1, reason: "string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < end else { throw error("unexpected end of input in an escape") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escaped)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try parseHex4()
                    if (0xD800..<0xDC00).contains(code) {
                        // A high surrogate must be followed by an escaped low surrogate.
                        guard index + 1 < end, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate in a \\u escape") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate in a \\u escape") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(code) {
                        throw error("unpaired surrogate in a \\u escape")
                    }
                    scalars.append(contentsOf: Array(String(Character(Unicode.Scalar(code)!)).utf8))
                default:
                    index -= 1
                    throw error("unknown escape \\\(describeCurrent())")
                }
            default:
                if byte < 0x20 { throw error("control character in a string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(SyntaxError) -> UInt32 {
        guard index + 4 <= end else { throw error("a \\u escape needs four hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("a \\u escape needs four hex digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
