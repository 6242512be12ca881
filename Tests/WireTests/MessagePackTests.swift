import RecordCodecs
import RoadSaveModel
import Testing

@testable import Wire

@Suite("MessagePack")
struct MessagePackTests {
    /// Decodes `bytes`, expecting an error with `code` (and `offset`, when given).
    @discardableResult
    func decodeError(
        _ bytes: [UInt8], _ code: WireError.Code, offset: Int? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> WireError? {
        do {
            let value = try MessagePack.decode(bytes)
            Issue.record("expected \(code), decoded \(value)", sourceLocation: sourceLocation)
            return nil
        } catch {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            if let offset { #expect(error.offset == offset, "\(error)", sourceLocation: sourceLocation) }
            return error
        }
    }

    // MARK: Bytes written by hand from the MessagePack specification

    @Test func decodesHandWrittenScalars() throws {
        // positive fixint 0x00-0x7f
        #expect(try MessagePack.decode([0x00]) == .number(0))
        #expect(try MessagePack.decode([0x7F]) == .number(127))
        // negative fixint 0xe0-0xff: 0xff = -1, 0xe0 = -32
        #expect(try MessagePack.decode([0xFF]) == .number(-1))
        #expect(try MessagePack.decode([0xE0]) == .number(-32))
        // uint8 0xcc, uint16 0xcd, uint32 0xce, uint64 0xcf (big-endian)
        #expect(try MessagePack.decode([0xCC, 0xC8]) == .number(200))
        #expect(try MessagePack.decode([0xCD, 0xFF, 0xFF]) == .number(65_535))
        #expect(try MessagePack.decode([0xCE, 0x00, 0x01, 0x00, 0x00]) == .number(65_536))
        #expect(
            try MessagePack.decode([0xCF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]) == .number(4_294_967_296))
        // uint64 max: beyond 2^53, so the nearest Double (as JSON would give)
        #expect(
            try MessagePack.decode([0xCF] + [UInt8](repeating: 0xFF, count: 8)) == .number(18_446_744_073_709_551_616))
        // int8 0xd0: 0xdf = -33; int16 0xd1: 0xff7f = -129; int32 0xd2: 0xfffe7960 = -100000
        #expect(try MessagePack.decode([0xD0, 0xDF]) == .number(-33))
        #expect(try MessagePack.decode([0xD1, 0xFF, 0x7F]) == .number(-129))
        #expect(try MessagePack.decode([0xD2, 0xFF, 0xFE, 0x79, 0x60]) == .number(-100_000))
        // int64 0xd3: 0xffffffff4d2fa200 = -3000000000
        #expect(try MessagePack.decode(Fixtures.bytes("d3 ff ff ff ff 4d 2f a2 00")) == .number(-3_000_000_000))
        // float64 0xcb: 1.5 = 0x3ff8000000000000; float32 0xca: 0.5 = 0x3f000000
        #expect(try MessagePack.decode(Fixtures.bytes("cb 3f f8 00 00 00 00 00 00")) == .number(1.5))
        #expect(try MessagePack.decode(Fixtures.bytes("ca 3f 00 00 00")) == .number(0.5))
        // nil 0xc0, false 0xc2, true 0xc3
        #expect(try MessagePack.decode([0xC0]) == .null)
        #expect(try MessagePack.decode([0xC2]) == .bool(false))
        #expect(try MessagePack.decode([0xC3]) == .bool(true))
    }

