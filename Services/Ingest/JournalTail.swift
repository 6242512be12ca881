/// The journal's newest chunks, as the feed serves them, kept in memory after their commit: detection reads what
/// was just stored, and reading it back from SQLite (its pages, its log, a copy per chunk) cost ingest more than
/// any other part of serving the feed. Pure; `Journal` keeps it in step with the store: every committed chunk is
/// added in position order, and whatever retention deletes is forgotten here too. A read it does not wholly cover
/// (`read` returns nil) goes to SQLite, so the answers are the same either way.
struct JournalTail {
    struct Chunk: Equatable {
        var position: UInt64
        var shard: Int
        /// The records' bytes (the body), as the feed counts a reply's size.
        var size: Int
        /// The feed item (`JournalChunk.item`): a slice of the array its statement's chunks were written in.
        var item: ArraySlice<UInt8>
    }

    /// The most bytes of items kept; the oldest go first.
    let maximumBytes: Int
    /// Consecutive positions, oldest first, from `start` on (the ones before it are dropped, not yet removed).
    private var chunks: [Chunk] = []
    private var start = 0
    private(set) var bytes = 0

    init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    /// The oldest position held (nil: none).
    var oldest: UInt64? { start < chunks.count ? chunks[start].position : nil }

    /// The newest position held (nil: none).
    var newest: UInt64? { chunks.last.map(\.position) }

    /// A chunk just committed. One that does not follow the newest held starts the tail again (positions held are
    /// always consecutive).
    mutating func add(_ chunk: Chunk) {
        if let newest, chunk.position != newest + 1 { removeAll() }
        chunks.append(chunk)
        bytes += chunk.item.count
        while bytes > maximumBytes, start < chunks.count { dropOldest() }
        // Dropped chunks are removed in bulk, not one by one from the front.
        if start > 1024, start * 2 > chunks.count {
            chunks.removeFirst(start)
            start = 0
        }
    }

    /// Chunks at `position` and before were deleted from the store.
    mutating func forget(through position: UInt64) {
        guard let oldest, position >= oldest else { return }
        guard let newest, position < newest else { return removeAll() }
        let end = start + Int(position - oldest) + 1
        while start < end { dropOldest() }
    }

    /// The oldest chunk is no longer held; its bytes are freed now, its place in `chunks` with the next compaction.
    private mutating func dropOldest() {
        bytes -= chunks[start].item.count
        chunks[start].item = []
        start += 1
    }

    mutating func removeAll() {
        chunks = []
        start = 0
        bytes = 0
    }

    /// The chunks of `shard` (every shard when nil) after `after` through `through`, as `Journal.read` selects them
    /// from the store: at most `maxItems`, and no more than `maxBytes` of bodies unless the first alone is more. Nil
    /// unless every position from `after + 1` through `through` is held.
    func read(shard: Int?, after: UInt64, through: UInt64, maxItems: Int, maxBytes: Int)
        -> (items: [ArraySlice<UInt8>], last: UInt64?, full: Bool)?
    {
        guard let oldest, let newest, after + 1 >= oldest, through <= newest else { return nil }
        var items: [ArraySlice<UInt8>] = []
        var bytes = 0
        var last: UInt64?
        var index = start + Int(after + 1 - oldest)
        let end = start + Int(through - oldest)
        while index <= end, items.count < maxItems {
            let chunk = chunks[index]
            index += 1
            if let shard, chunk.shard != shard { continue }
            if !items.isEmpty, bytes + chunk.size > maxBytes { return (items, last, true) }
            items.append(chunk.item)
            bytes += chunk.size
            last = chunk.position
        }
        return (items, last, items.count >= maxItems)
    }
}
