import Foundation
import RecordCodecs
import RoadSaveModel
import Storage
import Testing

@testable import NotifierService

@Suite struct NotifierStoreTests {
    @Test func eventsAreStoredOnceAcrossReopenWithContiguousPositions() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let path = folder + "/notifier.sqlite"
        let first = Fixtures.journey("ana", 1)
        do {
            let store = try NotifierStore(path: path, sinks: ["pub"])
            let stored = try store.store(Fixtures.bodies(first + [first[0]]), feed: "feed-A", position: 4)
            #expect(stored.map(\.position) == [1, 2, 3])
            #expect(stored.map(\.event) == first)
            #expect(stored[1].topic == "crashDetected.app-1.ana")
            #expect(stored[1].json == first[1].json(.current))
            store.close()
        }
        let store = try NotifierStore(path: path, sinks: ["pub"])
        #expect(try store.upstreamPosition(feed: "feed-A") == 4)
        #expect(try store.upstreamPosition(feed: "feed-B") == 0)
        let second = Fixtures.journey("ben", 2)
        // Redelivered after a restart: the three known ones are dropped; positions go on without a hole.
        let stored = try store.store(Fixtures.bodies(first + second), feed: "feed-A", position: 10)
        #expect(stored.map(\.position) == [4, 5, 6])
        #expect(stored.map(\.event) == second)
        #expect(try store.head() == 6)
        #expect(try store.outboxCount(sink: "pub") == 6)
        #expect(try store.upstreamPosition(feed: "feed-A") == 10)
        #expect(try store.position(ofEventID: second[0].eventID) == 4)
    }

    @Test func eachSinkHasItsOwnOutbox() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let store = try NotifierStore(path: folder + "/notifier.sqlite", sinks: ["pub", "ndjson:/tmp/x"])
        let events = Fixtures.journey("ana", 1)
        try store.store(Fixtures.bodies(events), feed: "f", position: 3)
        #expect(try store.outboxCount(sink: "pub") == 3)
        #expect(try store.outboxCount(sink: "ndjson:/tmp/x") == 3)

        try store.complete(sink: "pub", positions: [1, 2])
        #expect(try store.outboxCount(sink: "pub") == 1)
        #expect(try store.outboxCount(sink: "ndjson:/tmp/x") == 3)
        #expect(try store.outbox(sink: "pub", after: 0, limit: 10).map(\.position) == [3])
        #expect(try store.outbox(sink: "ndjson:/tmp/x", after: 1, limit: 1).map(\.position) == [2])
        #expect(try store.outbox(sink: "ndjson:/tmp/x", after: 0, limit: 10).map(\.event) == events)

        // The state is written with the deletion.
        #expect(try store.sinkState("ndjson:/tmp/x") == nil)
        try store.complete(sink: "ndjson:/tmp/x", positions: [1, 2, 3], state: "1234")
        #expect(try store.sinkState("ndjson:/tmp/x") == "1234")
        #expect(try store.outboxCount(sink: "ndjson:/tmp/x") == 0)
    }

    @Test func outboxOfASinkNoLongerConfiguredIsDropped() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let path = folder + "/notifier.sqlite"
        do {
            let store = try NotifierStore(path: path, sinks: ["pub", "webhook:old"])
            try store.store(Fixtures.bodies(Fixtures.journey("ana", 1)), feed: "f", position: 3)
            store.close()
        }
        let store = try NotifierStore(path: path, sinks: ["pub", "webhook:new"])
        #expect(try store.outboxCount(sink: "webhook:old") == 0)
        #expect(try store.outboxCount(sink: "pub") == 3)
        // A newly configured sink gets the events stored from now on.
        #expect(try store.outboxCount(sink: "webhook:new") == 0)
        try store.store(Fixtures.bodies(Fixtures.journey("ben", 2)), feed: "f", position: 6)
        #expect(try store.outbox(sink: "webhook:new", after: 0, limit: 10).map(\.position) == [4, 5, 6])
    }

    @Test func retentionDeletesOnlyOldEventsNoSinkNeeds() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let store = try NotifierStore(path: folder + "/notifier.sqlite", sinks: ["pub"])
        try store.store(Fixtures.bodies(Fixtures.journey("ana", 1)), feed: "f", position: 3, now: 1000)
        try store.store(Fixtures.bodies(Fixtures.journey("ben", 2)), feed: "f", position: 6, now: 2000)
        try store.complete(sink: "pub", positions: [1, 2, 4])
        // 1 and 2: old and delivered. 3: old but still in the outbox. 4: delivered but young.
        #expect(try store.expire(storedBefore: 1500) == 2)
        #expect(try store.oldestPosition() == 3)
        #expect(try store.events(after: 0, limit: 10).map(\.position) == [3, 4, 5, 6])
        #expect(try store.head() == 6)
        try store.complete(sink: "pub", positions: [3, 5, 6])
        #expect(try store.expire(storedBefore: 3000) == 4)
        #expect(try store.oldestPosition() == nil)
        // Positions are never reused, even when every event is gone.
        #expect(try store.head() == 6)
        let stored = try store.store(Fixtures.bodies(Fixtures.journey("cai", 3)), feed: "f", position: 9)
        #expect(stored.map(\.position) == [7, 8, 9])
    }

    @Test func catchUpQueriesFilterByTopicPrefix() throws {
        let folder = Fixtures.folder()
        defer { Fixtures.remove(folder) }
        let store = try NotifierStore(path: folder + "/notifier.sqlite", sinks: [])
        try store.store(
            Fixtures.bodies(
                Fixtures.journey("ana", 1) + Fixtures.journey("ana", 1, app: "app-10")
                    + Fixtures.journey("ben", 2)), feed: "f", position: 9)
        #expect(try store.events(after: 0, limit: 100, prefix: "crashDetected.app-1.").map(\.position) == [2, 8])
        #expect(try store.events(after: 2, limit: 100, prefix: "crashDetected.app-1.").map(\.position) == [8])
        #expect(try store.events(after: 0, limit: 1, prefix: "trip").map(\.position) == [1])
        // Byte-exact: no LIKE patterns, no case folding.
        #expect(try store.events(after: 0, limit: 100, prefix: "crash_etected").isEmpty)
        #expect(try store.events(after: 0, limit: 100, prefix: "CRASHDETECTED").isEmpty)
    }
}
