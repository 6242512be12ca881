import Foundation
import RoadSaveModel
import Testing

@testable import IngestService

/// Where each device's records end in the journal (`Journal.lastPositions`, detection's deadlines during catch-up):
/// never earlier than the last chunk holding them, so a device told "read" has really been read.
@Suite struct JournalLastPositionsTests {
    static let shards = 4
    let userA = Records.user(inShard: 0, of: JournalLastPositionsTests.shards)
    let userB = Records.user(inShard: 2, of: JournalLastPositionsTests.shards)

    func open(_ directory: TemporaryDirectory) throws -> Journal {
        try Journal(directory: directory.path, shards: Self.shards, log: Records.quiet, clock: { 1_000_000 })
    }

    func device(_ user: String) -> DeviceID { DeviceID(app: "app-1", user: user) }

    /// Appends one batch after admitting its devices, as ingest does (`withSlots`: the batch carries their slot
    /// numbers, as ingest's do; else the journal finds each record's device itself).
    func append(_ journal: Journal, _ records: [SensorRecord], withSlots: Bool = false) throws {
        let slots = records.compactMap { journal.admit($0.device) }
        #expect(slots.count == records.count)
        try journal.append([Journal.Batch(id: nil, records: records, slots: withSlots ? slots : nil)])
    }

    @Test(arguments: [false, true])
    func eachDeviceEndsAtTheLastChunkHoldingItsRecords(withSlots: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try open(directory)
        func append(_ journal: Journal, _ records: [SensorRecord]) throws {
            try self.append(journal, records, withSlots: withSlots)
        }
        let a = Records.drive(user: userA, count: 6)
        let b = Records.drive(user: userB, count: 4)
        // Batch 1 holds both devices: a chunk per shard, A's (shard 0) at 1 and B's (shard 2) at 2.
        try append(journal, [a[0], b[0], a[1], b[1]])
        #expect(journal.lastPositions(of: [device(userA), device(userB)]) == [1, 2])
        // Batch 2 is A's alone (3); batch 3 B's alone (4).
        try append(journal, [a[2], a[3]])
        try append(journal, [b[2], b[3]])
        #expect(journal.lastPositions(of: [device(userB), device(userA)]) == [4, 3], "in the order asked")
        #expect(journal.head == 4)
        // A device the journal does not know may have records anywhere: the head.
        #expect(journal.lastPositions(of: [device("stranger")]) == [4])
    }

    @Test func aReopenedJournalFindsThePositionsAgainInWhatConsumersHaveNotAcknowledged() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let a = Records.drive(user: userA, count: 4)
        let b = Records.drive(user: userB, count: 4)
        do {
            let journal = try open(directory)
            try append(journal, [a[0]]) // 1
            try append(journal, [b[0]]) // 2
            try append(journal, [a[1]]) // 3
            try append(journal, [a[2]]) // 4
            journal.close()
        }
        do {
            // Positions are not stored: read again from the chunks.
            let journal = try open(directory)
            #expect(journal.lastPositions(of: [device(userA), device(userB)]) == [4, 2])
            try append(journal, [b[1]]) // 5
            #expect(journal.lastPositions(of: [device(userA), device(userB)]) == [4, 5])
            // A consumer has everything up to 3: only the chunks after it are read at the next opening.
            journal.acknowledged(Requests.request(after: 3, acknowledged: 3, consumer: "detection"))
            journal.close()
        }
        do {
            let journal = try open(directory)
            #expect(journal.lastPositions(of: [device(userA), device(userB)]) == [4, 5])
            journal.acknowledged(Requests.request(after: 5, acknowledged: 4, consumer: "detection"))
            journal.close()
        }
        // B's records end at 5, A's at 4 (acknowledged, not read again): A ends no later than 4.
        let journal = try open(directory)
        #expect(journal.lastPositions(of: [device(userA), device(userB)]) == [4, 5])
        journal.close()
        // Reading at most 1 record: only the newest chunk (5, B's); A ends no later than 4, where reading began.
        let capped = try Journal(
            directory: directory.path, shards: Self.shards, positionScanRecords: 1,
            log: Records.quiet, clock: { 1_000_000 })
        #expect(capped.lastPositions(of: [device(userA), device(userB)]) == [4, 5])
        capped.close()
        let none = try Journal(
            directory: directory.path, shards: Self.shards, positionScanRecords: 0,
            log: Records.quiet, clock: { 1_000_000 })
        #expect(
            none.lastPositions(of: [device(userA), device(userB)]) == [5, 5],
            "nothing read: every device up to the head")
    }

    @Test func aDeviceAdmittedButNotYetStoredEndsNoLaterThanTheHead() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try open(directory)
        try append(journal, Records.drive(user: userA, count: 2))
        // Admitted (its batch is being validated), not stored: a device forgotten and back may have older chunks.
        #expect(journal.admit(device(userB)) != nil)
        #expect(journal.lastPositions(of: [device(userB)]) == [1])
    }
}
