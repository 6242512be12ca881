/// The chunks of a journal's reply as the core takes them: how many there are, known before any is decoded, and then
/// the chunks themselves, read once, in the reply's order. An array of chunks is one; the detection shell's decoder
/// gives one that decodes a few hundred records at a time as they are read (`DecodedJournalReply`), so that each
/// record is applied while it is still in the processor's cache rather than after the whole reply (megabytes when
/// detection is behind) has been decoded.
public protocol JournalReplyChunks: Sequence where Element == JournalChunkRecords {
    /// The number of chunks the reply holds. (A decoder that finds a chunk's records unreadable only once it reads
    /// them skips that chunk then: it is counted here, and not given.)
    var chunkCount: Int { get }
}

extension Array: JournalReplyChunks where Element == JournalChunkRecords {
    public var chunkCount: Int { count }
}
