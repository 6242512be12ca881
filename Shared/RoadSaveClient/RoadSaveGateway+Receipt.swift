extension RoadSaveGateway {
    /// The acknowledgement of one batch: its records are in sensor-ingest's journal (on disk) but the rejected ones.
    public struct Receipt: Sendable, Equatable {
        /// The batch's ID on the wire (`<stream>-<number>`).
        public var batchID: String
        /// The ingest that acknowledged it.
        public var endpoint: String
        /// Records in the batch.
        public var records: Int
        /// Records stored.
        public var accepted: Int
        /// Records refused, each with why.
        public var rejections: [Rejection]
        /// Sends it took (1 when the first was acknowledged; re-sends for a rate limit or a store refusal not counted).
        public var attempts: Int
        /// The numbers of the batch's records (`Rejection.number`), in order.
        package var numbers: [Int]
        /// The ingest's index in `Configuration.endpoints`.
        package var ingest: Int
    }

    /// A record that sensor-ingest refused (or the whole batch, `index` -1), with the member at fault and why.
    public struct Rejection: Sendable, Equatable {
        /// Its place in its batch (0-based), -1 when the batch was refused whole.
        public var index: Int
        /// The record's number: its place, from 1, among all the records handed to this gateway; nil for a batch.
        public var number: Int?
        /// The record itself; nil for a batch.
        public var record: SensorRecord?
        /// The member at fault (`lat`, `app`, `(batch)`, …), as PROTOCOL §2 names it.
        public var field: String
        /// What is wrong with it, in sensor-ingest's words.
        public var reason: String
        /// What kind of refusal it is.
        public var kind: Kind

        /// What kind of refusal a rejection is, so a caller need not read the reason.
        public enum Kind: Sendable, Hashable {
            /// The record breaks a rule of PROTOCOL §2: fix it.
            case invalidRecord
            /// sensor-ingest does not accept this applicationID (`--applications`): a wrong ID, or the ingest's list
            /// lacks it.
            case unknownApplication
            /// This gateway's key may not send records of the record's application (its allow-list line lists others).
            case applicationNotAllowed
            /// The application has as many devices as sensor-ingest allows (`--max-devices-per-app`).
            case tooManyDevices
            /// The batch was refused whole (unreadable, too many records for `--max-batch`, a bad header).
            case batchRefused
        }

        /// The kind of a rejection with this field and reason.
        static func kind(index: Int, field: String, reason: String) -> Kind {
            if index < 0 { return .batchRefused }
            switch field {
            case "app" where reason.hasPrefix("unknown application"): return .unknownApplication
            case "app" where reason.contains("is not allowed to send records"): return .applicationNotAllowed
            case "user" where reason.contains("--max-devices-per-app"): return .tooManyDevices
            default: return .invalidRecord
            }
        }
    }
}
