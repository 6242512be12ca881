import RecordCodecs

extension SensorRecord {
    /// A record from one JSON object, an NDJSON line of a recording (PROTOCOL §2), checked as sensor-ingest will check
    /// it (the one validator, `RecordDecoding`): the error names the member at fault and what is wrong with it.
    public init(json: some StringProtocol) throws(RecordError) {
        self = try RecordDecoding.record(fromJSON: Array(json.utf8))
    }
}
