import RecordCodecs
import RoadSaveModel
import Testing

@Suite("JSONParser: values")
struct JSONParserValueTests {
    @Test func literals() throws {
        #expect(try JSONParser.parse("true") == .bool(true))
        #expect(try JSONParser.parse("false") == .bool(false))
        #expect(try JSONParser.parse("null") == .null)
    }

    @Test(arguments: [
        ("0", 0.0), ("42", 42), ("-17", -17), ("3.25", 3.25), ("-12.75", -12.75),
        ("1e3", 1000), ("1E3", 1000), ("1e+3", 1000), ("2.5e-3", 0.0025), ("-1.5E2", -150),
        ("0.1", 0.1), ("1e308", 1e308), ("-1e308", -1e308), ("123456789012", 123_456_789_012),
        ("9007199254740993", 9_007_199_254_740_992), // 2^53 + 1 rounds to the nearest double, 2^53
        ("1772433065.123", 1_772_433_065.123),
    ])
    func numbers(text: String, expected: Double) throws {
        #expect(try JSONParser.parse(text) == .number(expected))
    }

    @Test func negativeZeroKeepsItsSign() throws {
        guard case .number(let value) = try JSONParser.parse("-0") else {
            Issue.record("not a number")
            return
        }
        #expect(value == 0)
        #expect(value.sign == .minus)
    }

    @Test func tinyNumbersUnderflowToZero() throws {
        // Documented behaviour: like strtod and Foundation, an exponent below the smallest double gives 0, not an error.
        #expect(try JSONParser.parse("1e-400") == .number(0))
    }

    @Test(arguments: [
        "01", "-01", "00", "1.", "1.e5", ".5", "-.5", "+1", "1e", "1e+", "1E-", "-", "--1",
        "NaN", "nan", "Infinity", "-Infinity", "inf", "0x1F", "0X10", "1.5.2", "1e5.5", "1_000",
    ])
    func malformedNumbersAreRejected(text: String) {
        _ = syntaxError(text)
    }

    @Test(arguments: ["1e999", "-1e999", "1e309"])
    func numbersOutOfRangeAreRejected(text: String) {
        let error = syntaxError(text)
        #expect(error?.reason.contains("out of range") == true)
        #expect(error?.column == 1)
    }

    @Test func outOfRangeNumberColumnIsWhereTheNumberStarts() {
        #expect(syntaxError(#"{"a": 1e999}"#)?.column == 7)
    }

    @Test func simpleStrings() throws {
        #expect(try JSONParser.parse(#""""#) == .string(""))
        #expect(try JSONParser.parse(#""hello world""#) == .string("hello world"))
        #expect(try JSONParser.parse("\"Zürich → 東京 😀\"") == .string("Zürich → 東京 😀"))
    }

    @Test func everyShortEscape() throws {
        #expect(try JSONParser.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
    }

    @Test func escapesMixedWithText() throws {
        #expect(try JSONParser.parse(#""a\"b é \\n\n end""#) == .string("a\"b é \\n\n end"))
    }

    @Test func unicodeEscapes() throws {
        #expect(
            try JSONParser.parse(#""\u0041\u00e9\u00E9\u20AC\u0000\u001f""#)
                == .string("Aéé€\u{0}\u{1F}"))
    }

    @Test func surrogatePairEscapes() throws {
        #expect(try JSONParser.parse(#""\uD83D\uDE00""#) == .string("😀"))
        #expect(try JSONParser.parse(#""x\ud834\udd1ey""#) == .string("x𝄞y"))
    }

    @Test(arguments: [
        #""\uD83D""#, #""\uD83Dx""#, #""\uDE00""#, #""\uD83D\u0041""#, #""\uD83D\uD83D""#,
        #""\uD83D\n""#, #""\uDFFF""#,
    ])
    func loneSurrogatesAreRejected(text: String) {
        #expect(syntaxError(text)?.reason.contains("surrogate") == true)
    }

