/// A record handed to a gateway, with its number (the caller's: `roadsave send` numbers the lines or records of its
/// file) and, for records read from MessagePack, their bytes as read: the batch body is then these bytes, not an
/// encoding of the record.
package struct GatewayItem: Sendable {
    package var record: SensorRecord
    package var number: Int
    /// A slice: `roadsave send` keeps a group's records' bytes in one array.
    package var messagePack: ArraySlice<UInt8>?

    package init(record: SensorRecord, number: Int, messagePack: ArraySlice<UInt8>? = nil) {
        self.record = record
        self.number = number
        self.messagePack = messagePack
    }
}
