// The pull protocol's maps: FeedRequest(frames:) and FeedReplyHeader.parse on arbitrary MessagePack, and a packed
// reply's items (FeedItems(packed:)); the first byte chooses: even a request, 1 a reply header, 3 packed items (of
// four), the rest is the frame. Property: what was read is written and read again to an equal request, header or
// items.
import Wire

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let first = input.first else { return 0 }
    let map = Array(input.dropFirst())
    if first & 1 == 0 {
        guard let request = try? FeedRequest(frames: [FeedRequest.frame, map]) else { return 0 }
        require(request.maxItems >= 1 && request.maxBytes >= 1, "a request for nothing was accepted")
        if let shard = request.shard, let shards = request.shards {
            require(shard < shards, "shard \(shard) of \(shards)")
        }
        let again = try? FeedRequest(frames: request.frames())
        require(again == request, "feed request round trip changed \(request) into \(String(describing: again))")
    } else if first & 3 == 1 {
        guard let (header, items) = try? FeedReplyHeader.parse([FeedReplyHeader.frame, map]) else { return 0 }
        require(items.isEmpty, "items appeared from nowhere")
        let frames =
            header.packed
            ? [FeedReplyHeader.frame, header.encoded, FeedItems.packedFrame([[1, 2]])] : header.frames(items: [[1, 2]])
        let again = try? FeedReplyHeader.parse(frames)
        require(again?.header == header && again?.items.count == 1, "feed reply header round trip changed \(header)")
    } else {
        guard let items = try? FeedItems(packed: map) else { return 0 }
        let read = items.map { Array($0) }
        let again = try? FeedItems(packed: FeedItems.packedFrame(read))
        require(again?.map { Array($0) } == read, "packed items round trip changed \(read.count) items")
    }
    return 0
}
