import RoadSaveModel

/// One NDJSON line → `RecordFields`, in one pass over the bytes: no `JSONValue`, no allocation but the strings a
/// record keeps (and short identifiers and enumerated values are not even that). It handles the shape records have
/// (an object of scalars, `samples` an array of four-number arrays) and says `nil` to anything else — escapes in a
/// string, a nested member it does not know, a syntax error, a number `Double` cannot hold — so that the caller
/// takes `JSONParser`'s path, which gives the same record or the detailed error. Whatever it accepts, `JSONParser`
/// accepts with the same values (tests compare both over the fixtures and mutated records).
public enum JSONRecordScanner {
    public static func scan(_ buffer: UnsafeBufferPointer<UInt8>, identifiers: IdentifierCache?) -> RecordFields? {
        guard let base = buffer.baseAddress else { return nil }
        var scanner = Scanner(bytes: base, end: buffer.count)
        return scanner.record(identifiers)
    }

    /// Powers of ten that a `Double` holds exactly: a decimal of at most 2^53 units times or divided by one of them
    /// is correctly rounded (Clinger's fast path), so it equals what `Double(String)` gives.
    @usableFromInline
    static let exactPowersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    struct Scanner {
        let bytes: UnsafePointer<UInt8>
        let end: Int
        var index = 0

        @inline(__always)
        mutating func skipWhitespace() {
            while index < end {
                let byte = bytes[index]
                guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
                index += 1
            }
        }

        @inline(__always)
        func peek() -> UInt8 { index < end ? bytes[index] : 0 }

        mutating func record(_ identifiers: IdentifierCache?) -> RecordFields? {
            skipWhitespace()
            guard peek() == UInt8(ascii: "{") else { return nil }
            index += 1
            skipWhitespace()
            var fields = RecordFields()
            if peek() == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    guard peek() == UInt8(ascii: "\"") else { return nil }
                    index += 1
                    let keyStart = index
                    while index < end, bytes[index] != UInt8(ascii: "\"") {
                        let byte = bytes[index]
                        // Escapes, controls and non-ASCII in a name: the general path.
                        guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
                        index += 1
                    }
                    guard index < end else { return nil }
                    let name = RecordFields.Name.match(bytes + keyStart, index - keyStart)
                    index += 1
                    skipWhitespace()
                    guard peek() == UInt8(ascii: ":") else { return nil }
                    index += 1
                    skipWhitespace()
                    guard index < end else { return nil }
                    let first = bytes[index]
                    if first == UInt8(ascii: "[") {
                        // Only `samples` may hold an array here; anything else nested goes the general way.
                        guard name == .samples, let samples = samples() else { return nil }
                        fields.setSamples(samples)
                    } else {
                        guard let member = scalar(first, name: name, identifiers) else { return nil }
                        if let name { fields.set(name, member) }
                    }
                    skipWhitespace()
                    guard index < end else { return nil }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        skipWhitespace()
                    } else if bytes[index] == UInt8(ascii: "}") {
                        index += 1
                        break
                    } else {
                        return nil
                    }
                }
            }
            skipWhitespace()
            return index == end ? fields : nil
        }

        @inline(__always)
        mutating func scalar(_ first: UInt8, name: RecordFields.Name?, _ identifiers: IdentifierCache?)
            -> RecordFields.Member?
        {
            switch first {
            case UInt8(ascii: "\""):
                index += 1
                let start = index
                var ascii = true
                while index < end {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") { break }
                    guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return nil }
                    if byte >= 0x80 { ascii = false }
                    index += 1
                }
                guard index < end else { return nil }
                let count = index - start
                index += 1
                guard let name else {
                    // An unknown member: only its validity matters.
                    return ascii || IdentifierCache.build(bytes + start, count, ascii: false) != nil ? .null : nil
                }
                return RecordFields.string(for: name, bytes + start, count, ascii: ascii, identifiers: identifiers)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return number().map(RecordFields.Member.number)
            case UInt8(ascii: "t"):
                return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"):
                return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"):
                return literal("null") ? .null : nil
            default:
                return nil
            }
        }

        @inline(__always)
        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= end else { return false }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
            index += count
            return true
        }

        @inline(__always)
        func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

        /// A JSON number (RFC 8259 grammar); nil when the grammar is broken or `Double` cannot hold it.
        mutating func number() -> Double? {
            let start = index
            let negative = bytes[index] == UInt8(ascii: "-")
            if negative { index += 1 }
            guard index < end, isDigit(bytes[index]) else { return nil }
            var units: UInt64 = 0
            var digits = 0
            var exponent = 0
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < end, isDigit(bytes[index]) {
                    units = units &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0"))
                    digits += 1
                    index += 1
                }
            }
            if index < end, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < end, isDigit(bytes[index]) else { return nil }
                while index < end, isDigit(bytes[index]) {
                    units = units &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0"))
                    if units != 0 { digits += 1 }
                    exponent -= 1
                    index += 1
                }
            }
            if index < end, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                var exponentNegative = false
                if index < end, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    exponentNegative = bytes[index] == UInt8(ascii: "-")
                    index += 1
                }
                guard index < end, isDigit(bytes[index]) else { return nil }
                var written = 0
                while index < end, isDigit(bytes[index]) {
                    if written < 100_000 { written = written * 10 + Int(bytes[index] &- UInt8(ascii: "0")) }
                    index += 1
                }
                exponent += exponentNegative ? -written : written
            }
            // 19 digits always fit in UInt64; 2^53 and 10^22 bound the exact fast path.
            if digits <= 19, units <= 1 << 53, exponent >= -22, exponent <= 22 {
                let magnitude =
                    exponent < 0
                    ? Double(units) / exactPowersOfTen[-exponent]
                    : Double(units) * exactPowersOfTen[exponent]
                return negative ? -magnitude : magnitude
            }
            // The general conversion, as `JSONParser` does it (same text, same function, same value).
            let text = String(decoding: UnsafeBufferPointer(start: bytes + start, count: index - start), as: UTF8.self)
            guard let value = Double(text), value.isFinite else { return nil }
            return value
        }

        /// `[[dt, x, y, z], …]` of numbers; nil for anything else (the general path words the error).
        mutating func samples() -> RecordFields.Samples? {
            index += 1
            skipWhitespace()
            var rows: [ImpactSample] = []
            if peek() == UInt8(ascii: "]") {
                index += 1
                return .rows(rows)
            }
            rows.reserveCapacity(64)
            while true {
                guard peek() == UInt8(ascii: "[") else { return nil }
                index += 1
                var values = (0.0, 0.0, 0.0, 0.0)
                for position in 0..<4 {
                    skipWhitespace()
                    guard index < end else { return nil }
                    let byte = bytes[index]
                    guard byte == UInt8(ascii: "-") || isDigit(byte), let value = number() else { return nil }
                    switch position {
                    case 0: values.0 = value
                    case 1: values.1 = value
                    case 2: values.2 = value
                    default: values.3 = value
                    }
                    skipWhitespace()
                    guard peek() == (position == 3 ? UInt8(ascii: "]") : UInt8(ascii: ",")) else { return nil }
                    index += 1
                }
                rows.append(ImpactSample(dt: values.0, x: values.1, y: values.2, z: values.3))
                guard rows.count <= RecordDecoding.maximumSamples else { return nil }
                skipWhitespace()
                guard index < end else { return nil }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    skipWhitespace()
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .rows(rows)
                } else {
                    return nil
                }
            }
        }
    }
}
