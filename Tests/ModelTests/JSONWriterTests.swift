import Foundation
import RecordCodecs
import Testing

@Suite("JSONObjectWriter")
struct JSONObjectWriterTests {
    @Test func emptyObject() {
        #expect(JSONObjectWriter().finish() == "{}")
    }

    @Test func keepsKeysInTheOrderAdded() {
        var writer = JSONObjectWriter()
        writer.add("z", 1)
        writer.add("a", "two")
        writer.add("m", true)
        writer.add("b", 2.5, decimals: 1)
        writer.add("r", raw: #"[1,{"x":null}]"#)
        writer.add("f", false)
        #expect(writer.finish() == #"{"z":1,"a":"two","m":true,"b":2.5,"r":[1,{"x":null}],"f":false}"#)
    }

    @Test func escapesQuotesBackslashesAndControlCharacters() {
        #expect(JSONObjectWriter.quoted("a\"b\\c") == #""a\"b\\c""#)
        #expect(JSONObjectWriter.quoted("1\n2\r3\t4") == #""1\n2\r3\t4""#)
        #expect(JSONObjectWriter.quoted("\u{0}\u{1}\u{8}\u{C}\u{1F}") == #""\u0000\u0001\u0008\u000c\u001f""#)
    }

    @Test func leavesOtherCharactersAsThemselves() {
        // '/' and DEL need no escape; non-ASCII text is written as UTF-8.
        #expect(JSONObjectWriter.quoted("a/b\u{7F} Zürich 東京 😀 e\u{301}") == "\"a/b\u{7F} Zürich 東京 😀 e\u{301}\"")
    }

    @Test func escapesKeysToo() {
        var writer = JSONObjectWriter()
        writer.add("we\"ird\nkey", "v")
        #expect(writer.finish() == #"{"we\"ird\nkey":"v"}"#)
    }

    @Test(arguments: [
        (3.14159, 2, "3.14"), (2.5, 0, "3"), (-2.5, 0, "-3"), (1.0, 3, "1"), (1200.5, 3, "1200.5"),
        (0.1 + 0.2, 2, "0.3"), (123_456.789, 1, "123456.8"), (-33.92486851, 7, "-33.9248685"),
        (10.283_77, 2, "10.28"), (-0.0001, 2, "0"), (-0.0, 3, "0"), (0.0, 0, "0"), (99.999, 2, "100"),
        (42, 0, "42"), (-7, 1, "-7"), (999_999_999_999_999, 0, "999999999999999"),
    ])
    func roundsNumbersToTheirDecimals(value: Double, decimals: Int, expected: String) {
        #expect(JSONObjectWriter.number(value, decimals: decimals) == expected)
    }

    @Test func integralValuesHaveNoFraction() {
        var writer = JSONObjectWriter()
        writer.add("distance", 1500.0, decimals: 1)
        writer.add("count", 7)
        writer.add("negative", -12)
        writer.add("big", Int.max)
        #expect(writer.finish() == #"{"distance":1500,"count":7,"negative":-12,"big":9223372036854775807}"#)
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, .signalingNaN])
    func nonFiniteNumbersAreNull(value: Double) {
        #expect(JSONObjectWriter.number(value, decimals: 2) == "null")
        var writer = JSONObjectWriter()
        writer.add("x", value, decimals: 1)
        #expect(writer.finish() == #"{"x":null}"#)
    }

    @Test(arguments: [1e15, -1e15, 1e20, 1.5e300, Double.leastNonzeroMagnitude, 1e-7, 123_456_789_012_345.67])
    func largeAndTinyNumbersStayValidJSON(value: Double) throws {
        let text = JSONObjectWriter.number(value, decimals: 0)
        guard case .number(let parsed) = try JSONParser.parse(text) else {
            Issue.record("\(text)")
            return
        }
        #expect(parsed == value.rounded(), "\(value) written as \(text)")
    }

    @Test(arguments: [1e302, -1e302, 1.7e308])
    func finiteNumbersTooLargeToScaleStayValidJSON(value: Double) {
        // number(_:decimals:) multiplies by 10^decimals before rounding: for |value| above ~1.8e301 (7 decimals)
        // the product is infinite, which must not come out as `inf` (not JSON).
        let text = JSONObjectWriter.number(value, decimals: 7)
        #expect((try? JSONParser.parse(text)) == .number(value), "\(value) written as \(text)")
    }

    @Test func outputParsesBackWithJSONParser() throws {
        let nasty = "q\"b\\s/\n\r\t\u{0}\u{1B}\u{7F}é😀\u{2028}"
        var writer = JSONObjectWriter()
        writer.add(nasty, nasty)
        writer.add("n", -33.9248685, decimals: 7)
        writer.add("i", 1234)
        writer.add("t", true)
        writer.add("null", Double.nan, decimals: 1)
        let value = try JSONParser.parse(writer.finish())
        #expect(
            value
                == .object([
                    (nasty, .string(nasty)), ("n", .number(-33.9248685)), ("i", .number(1234)), ("t", .bool(true)),
                    ("null", .null),
                ]))
    }

    @Test func outputParsesBackWithFoundation() throws {
        let nasty = "q\"b\\s/\n\r\t\u{0}\u{1B}\u{7F}é😀"
        var writer = JSONObjectWriter()
        writer.add("s", nasty)
        writer.add("d", 10.28377, decimals: 2)
        writer.add("i", 1234)
        writer.add("b", false)
        writer.add("x", Double.infinity, decimals: 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(writer.finish().utf8)) as? [String: Any])
        #expect(object["s"] as? String == nasty)
        #expect((object["d"] as? NSNumber)?.doubleValue == 10.28)
        #expect((object["i"] as? NSNumber)?.intValue == 1234)
        #expect((object["b"] as? NSNumber)?.boolValue == false)
        #expect(object["x"] is NSNull)
        #expect(object.count == 5)
    }

    @Test func everyControlCharacterRoundTrips() throws {
        let all = String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) }))
        #expect(try JSONParser.parse(JSONObjectWriter.quoted(all)) == .string(all))
        #expect(JSONObjectWriter.quoted(all).unicodeScalars.allSatisfy { $0.value >= 0x20 })
    }
}
