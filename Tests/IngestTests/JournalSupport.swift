import Feeds
import Foundation
import Logging
import RoadSaveModel
import Wire

@testable import IngestService

/// A temporary data directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory.appendingPathComponent(
                "roadsave-ingest-\(UUID().uuidString.prefix(12))"
            ).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A wall clock the test sets.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var time: Double

    init(_ time: Double) {
        self.time = time
    }

    var now: Double {
        get { lock.withLock { time } }
        set { lock.withLock { time = newValue } }
    }
}

enum Records {
    static let quiet = Log(category: "test", minimumLevel: .error)

    /// `count` location records of `user` (seq 1…count), a second apart.
    static func drive(user: String, app: String = "app-1", count: Int, start: Double = 1_772_433_000) -> [SensorRecord]
    {
        (0..<count).map { index in
            SensorRecord(
                device: DeviceID(app: app, user: user), seq: UInt64(index + 1), t: start + Double(index),
                payload: .location(
                    LocationFix(
                        latitude: -33.9, longitude: 18.4 + Double(index) * 1e-4, speed: 12,
                        horizontalAccuracy: 5)))
        }
    }

    /// A user whose device hashes to `shard` of `shards` (the first of `user-0`, `user-1`, … that does).
    static func user(inShard shard: Int, of shards: Int, app: String = "app-1", avoiding: Set<String> = []) -> String {
        var index = 0
        while true {
            let user = "user-\(index)"
            if !avoiding.contains(user), DeviceShard.of(DeviceID(app: app, user: user), shards: shards) == shard {
                return user
            }
            index += 1
        }
    }

    /// The records in feed items (chunk bodies).
    static func decode<Item: Collection<UInt8>>(_ items: some Sequence<Item>) throws -> [SensorRecord] {
        var records: [SensorRecord] = []
        for item in items {
            records += try RecordBatch.decodeBatch(Array(item), contentType: .msgpack).accepted
        }
        return records
    }
}

enum Requests {
    /// A request answered at once (no wait).
    static func request(
        after: UInt64, through: UInt64? = nil, maxItems: Int = 256, maxBytes: Int = 4 << 20,
        acknowledged: UInt64 = 0, consumer: String = "test", shard: Int? = nil,
        shards: Int? = nil, feed: String? = nil
    ) -> FeedRequest {
        FeedRequest(
            id: 1, feed: feed, after: after, through: through, maxItems: maxItems, maxBytes: maxBytes,
            acknowledged: acknowledged, consumer: consumer, shard: shard, shards: shards, waitMilliseconds: 0)
    }
}
