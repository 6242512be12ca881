// The pull protocol's maps: FeedRequest(frames:) and FeedReplyHeader.parse on arbitrary MessagePack (the first byte
// chooses: even a request, odd a reply header; the rest is the map's frame).
// Property: what was read is written and read again to an equal request or header.
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
    } else {
        guard let (header, items) = try? FeedReplyHeader.parse([FeedReplyHeader.frame, map]) else { return 0 }
        require(items.isEmpty, "items appeared from nowhere")
        let again = try? FeedReplyHeader.parse(header.frames(items: [[1, 2]]))
        require(again?.header == header && again?.items.count == 1, "feed reply header round trip changed \(header)")
    }
    return 0
}
