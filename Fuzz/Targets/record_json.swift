// RecordDecoding.record(fromJSON:) on arbitrary bytes (one NDJSON line).
// Properties: a record written as PROTOCOL §2 JSON (`json()`) reads back, of the same kind and device, with every
// number within the documented precision; written again it is byte for byte the same.
import RecordCodecs
import RoadSaveModel
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let record = try? RecordDecoding.record(fromJSON: input) else { return 0 }
    let line = record.json()
    let again: SensorRecord
    do {
        again = try RecordDecoding.record(fromJSON: Array(line.utf8))
    } catch {
        require(false, "the JSON of a valid record does not read back: \(error) in \(line)")
        return 0
    }
    require(
        again.kind == record.kind && again.device == record.device && again.seq == record.seq,
        "round trip changed kind, device or seq: \(line)")
    require(abs(again.t - record.t) <= 0.0005 + 1e-9 * abs(record.t), "round trip moved t: \(record.t) → \(again.t)")
    require(again.json() == line, "the JSON of a record read from JSON is not stable: \(line) → \(again.json())")
    return 0
}
