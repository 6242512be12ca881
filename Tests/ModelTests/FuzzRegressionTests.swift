import RecordCodecs
import Testing

/// Inputs found by the fuzz targets (Fuzz/), kept so that what they broke stays fixed.
@Suite("Fuzz regressions: RecordDecoding")
struct RecordDecodingFuzzRegressionTests {
    /// Fuzz/Targets/record_json.swift: a valid record must read back from its own `json()`. These two were accepted,
    /// then written at PROTOCOL §2 precision as the bound itself (t 4102444800.000, peakG 1000), which is refused.
    @Test(arguments: [
        (RecordJSON.impact.with("t", "4102444799.9996"), "t"),
        (RecordJSON.impact.with("peakG", "999.99996"), "peakG"),
    ])
    func valueThatWouldBeWrittenAsTheBoundIsRefused(record: RecordJSON, field: String) {
        expectRejection(record, field: field)
    }

    /// Just inside the bounds at the written precision: accepted, and the written record reads back.
    @Test(arguments: [
        RecordJSON.impact.with("t", "4102444799.9994"),
        RecordJSON.impact.with("peakG", "999.99994"),
        RecordJSON.impact.with("t", "4102444799.999").with("peakG", "999.9999"),
    ])
    func valueJustInsideTheBoundRoundTrips(record: RecordJSON) throws {
        let decoded = try decodeRecord(record.text)
        let again = try RecordDecoding.record(fromJSON: Array(decoded.json().utf8))
        #expect(again.json() == decoded.json())
    }
}
