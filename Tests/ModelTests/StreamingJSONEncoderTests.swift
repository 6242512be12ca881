import Foundation
import RecordCodecs
import Testing

/// `StreamingJSONEncoder`: JSON that JSONDecoder reads back as the value JSONEncoder's output gives, and a refusal
/// (`Unsupported`, the caller's cue to use JSONEncoder) for what it cannot stream.
@Suite struct StreamingJSONEncoderTests {
    struct Inner: Codable, Equatable {
        var name: String
        var values: [Double?]
    }

    enum Shape: Codable, Equatable {
        case none
        case circle(radius: Double)
        case labelled(String, inner: Inner)
    }

    struct Outer: Codable, Equatable {
        var text: String
        var integers: [Int64]
        var unsigned: UInt64
        var small: Int8
        var flag: Bool
        var nothing: String?
        var inner: Inner
        var byNumber: [Int: String]
        var byName: [String: [Inner]]
        var shapes: [Shape]
        var nested: [[Inner]]
        var empty: [Inner]
        var single: Float
    }

    static let sample = Outer(
        text: "quote \" backslash \\ newline \n tab \t control \u{01} slash / é 🚗",
        integers: [0, -1, Int64.max, Int64.min], unsigned: UInt64.max, small: -128, flag: true, nothing: nil,
        inner: Inner(name: "", values: [1, nil, -0.0, 1e-300, .leastNonzeroMagnitude, 1772433000.2, 60, 1e16, 0.1]),
        byNumber: [3: "three", -1: "minus one"], byName: ["a": [], "b": [Inner(name: "x", values: [])]],
        shapes: [.none, .circle(radius: 2.5), .labelled("l", inner: Inner(name: "n", values: [3]))],
        nested: [[], [Inner(name: "deep", values: [nil])]], empty: [], single: 0.1)

    @Test func readsBackAsTheSameValue() throws {
        let bytes = try StreamingJSONEncoder().encode(Self.sample)
        #expect(try JSONDecoder().decode(Outer.self, from: Data(bytes)) == Self.sample)
        // The same members as JSONEncoder writes (order aside).
        let streamed = try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary
        let foundation = try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.sample)) as? NSDictionary
        #expect(streamed != nil && streamed == foundation)
    }

    @Test func topLevelValuesAndNumbersInTheirShortestForm() throws {
        #expect(try StreamingJSONEncoder().encode(60.0) == Array("60".utf8))
        #expect(try StreamingJSONEncoder().encode(0.25) == Array("0.25".utf8))
        #expect(try StreamingJSONEncoder().encode("a\"b") == Array("\"a\\\"b\"".utf8))
        #expect(try StreamingJSONEncoder().encode([Int]()) == Array("[]".utf8))
        #expect(
            try StreamingJSONEncoder().encode(Inner(name: "n", values: [nil, 2]))
                == Array(#"{"name":"n","values":[null,2]}"#.utf8))
    }

    @Test func aReusingEncoderWritesAValueEqualToTheLastFromItsBytes() throws {
        let encoder = StreamingJSONEncoder(reusing: Inner.self)
        let values = [
            Inner(name: "a", values: [1]), Inner(name: "a", values: [1]), Inner(name: "b", values: [nil]),
            Inner(name: "a", values: [1]),
        ]
        for value in values {
            let pair = [value, value]
            let bytes = try encoder.encode(pair)
            #expect(bytes == (try StreamingJSONEncoder().encode(pair)))
            #expect(try JSONDecoder().decode([Inner].self, from: Data(bytes)) == pair)
        }
    }

    struct Writes: Encodable {
        var write: (any Encoder) throws -> Void
        func encode(to encoder: any Encoder) throws { try write(encoder) }
    }

    enum Key: String, CodingKey { case a, b }

    @Test func refusesWhatItCannotStream() throws {
        // JSON has no infinity; JSONEncoder refuses it too.
        #expect(throws: StreamingJSONEncoder.Unsupported.self) { try StreamingJSONEncoder().encode([Double.infinity]) }
        // JSONEncoder writes these in forms of its own.
        #expect(throws: StreamingJSONEncoder.Unsupported.self) { try StreamingJSONEncoder().encode([Data([1, 2])]) }
        #expect(throws: StreamingJSONEncoder.Unsupported.self) { try StreamingJSONEncoder().encode(Date()) }
        // A nested container written to after its parent went on.
        let late = Writes { encoder in
            var container = encoder.container(keyedBy: Key.self)
            var nested = container.nestedUnkeyedContainer(forKey: .a)
            try container.encode(1, forKey: .b)
            try nested.encode(2)
        }
        #expect(throws: StreamingJSONEncoder.Unsupported.self) { try StreamingJSONEncoder().encode(late) }
        // Two values for one.
        let twice = Writes { encoder in
            var single = encoder.singleValueContainer()
            try single.encode(1)
            var again = encoder.singleValueContainer()
            try again.encode(2)
        }
        #expect(throws: StreamingJSONEncoder.Unsupported.self) { try StreamingJSONEncoder().encode(twice) }
    }

    @Test func aValueThatWritesNothingIsAnEmptyObject() throws {
        #expect(try StreamingJSONEncoder().encode([Writes { _ in }]) == Array("[{}]".utf8))
    }
}
