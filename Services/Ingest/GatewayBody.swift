/// A gateway's MessagePack body and where each accepted record is in it: the journal stores those bytes as they came
/// instead of encoding the records again (the same decoder reads them back, so detection gets the very records that
/// were validated).
public struct GatewayBody: Sendable {
    public var body: [UInt8]
    /// `ranges[i]` holds the batch's i-th accepted record.
    public var ranges: [Range<Int>]
    /// `body` is exactly the array of the accepted records (every element accepted).
    public var isWholeBody: Bool

    public init(body: [UInt8], ranges: [Range<Int>], isWholeBody: Bool) {
        self.body = body
        self.ranges = ranges
        self.isWholeBody = isWholeBody
    }
}
