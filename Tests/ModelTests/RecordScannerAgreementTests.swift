import Foundation
import RecordCodecs
import RoadSaveModel
import Testing

/// The fast NDJSON path (`JSONRecordScanner` + the shared validator) against the decoder as it was before issue 9
/// (`LegacyRecordDecoding`: `JSONParser` → `JSONValue` → its own validation), record by record: the same record
/// (every field, to the bit) or the same error (field and reason), over the CLI fixtures, the bench file when it is
/// there, and thousands of mutated records.
@Suite("JSONRecordScanner agrees with the pre-issue-9 decoder")
struct RecordScannerAgreementTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../CLITests/Fixtures/morning.ndjson").standardized

    /// The valid records of every kind, with the variants that exercise the scanner's branches.
    static let seeds: [String] = [
        RecordJSON.location.text, RecordJSON.activity.text, RecordJSON.steps.text, RecordJSON.impact.text,
        RecordJSON.capabilities.text,
        RecordJSON.location.with("speed", "-1").with("hacc", "null").without("course").text,
        RecordJSON.impact.with("samples", "[]").without("durationMs").text,
        RecordJSON.impact.with("samples", "null").text,
        " { \"kind\" : \"steps\" , \"app\":\"a\",\"user\":\"b\",\"t\":1772433067.5e0,\"steps\":0 } \t",
        RecordJSON.steps.with("note", "\"free text\"").with("n", "12.5").with("flag", "true").text,
        RecordJSON.location.with("user", "\"a-user-name-longer-than-fifteen-bytes\"").text,
        RecordJSON.location.with("user", "\"Zoë\"").text,
        RecordJSON.location.with("user", "\"tab\\there\"").text,
    ]

    /// Values a mutation puts into a member.
    static let values = [
        "null", "true", "false", "\"x\"", "\"\"", "[]", "{}", "[1,2]", "0", "-0", "-0.0", "1e400", "-1e400", "0.1e-5",
        "12345678901234567890", "123456789012345678901234567890.5", "9007199254740993", "4102444799.9996",
        "1772433065.1234567890123", "1E+2", "1e-2", "01", "1.", ".5", "-", "+1", "0x10", "NaN", "\"\\u0041\"",
        "\"\\ud800\"", "[[1,2,3,4]]", "[[1,2,3]]", "[[1,2,3,\"4\"]]", "[1]", "[[1,2,3,4],]", "[[1,2,3,4]",
        "\"automotive\"", "\"walking\"", "\"medium\"", "\"impact\"", "\"capabilities\"", "\"bogus\"", "1000",
        "999.99996",
        "-90", "90.0000001", "360.5", "60001", "\"\u{7F}\"", "\"a\u{1}b\"",
    ]

    static let fields = [
        "kind", "app", "user", "seq", "t", "lat", "lon", "speed", "course", "hacc", "activity",
        "confidence", "steps", "peakG", "durationMs", "samples", "activityAvailable",
        "pedometerAvailable", "other",
    ]

    static func mutants() -> [String] {
        var lines: [String] = []
        let kinds = [
            RecordJSON.location, RecordJSON.activity, RecordJSON.steps, RecordJSON.impact,
            RecordJSON.capabilities,
        ]
        for record in kinds {
            for field in fields {
                lines.append(record.without(field).text)
                for value in values { lines.append(record.with(field, value).text) }
            }
            // A repeated member: the first one counts.
            lines.append(record.text.dropLast() + ",\"kind\":\"steps\",\"t\":5}")
            lines.append("{\"t\":1,\"t\":1772433065," + record.text.dropFirst())
        }
        // Byte-level damage: each byte of every seed replaced, deleted, and the text cut there.
        let bytesOfInterest: [UInt8] = Array("\"\\{}[],:-09e. nt\t".utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xFF]
        for seed in seeds {
            let bytes = Array(seed.utf8)
            for index in bytes.indices {
                var deleted = bytes
                deleted.remove(at: index)
                lines.append(String(decoding: deleted, as: UTF8.self))
                lines.append(String(decoding: bytes[..<index], as: UTF8.self))
                let replacement = bytesOfInterest[index % bytesOfInterest.count]
                var replaced = bytes
                replaced[index] = replacement
                lines.append(String(decoding: replaced, as: UTF8.self))
            }
        }
        return lines
    }

    static func fixtureLines() throws -> [[UInt8]] {
        let data = try Data(contentsOf: fixtures)
        return data.split(separator: 0x0A).map { [UInt8]($0) }
    }

    /// Records are compared with `==` and by their reflection, which also tells -0.0 from 0.0.
    func expectAgreement(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let legacy = Result { () throws(RecordError) -> SensorRecord in try LegacyRecordDecoding.record(fromJSON: bytes)
        }
        let current = Result { () throws(RecordError) -> SensorRecord in try RecordDecoding.record(fromJSON: bytes) }
        let text = String(decoding: bytes, as: UTF8.self)
        switch (legacy, current) {
        case (.success(let a), .success(let b)):
            #expect(a == b && String(reflecting: a) == String(reflecting: b), "\(text)", sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(a == b, "\(text)", sourceLocation: sourceLocation)
        default:
            Issue.record("\(text): legacy \(legacy), now \(current)", sourceLocation: sourceLocation)
        }
        // The scanner never accepts what the parser refuses, and finds the same members when it accepts.
        if let fields = bytes.withUnsafeBufferPointer({ JSONRecordScanner.scan($0, identifiers: IdentifierCache()) }) {
            let direct = Result { () throws(RecordError) -> SensorRecord in try RecordDecoding.record(from: fields) }
            #expect(
                (try? JSONParser.parse(bytes)) != nil, "scanner accepted bad JSON: \(text)",
                sourceLocation: sourceLocation)
            #expect(
                String(reflecting: direct) == String(reflecting: current), "\(text)", sourceLocation: sourceLocation)
        }
    }

    @Test func theSeedsAreValidAndDecodeTheFastWay() throws {
        for seed in Self.seeds.prefix(11) {
            let bytes = Array(seed.utf8)
            #expect(bytes.withUnsafeBufferPointer { JSONRecordScanner.scan($0, identifiers: nil) } != nil, "\(seed)")
            #expect((try? RecordDecoding.record(fromJSON: bytes)) != nil, "\(seed)")
            expectAgreement(bytes)
        }
    }

    @Test func theFixtureLinesAgree() throws {
        let lines = try Self.fixtureLines()
        #expect(lines.count > 800)
        for line in lines { expectAgreement(line) }
    }

    @Test func mutatedRecordsAgree() {
        let mutants = Self.mutants()
        #expect(mutants.count > 3000)
        for line in mutants { expectAgreement(Array(line.utf8)) }
    }

    /// The bench file (`make bench`), when present: its first 100,000 lines.
    @Test func theBenchFileAgrees() throws {
        let candidates = [
            ProcessInfo.processInfo.environment["ROADSAVE_BENCH_FILE"], "out/bench.ndjson",
            "/work/main/out/bench.ndjson",
        ].compactMap { $0 }
        guard let path = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else { return }
        var reader = try NDJSONLineReader(path: path)
        var count = 0
        reader.forEachLineUntil(
            { line, _ in
                expectAgreement(Array(line))
                count += 1
                return count < 100_000
            }, ended: { _ in })
        #expect(count > 0)
    }

    @Test func numbersConvertExactlyAsDoubleDoes() {
        // The fast path (digits / 10^k) against Double(String) on decimals of every length and exponent.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let digits = Int.random(in: 1...19, using: &generator)
            var text = String(UInt64.random(in: 0...UInt64.max, using: &generator)).prefix(digits)
            let point = Int.random(in: 0...text.count, using: &generator)
            if point < text.count { text.insert(".", at: text.index(text.startIndex, offsetBy: point)) }
            if text.hasPrefix(".") { text = "0" + text }
            if text.hasSuffix(".") { text += "5" }
            if text.count > 1, text.hasPrefix("0"), !text.hasPrefix("0.") { text = "1" + text }
            let exponent = Bool.random(using: &generator) ? "e\(Int.random(in: -30...30, using: &generator))" : ""
            let line =
                "{\"kind\":\"steps\",\"app\":\"a\",\"user\":\"b\",\"t\":1772433067,\"steps\":1,\"x\":1,\"lat\":-\(text)\(exponent)}"
            let fields = Array(line.utf8).withUnsafeBufferPointer { JSONRecordScanner.scan($0, identifiers: nil) }
            guard case .number(let value)? = fields?.lat else {
                Issue.record("not scanned: \(line)")
                continue
            }
            #expect(value.bitPattern == Double("-\(text)\(exponent)")!.bitPattern, "\(text)\(exponent)")
        }
    }
}