    @Test(arguments: [#""\u12G4""#, #""\u12""#, #""\u""#, #""\uZZZZ""#])
    func malformedUnicodeEscapesAreRejected(text: String) {
        #expect(syntaxError(text)?.reason.contains("four hex digits") == true)
    }

    @Test(arguments: [#""\x""#, #""\a""#, #""\U0041""#, #""\'""#, #""\0""#])
    func unknownEscapesAreRejected(text: String) {
        let error = syntaxError(text)
        #expect(error?.reason.contains("unknown escape") == true)
        #expect(error?.column == 3) // the character after the backslash
    }

    @Test(arguments: Array(UInt8(0)..<UInt8(0x20)))
    func rawControlCharactersInStringsAreRejected(byte: UInt8) {
        let plain: [UInt8] = [0x22, 0x61, byte, 0x62, 0x22] // "a?b"
        let afterEscape: [UInt8] = [0x22, 0x5C, 0x6E, byte, 0x22] // "\n?"
        #expect(syntaxError(plain)?.reason.contains("control character") == true)
        #expect(syntaxError(plain)?.column == 3)
        #expect(syntaxError(afterEscape)?.reason.contains("control character") == true)
    }

    @Test func deleteCharacterIsAllowedRaw() throws {
        #expect(try JSONParser.parse([0x22, 0x7F, 0x22]) == .string("\u{7F}"))
    }

    @Test(arguments: [
        [0x22, 0xC3, 0x28, 0x22] as [UInt8], // a lead byte followed by ASCII
        [0x22, 0xC0, 0xAF, 0x22], // overlong "/"
        [0x22, 0xED, 0xA0, 0x80, 0x22], // an encoded surrogate
        [0x22, 0xFF, 0x22],
        [0x22, 0xE2, 0x82, 0x22], // truncated "€"
        [0x22, 0x80, 0x22], // a lone continuation byte
        [0x22, 0x5C, 0x6E, 0xFF, 0x22], // after an escape
        [0x22, 0x5C, 0x6E, 0xC3, 0x22],
    ])
    func invalidUTF8IsRejected(bytes: [UInt8]) {
        let error = syntaxError(bytes)
        #expect(error?.reason.contains("UTF-8") == true)
        #expect(error?.column == 2) // the string's first byte
    }

    @Test func invalidUTF8OutsideStringsIsRejected() {
        #expect(syntaxError([0xEF, 0xBB, 0xBF, 0x31]) != nil) // a byte order mark is not JSON white space
        #expect(syntaxError([0x5B, 0xFF, 0x5D])?.column == 2)
    }

    @Test func unterminatedStringsAreRejected() {
        #expect(syntaxError(#""abc"#)?.reason.contains("unterminated") == true)
        #expect(syntaxError(#""ab\n"#)?.reason.contains("unterminated") == true)
        #expect(syntaxError(#""ab\"#) != nil)
    }

    @Test func emptyContainers() throws {
        #expect(try JSONParser.parse("{}") == .object([]))
        #expect(try JSONParser.parse("[]") == .array([]))
        #expect(try JSONParser.parse("{ }") == .object([]))
        #expect(try JSONParser.parse("[\n]") == .array([]))
        #expect(try JSONParser.parse("[[],{}]") == .array([.array([]), .object([])]))
    }

    @Test func objectsKeepMembersInOrder() throws {
        let value = try JSONParser.parse(#"{"z":1,"a":[true,null],"m":{"k":"v"}}"#)
        #expect(
            value
                == .object([
                    ("z", .number(1)), ("a", .array([.bool(true), .null])), ("m", .object([("k", .string("v"))])),
                ]))
        #expect(keys(of: value) == ["z", "a", "m"])
        #expect(value["a"] == .array([.bool(true), .null]))
        #expect(value["missing"] == nil)
        #expect(JSONValue.array([])["a"] == nil)
    }

    @Test func objectEqualityDependsOnMemberOrder() {
        let ab = JSONValue.object([("a", .number(1)), ("b", .number(2))])
        let ba = JSONValue.object([("b", .number(2)), ("a", .number(1))])
        #expect(ab != ba)
        #expect(ab == .object([("a", .number(1)), ("b", .number(2))]))
    }

    @Test func duplicateKeysAreKeptAndTheFirstWinsOnLookup() throws {
        // Documented behaviour: the parser keeps every member; subscript (and record decoding) use the first one.
        let value = try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#)
        #expect(keys(of: value) == ["a", "b", "a"])
        #expect(value["a"] == .number(1))
    }

    @Test func duplicateRecordFieldsUseTheFirst() throws {
        let record = try decodeRecord(#"{"kind":"steps","app":"a","user":"u","t":1772433065,"steps":5,"steps":-1}"#)
        #expect(record.payload == .steps(5))
    }

    @Test func whitespaceIsAllowedAroundEverything() throws {
        let value = try JSONParser.parse(" \t\r\n{ \"a\" \n:\t[ 1 ,\r\n 2 ] , \"b\" : \"x\" } \n\t ")
        #expect(value == .object([("a", .array([.number(1), .number(2)])), ("b", .string("x"))]))
    }

    @Test(arguments: ["\u{0C}1", "1\u{0C}", "\u{A0}1", "[1,\u{0B}2]"])
    func otherWhitespaceIsRejected(text: String) {
        _ = syntaxError(text)
    }

    @Test(arguments: ["{} x", "1 2", "[]]", "nullx", "truefalse", "{}{}", "\"a\"\"b\"", "1,", "[1] //"])
    func trailingGarbageIsRejected(text: String) {
        #expect(syntaxError(text)?.reason.contains("after the JSON value") == true)
    }

    @Test func embeddedNULIsRejected() {
        #expect(syntaxError([0x31, 0x00])?.column == 2)
        #expect(syntaxError([0x5B, 0x31, 0x00, 0x5D]) != nil)
    }

    @Test(arguments: ["", " ", "\n\t"])
    func emptyInputIsRejected(text: String) {
        #expect(syntaxError(text)?.reason.contains("end of input") == true)
    }

    @Test func parsesFromAnyCollectionOfBytes() throws {
        let bytes = Array("xx[1,2]yy".utf8)
        #expect(try JSONParser.parse(bytes[2..<7]) == .array([.number(1), .number(2)]))
    }
}

@Suite("JSONParser: nesting")
struct JSONParserNestingTests {
    func arrays(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    func objects(_ depth: Int) -> String {
        String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
    }

    @Test func thirtyTwoLevelsAreAccepted() throws {
        #expect(JSONParser.maximumDepth == 32)
        _ = try JSONParser.parse(arrays(32))
        _ = try JSONParser.parse(objects(32))
        _ = try JSONParser.parse(String(repeating: #"[{"a":"#, count: 16) + "0" + String(repeating: "}]", count: 16))
    }

    @Test func thirtyThreeLevelsAreRejected() {
        let error = syntaxError(arrays(33))
        #expect(error?.reason.contains("32") == true)
        #expect(error?.column == 33) // the 33rd '['
        #expect(syntaxError(objects(33))?.reason.contains("32") == true)
        #expect(
            syntaxError(String(repeating: #"[{"a":"#, count: 16) + "[0]" + String(repeating: "}]", count: 16)) != nil)
    }

    @Test func siblingsDoNotAddDepth() throws {
        let wide = "[" + Array(repeating: arrays(31), count: 50).joined(separator: ",") + "]"
        _ = try JSONParser.parse(wide)
    }

    @Test func veryDeepInputFailsWithoutCrashing() {
        #expect(syntaxError(String(repeating: "[", count: 100_000)) != nil)
    }
}

@Suite("JSONParser: error positions")
struct JSONParserErrorTests {
    @Test(arguments: [
        ("tru", 1, "unexpected 't'"),
        ("[1,]", 4, "unexpected ']'"),
        (#"{"a":1,}"#, 8, "member name"),
        (#"{"a" 1}"#, 6, "':'"),
        (#"{"a":1 "b":2}"#, 8, "',' or '}'"),
        ("[1 2]", 4, "',' or ']'"),
        ("[1,2", 5, "end of input"),
        (#"{"a":1"#, 7, "end of input"),
        ("{a:1}", 2, "member name"),
        ("01", 2, "unexpected '1'"),
        ("1.", 3, "digits after '.'"),
        ("1e", 3, "exponent"),
        ("-", 2, "digits"),
        (".5", 1, "unexpected '.'"),
        ("+1", 1, "unexpected '+'"),
        ("NaN", 1, "unexpected 'N'"),
        (#"{"a":"\q"}"#, 8, "unknown escape"),
        (#""abc"#, 5, "unterminated"),
        ("  x", 3, "unexpected 'x'"),
        ("\n[\n1,\n?]", 7, "unexpected '?'"),
    ])
    func columnAndReason(text: String, column: Int, reasonPart: String) {
        let error = syntaxError(text)
        #expect(error?.column == column)
        #expect(error?.reason.contains(reasonPart) == true, "reason: \(error?.reason ?? "none")")
    }

    @Test func descriptionNamesTheColumn() {
        #expect(syntaxError("[1,]")?.description == "column 4: unexpected ']'")
    }

    @Test func nonPrintableBytesAreShownInHex() {
        #expect(syntaxError([0x5B, 0x01, 0x5D])?.reason.contains("0x1") == true)
    }
}
