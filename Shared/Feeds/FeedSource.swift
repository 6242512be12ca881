import RoadSaveModel
import Wire

/// What a feed server serves from: a store with positions (ingest's journal, detection's outbox). Called on the
/// server's reactor thread only.
public protocol FeedSource: AnyObject {
    /// The feed's identity; a new store has a new one.
    var feedID: String { get }
    /// The newest position.
    var head: UInt64 { get }
    /// The items after `request.after` (through `request.through`), within the request's limits. An error is sent
    /// to the consumer as the reply's `error`.
    func read(_ request: FeedRequest) throws -> FeedBatch
    /// A consumer says everything up to `request.acknowledged` is safe on its side.
    func acknowledged(_ request: FeedRequest)
    /// For each device, the position of the last item holding its records (0: none), or a later position when the
    /// source cannot tell exactly (`FeedRequest.watch`).
    func lastPositions(of devices: [DeviceID]) -> [UInt64]
    /// The highest position deleted by retention among the items `request` asks for (its shard, or every shard),
    /// when it is above `request.after`; nil otherwise (`FeedReplyHeader.deletedThrough`).
    func deletedThrough(for request: FeedRequest) -> UInt64?
}

extension FeedSource {
    /// A source that does not keep items by device: every device may have records up to the head.
    public func lastPositions(of devices: [DeviceID]) -> [UInt64] {
        Array(repeating: head, count: devices.count)
    }

    /// A source whose retention never deletes what a consumer may still ask for (detection's outbox: only what the
    /// notifier acknowledged).
    public func deletedThrough(for request: FeedRequest) -> UInt64? { nil }
}

/// Items read from a feed and the position of the last one.
public struct FeedBatch: Sendable {
    /// The items, in position order: arrays of their own, or slices of one shared by several (the journal keeps a
    /// statement's chunks in one array).
    public var items: [ArraySlice<UInt8>]
    /// The consumer's next `after`: the position of the last item (the request's `after` when there is none), or a
    /// later one the read covered whole (a journal read to its head: the other shards' chunks after its last).
    public var to: UInt64

    public init(items: [ArraySlice<UInt8>], to: UInt64) {
        self.items = items
        self.to = to
    }
}