    @Test func decodesHandWrittenStringsAndContainers() throws {
        // fixstr 0xa0-0xbf: length in the low 5 bits; "é" is the two UTF-8 bytes c3 a9
        #expect(try MessagePack.decode([0xA0]) == .string(""))
        #expect(try MessagePack.decode([0xA2, 0xC3, 0xA9]) == .string("é"))
        // str8 0xd9 with a 1-byte length: 40 × "x"
        #expect(
            try MessagePack.decode([0xD9, 0x28] + [UInt8](repeating: 0x78, count: 40))
                == .string(String(repeating: "x", count: 40)))
        // str16 0xda, str32 0xdb
        #expect(try MessagePack.decode([0xDA, 0x00, 0x03, 0x61, 0x62, 0x63]) == .string("abc"))
        #expect(try MessagePack.decode([0xDB, 0x00, 0x00, 0x00, 0x01, 0x7A]) == .string("z"))
        // fixmap 0x81 {fixstr "a": positive fixint 1}
        #expect(try MessagePack.decode([0x81, 0xA1, 0x61, 0x01]) == .object([("a", .number(1))]))
        // fixarray 0x92 [negative fixint -1, int8 -33]
        #expect(try MessagePack.decode([0x92, 0xFF, 0xD0, 0xDF]) == .array([.number(-1), .number(-33)]))
        // array16 0xdc with 3 elements [nil, false, true]
        #expect(
            try MessagePack.decode([0xDC, 0x00, 0x03, 0xC0, 0xC2, 0xC3]) == .array([.null, .bool(false), .bool(true)]))
        // array32 0xdd with 1 element
        #expect(try MessagePack.decode([0xDD, 0x00, 0x00, 0x00, 0x01, 0x05]) == .array([.number(5)]))
        // map16 0xde {"k": []}, map32 0xdf {} (empty)
        #expect(try MessagePack.decode([0xDE, 0x00, 0x01, 0xA1, 0x6B, 0x90]) == .object([("k", .array([]))]))
        #expect(try MessagePack.decode([0xDF, 0x00, 0x00, 0x00, 0x00]) == .object([]))
        // A record-like map: {"kind": "steps", "steps": 300 (uint16 0x012c), "t": 1.5}
        let bytes = Fixtures.bytes("83 a4 6b696e64 a5 7374657073 a5 7374657073 cd 01 2c a1 74 cb 3ff8000000000000")
        #expect(
            try MessagePack.decode(bytes)
                == .object([("kind", .string("steps")), ("steps", .number(300)), ("t", .number(1.5))]))
    }

    @Test func decodesFromAnyCollection() throws {
        let bytes: [UInt8] = [0x00, 0x81, 0xA1, 0x61, 0x01, 0x00]
        #expect(try MessagePack.decode(bytes[1..<5]) == .object([("a", .number(1))]))
        #expect(try MessagePack.decode(AnyCollection(bytes.dropFirst().dropLast())) == .object([("a", .number(1))]))
    }

    // MARK: Encoding: smallest forms, checked against the specification

    @Test func encodesSmallestForms() {
        #expect(MessagePack.encode(.number(1)) == [0x01])
        #expect(MessagePack.encode(.number(127)) == [0x7F])
        #expect(MessagePack.encode(.number(128)) == [0xCC, 0x80])
        #expect(MessagePack.encode(.number(-1)) == [0xFF])
        #expect(MessagePack.encode(.number(-33)) == [0xD0, 0xDF])
        #expect(MessagePack.encode(.number(65_536)) == [0xCE, 0x00, 0x01, 0x00, 0x00])
        #expect(MessagePack.encode(.number(1.5)) == Fixtures.bytes("cb 3f f8 00 00 00 00 00 00"))
        #expect(MessagePack.encode(.number(-0.25)) == Fixtures.bytes("cb bf d0 00 00 00 00 00 00"))
        // 1e19 is integral but beyond Int64: float64 0x43e158e460913d00
        #expect(MessagePack.encode(.number(1e19)) == Fixtures.bytes("cb 43 e1 58 e4 60 91 3d 00"))
        // Non-finite numbers have no JSON form: nil
        #expect(MessagePack.encode(.number(.nan)) == [0xC0])
        #expect(MessagePack.encode(.number(-.infinity)) == [0xC0])
        #expect(MessagePack.encode(.string("a")) == [0xA1, 0x61])
        #expect(
            MessagePack.encode(.string(String(repeating: "x", count: 40))) == [0xD9, 0x28]
                + [UInt8](repeating: 0x78, count: 40))
        #expect(
            MessagePack.encode(.object([("a", .null), ("b", .bool(true))])) == [
                0x82, 0xA1, 0x61, 0xC0, 0xA1, 0x62, 0xC3,
            ])
        #expect(
            MessagePack.encode(.array(Array(repeating: .bool(false), count: 16))) == [0xDC, 0x00, 0x10]
                + [UInt8](repeating: 0xC2, count: 16))
    }

    // MARK: Round trips

    static let shapes: [JSONValue] = [
        .null, .bool(true), .bool(false),
        .number(0), .number(1), .number(-1), .number(127), .number(128), .number(255), .number(256), .number(-32),
        .number(-33), .number(-128), .number(-129), .number(65_535), .number(65_536), .number(4_294_967_296),
        .number(9_007_199_254_740_994), .number(-9_223_372_036_854_775_808), .number(9_223_372_036_854_774_784),
        .number(1.5), .number(-0.1), .number(1e-300), .number(1e300), .number(.leastNonzeroMagnitude),
        .number(.greatestFiniteMagnitude), .number(1_718_708_242.123_456_7), .number(9.5e18),
        .string(""), .string("a"), .string("ü ✓ 😀"), .string(String(repeating: "y", count: 31)),
        .string(String(repeating: "z", count: 32)), .string(String(repeating: "é", count: 200)),
        .string(String(repeating: "w", count: 70_000)), .string("kind"), .string("location"),
        .array([]), .array([.null, .number(1), .string("two"), .array([.bool(true)])]),
        .array(Array(repeating: .number(7), count: 70_000)),
        .object([]), .object([("b", .number(1)), ("a", .number(2))]),
        .object([("nested", .object([("deeper", .array([.object([("x", .null)])]))]))]),
        .object((0..<20).map { ("key\($0)", .number(Double($0))) }),
        Fixtures.locationValue,
    ]

    @Test(arguments: shapes)
    func roundTrips(_ value: JSONValue) throws {
        #expect(try MessagePack.decode(MessagePack.encode(value)) == value)
    }

    @Test func keepsMemberOrderAndDuplicateKeys() throws {
        let value = JSONValue.object([("z", .number(1)), ("a", .number(2)), ("z", .number(3))])
        guard case .object(let members) = try MessagePack.decode(MessagePack.encode(value)) else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.0) == ["z", "a", "z"])
    }

    @Test func acceptsThirtyTwoLevels() throws {
        var value = JSONValue.number(1)
        for _ in 0..<32 { value = .array([value]) }
        #expect(try MessagePack.decode(MessagePack.encode(value)) == value)
        // Empty containers count as a level too, as in JSONParser.
        #expect(try MessagePack.decode([UInt8](repeating: 0x91, count: 31) + [0x90]) != .null)
    }

    // MARK: Errors

    @Test func rejectsTruncatedInput() {
        decodeError([], .truncated, offset: 0)
        // fixarray of 2 with one element
        decodeError([0x92, 0x01], .truncated, offset: 0)
        // fixstr of 3 with one byte
        decodeError([0xA3, 0x61], .truncated, offset: 0)
        // float64 with 1 of 8 bytes, inside a map value
        decodeError([0x81, 0xA1, 0x61, 0xCB, 0x3F], .truncated, offset: 3)
        // a map's key without its value
        decodeError([0x81, 0xA1, 0x61], .truncated)
        // str16 whose length bytes are cut
        decodeError([0xDA, 0x00], .truncated, offset: 0)
        // every proper prefix of a real record is truncated
        let record = MessagePack.encode(Fixtures.locationValue)
        for length in 0..<record.count {
            let error = decodeError(Array(record[0..<length]), .truncated)
            if error?.code != .truncated { break }
        }
    }

    @Test func rejectsTrailingBytes() {
        decodeError([0x01, 0x02], .trailingBytes, offset: 1)
        decodeError(
            MessagePack.encode(Fixtures.locationValue) + [0xC0], .trailingBytes,
            offset: MessagePack.encode(Fixtures.locationValue).count)
    }

    @Test func rejectsNonStringKeys() {
        // {1: 2}
        decodeError([0x81, 0x01, 0x02], .nonStringKey, offset: 1)
        // {"a": 1, nil: 2}: the second key
        decodeError([0x82, 0xA1, 0x61, 0x01, 0xC0, 0x02], .nonStringKey, offset: 4)
        // a map key that is itself a map
        decodeError([0x81, 0x80, 0x01], .nonStringKey, offset: 1)
        // a string value that follows a string key is fine; an array in key position is not
        decodeError([0x82, 0xA1, 0x61, 0xA1, 0x62, 0x90, 0x01], .nonStringKey, offset: 5)
    }

    @Test func rejectsBinAndExt() {
        // bin8 of one byte
        let bin = decodeError([0xC4, 0x01, 0x00], .unsupportedType, offset: 0)
        #expect(bin?.reason.contains("bin") == true)
        // bin16 as a map value at byte 3
        decodeError([0x81, 0xA1, 0x61, 0xC5, 0x00, 0x00], .unsupportedType, offset: 3)
        // fixext1 of type 1
        let ext = decodeError([0xD4, 0x01, 0x00], .unsupportedType, offset: 0)
        #expect(ext?.reason.contains("ext") == true)
        // the timestamp extension (fixext4, type -1) inside an array
        decodeError([0x91, 0xD6, 0xFF, 0x00, 0x00, 0x00, 0x01], .unsupportedType, offset: 1)
        // ext8
        decodeError([0xC7, 0x01, 0x05, 0x00], .unsupportedType, offset: 0)
    }

    @Test func rejectsTooDeepNesting() {
        // 33 nested fixarrays of one element around a 1
        decodeError([UInt8](repeating: 0x91, count: 33) + [0x01], .tooDeep, offset: 32)
        // 33 levels of maps {"a": {"a": …}}
        var bytes: [UInt8] = []
        for _ in 0..<33 { bytes += [0x81, 0xA1, 0x61] }
        decodeError(bytes + [0xC0], .tooDeep, offset: 32 * 3)
    }

    @Test func rejectsInvalidUTF8() {
        // "\xc3(" : a lead byte without its continuation
        decodeError([0xA2, 0xC3, 0x28], .invalidUTF8, offset: 1)
        // an encoded surrogate (ED A0 80) is not UTF-8
        decodeError([0xA3, 0xED, 0xA0, 0x80], .invalidUTF8, offset: 1)
        // in a map value, the path names the key
        let error = decodeError([0x81, 0xA1, 0x61, 0xA1, 0xFF], .invalidUTF8, offset: 4)
        #expect(error?.path == "a")
        // in a key
        decodeError([0x81, 0xA1, 0xFE, 0x01], .invalidUTF8, offset: 2)
        // a string that looks like a known field name but for one byte is still checked
        decodeError([0xA4, 0x6B, 0x69, 0x6E, 0xE4], .invalidUTF8, offset: 1)
    }

    @Test func rejectsNonFiniteFloatsAndReservedByte() {
        decodeError(Fixtures.bytes("cb 7f f8 00 00 00 00 00 00"), .nonFinite)
        let error = decodeError(Fixtures.bytes("91 ca 7f 80 00 00"), .nonFinite)
        #expect(error?.path == "[0]")
        decodeError([0xC1], .malformed, offset: 0)
    }

    @Test func boundsSizesBeforeAllocating() {
        // array32 claiming 4 294 967 295 elements: over the count limit
        decodeError([0xDD, 0xFF, 0xFF, 0xFF, 0xFF], .tooLarge, offset: 0)
        // map16 claiming 65 535 pairs with nothing after it: cannot fit, refused before msgpack-c reserves memory
        decodeError([0xDE, 0xFF, 0xFF], .truncated, offset: 0)
        // str32 longer than the string limit
        decodeError([0xDB, 0x7F, 0xFF, 0xFF, 0xFF, 0x61], .tooLarge, offset: 0)
        // within the limits but claiming more than follows
        decodeError([0xDD, 0x00, 0x01, 0x00, 0x00, 0x01], .truncated, offset: 0)
    }

    @Test func errorsDescribeThemselves() {
        let error = WireError(.invalidUTF8, "a string that is not valid UTF-8", offset: 4, path: "[2].user")
        #expect(error.description == "a string that is not valid UTF-8 at byte 4 (in [2].user)")
        #expect(WireError(.truncated, "x").inside("b").inside("[1]").inside("a").path == "a[1].b")
    }

    // MARK: The record fast path

    @Test func decodeRecordsValidatesEachElement() throws {
        let body = MessagePack.encode(
            .array([
                Fixtures.locationValue, Fixtures.location(with: "lat", .number(91)),
                .number(3),
            ]))
        let results = try MessagePack.decodeRecords(body)
        #expect(results.count == 3)
        #expect(try results[0].get() == RecordDecoding.record(from: Fixtures.locationValue))
        guard case .failure(let lat) = results[1], case .failure(let notMap) = results[2] else {
            Issue.record("expected failures at 1 and 2: \(results)")
            return
        }
        #expect(lat.field == "lat")
        #expect(notMap.field == "(record)")
        #expect(notMap.reason.contains("map"))
    }

    @Test func decodeRecordsNamesTheMemberOfABadString() throws {
        // [ {"app": "\xff"} ]: a readable document whose only record holds a string that is not UTF-8
        let results = try MessagePack.decodeRecords([0x91, 0x81, 0xA3, 0x61, 0x70, 0x70, 0xA1, 0xFF])
        guard case .failure(let error) = results.first else {
            Issue.record("expected a failure: \(results)")
            return
        }
        #expect(error.field == "app")
        #expect(error.reason.contains("UTF-8") && error.reason.contains("byte 7"))
    }

    @Test func decodeRecordsRefusesNonArraysAndTooMany() {
        #expect(throws: WireError.self) { try MessagePack.decodeRecords(MessagePack.encode(Fixtures.locationValue)) }
        do {
            _ = try MessagePack.decodeRecords(MessagePack.encode(.array([.null, .null, .null])), maximumCount: 2)
            Issue.record("expected tooLarge")
        } catch {
            #expect(error.code == .tooLarge)
        }
    }
}

