import RoadSaveModel
import Testing

@testable import Wire

@Suite("Device shards")
struct DeviceShardTests {
    @Test func shardIsStable() {
        // Expected values computed independently with Python:
        //   def fnv(app, user):
        //       h = 0xcbf29ce484222325
        //       for b in app.encode() + b'\xff' + user.encode():
        //           h ^= b; h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        //       return h
        //   fnv("app-1", "user-9")        = 0x5612c360a6dcee82  % 16 = 2,  % 7 = 3
        //   fnv("app-1", "user-10")       = 0x1eebbf3b89807b5e  % 16 = 14, % 7 = 6
        //   fnv("fleet", "driver-0001")   = 0x71e3c3311eee3396  % 16 = 6,  % 7 = 4
        //   fnv("ab", "c")                = 0xfdf3a083ef9bc024  % 16 = 4
        //   fnv("a", "bc")                = 0xd2b3f5819298d9d6  % 16 = 6
        #expect(DeviceShard.fnv1a(DeviceID(app: "app-1", user: "user-9")) == 0x5612_C360_A6DC_EE82)
        #expect(DeviceShard.fnv1a(DeviceID(app: "ab", user: "c")) == 0xFDF3_A083_EF9B_C024)
        #expect(DeviceShard.of(DeviceID(app: "app-1", user: "user-9"), shards: 16) == 2)
        #expect(DeviceShard.of(DeviceID(app: "app-1", user: "user-9"), shards: 7) == 3)
        #expect(DeviceShard.of(DeviceID(app: "app-1", user: "user-10"), shards: 16) == 14)
        #expect(DeviceShard.of(DeviceID(app: "app-1", user: "user-10"), shards: 7) == 6)
        #expect(DeviceShard.of(DeviceID(app: "fleet", user: "driver-0001"), shards: 16) == 6)
        #expect(DeviceShard.of(DeviceID(app: "fleet", user: "driver-0001"), shards: 7) == 4)
        #expect(DeviceShard.of(DeviceID(app: "ab", user: "c"), shards: 16) == 4)
        #expect(DeviceShard.of(DeviceID(app: "a", user: "bc"), shards: 16) == 6)
        #expect(DeviceShard.of(DeviceID(app: "anything", user: "at all"), shards: 1) == 0)
    }

    @Test func shardsSpreadDevicesEvenly() {
        let shards = 16
        let devices = 16_000
        var counts = [Int](repeating: 0, count: shards)
        for index in 0..<devices {
            counts[DeviceShard.of(DeviceID(app: "app-\(index % 3)", user: "user-\(index)"), shards: shards)] += 1
        }
        // 1000 expected per shard; a fair hash stays well within ±15 % (σ ≈ 31).
        #expect(counts.allSatisfy { (850...1150).contains($0) }, "\(counts)")
    }
}
