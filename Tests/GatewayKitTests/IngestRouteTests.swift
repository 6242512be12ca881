import GatewayKit
import RoadSaveModel
import Testing

/// Which ingest takes a device: the device hash of PROTOCOL §1 modulo the number of ingests, in the order listed.
@Suite struct IngestRouteTests {
    static let three = ["tcp://a:5550", "tcp://b:5550", "tcp://c:5550"]

    /// The protocol's hash as docs/PROTOCOL.md §1 states it (64-bit FNV-1a over app, 0xFF, user), written here again
    /// rather than called, so that a change to `DeviceShard` cannot pass unnoticed.
    static func documentedHash(app: String, user: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in Array(app.utf8) + [0xFF] + Array(user.utf8) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash
    }

    /// Values computed outside Swift (Python, the formula of `DeviceShard`): fnv("demo-app", "user-001") =
    /// 0x8991585d2baf5664 (% 2 = 0, % 3 = 0), "user-002" 0x89915b5d2baf5b7d (1, 0), "user-003" 0x89915a5d2baf59ca
    /// (0, 2), "user-004" 0x8991555d2baf514b (1, 0), fnv("fleet", "driver-0001") 0x71e3c3311eee3396 (0, 0, % 5 = 3).
    @Test func fixedDevicesGoWhereTheContractsHashSends() throws {
        let two = try IngestRoute(endpoints: ["tcp://a:5550", "tcp://b:5550"])
        let three = try IngestRoute(endpoints: Self.three)
        let five = try IngestRoute(endpoints: (1...5).map { "tcp://ingest-\($0):5550" })
        let expected: [(user: String, two: Int, three: Int)] = [
            ("user-001", 0, 0), ("user-002", 1, 0),
            ("user-003", 0, 2), ("user-004", 1, 0),
        ]
        for (user, inTwo, inThree) in expected {
            let device = DeviceID(app: "demo-app", user: user)
            #expect(two.index(of: device) == inTwo, "\(user) of two")
            #expect(three.index(of: device) == inThree, "\(user) of three")
        }
        #expect(five.index(of: DeviceID(app: "fleet", user: "driver-0001")) == 3)
        #expect(two.endpoint(of: DeviceID(app: "demo-app", user: "user-002")) == "tcp://b:5550")
        #expect(three.endpoint(of: DeviceID(app: "demo-app", user: "user-003")) == "tcp://c:5550")
        #expect(Self.documentedHash(app: "demo-app", user: "user-001") == 0x8991_585D_2BAF_5664)
    }

    /// Every device of a fleet goes to exactly one ingest, the one the documented formula names, and each ingest
    /// gets a fair share.
    @Test func everyDeviceOfAFleetGoesToTheIngestTheFormulaNames() throws {
        let route = try IngestRoute(endpoints: Self.three)
        var counts = [0, 0, 0]
        for number in 0..<3000 {
            let (app, user) = ("app-\(number % 4)", "user-\(number)")
            let index = route.index(of: DeviceID(app: app, user: user))
            #expect(index == Int(Self.documentedHash(app: app, user: user) % 3), "\(app)/\(user)")
            #expect(route.endpoint(of: DeviceID(app: app, user: user)) == Self.three[index])
            counts[index] += 1
        }
        // 1000 expected each; a fair hash stays well within ±15 % (σ ≈ 26).
        #expect(counts.allSatisfy { (850...1150).contains($0) }, "\(counts)")
        // The same device asked again (a later record of it) goes to the same ingest.
        let device = DeviceID(app: "app-1", user: "user-42")
        #expect(Set((0..<10).map { _ in route.index(of: device) }).count == 1)
    }

    @Test func oneIngestTakesEveryDevice() throws {
        let route = try IngestRoute(endpoints: ["tcp://127.0.0.1:5550"])
        for number in 0..<200 {
            #expect(route.index(of: DeviceID(app: "app-\(number % 3)", user: "user-\(number)")) == 0)
        }
    }

    /// The order of the list decides: two gateways listing the same ingests in another order disagree.
    @Test func theOrderOfTheListDecides() throws {
        let forward = try IngestRoute(endpoints: ["tcp://a:5550", "tcp://b:5550"])
        let backward = try IngestRoute(endpoints: ["tcp://b:5550", "tcp://a:5550"])
        let device = DeviceID(app: "demo-app", user: "user-002")
        #expect(forward.endpoint(of: device) == "tcp://b:5550")
        #expect(backward.endpoint(of: device) == "tcp://a:5550")
    }

    @Test func anEmptyListOrAnIngestListedTwiceIsRefused() {
        #expect(throws: IngestRoute.ListError.empty) { try IngestRoute(endpoints: []) }
        #expect(throws: IngestRoute.ListError.repeated("tcp://a:5550")) {
            try IngestRoute(endpoints: ["tcp://a:5550", "tcp://b:5550", "tcp://a:5550"])
        }
    }
}