@Suite("JSONText")
struct JSONTextTests {
    @Test func writesDeterministicShortestText() {
        let value = JSONValue.object([
            ("s", .string("a\"b\\c\n\u{1}")), ("i", .number(42)), ("neg", .number(-7)), ("f", .number(0.1)),
            ("small", .number(1e-7)), ("big", .number(1e16)), ("huge", .number(1e300)), ("nan", .number(.nan)),
            ("a", .array([.null, .bool(true), .bool(false)])), ("o", .object([])),
        ])
        #expect(
            JSONText.encode(value)
                == #"{"s":"a\"b\\c\n\u0001","i":42,"neg":-7,"f":0.1,"small":1e-07,"big":1e+16,"huge":1e+300,"nan":null,"a":[null,true,false],"o":{}}"#
        )
    }

    @Test(arguments: MessagePackTests.shapes)
    func roundTripsThroughTheModelParser(_ value: JSONValue) throws {
        #expect(try JSONText.decode(JSONText.bytes(value)) == value)
    }

    @Test func numbersRoundTrip() throws {
        for number in [
            0.1, 1.0 / 3, 1_718_708_242.123_456_7, -2.5e-308, 9_007_199_254_740_994, 123_456_789_012_345_680_000.0,
        ] {
            #expect(Double(JSONText.number(number)) == number)
        }
    }

    @Test func syntaxErrorsCarryTheOffset() {
        do {
            _ = try JSONText.decode(Array("[1, 2,]".utf8))
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .malformed)
            #expect(error.offset == 6)
        }
        #expect(throws: WireError.self) { try JSONText.decode(Array("[1".utf8)) }
    }
}
