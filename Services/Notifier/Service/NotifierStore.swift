import Foundation
import Logging
import RecordCodecs
import RoadSaveModel
import Storage
import Wire

/// The notifier's durable store, `<data-dir>/notifier.sqlite`: every event taken from detection (deduplicated by
/// eventID, across restarts), one outbox per sink, the position reached in each of detection's outbox feeds, and
/// each sink's own state (the NDJSON file's recorded size). Owned by the service's reactor thread.
///
/// The rules it keeps:
/// - Events and the feed position they came with are stored in one transaction: detection is told to let go of
///   its copies (`acknowledged`) only up to a position committed here.
/// - Storing an event adds one outbox row per configured sink; a row is deleted only when its sink took the event
///   (published, answered 2xx or refused for good by a webhook receiver, written and fsync'd to the NDJSON file).
/// - An event whose eventID is already stored is dropped: never stored, queued or delivered twice.
/// - Retention: an event with no outbox row left is deleted once older than the retention age (the catch-up window).
///   A position is never reused (AUTOINCREMENT), so catch-up can tell an expired position from a future one.
///
/// Look inside with `sqlite3 <data-dir>/notifier.sqlite` (e.g. `SELECT sink, count(*) FROM outbox GROUP BY sink`).
public final class NotifierStore {
    public static let fileName = "notifier.sqlite"

    static let schema = """
        -- Every event taken from detection, in the order stored. position: the event's place in the notifier's
        -- own stream (the third frame on the PUB socket, what catch-up asks after); never reused.
        CREATE TABLE IF NOT EXISTS events(
            position  INTEGER PRIMARY KEY AUTOINCREMENT,
            event_id  TEXT NOT NULL UNIQUE,  -- the event's eventID: a second copy is dropped
            name      TEXT NOT NULL,         -- an event name (RoadSaveEvent.names)
            app       TEXT NOT NULL,
            user      TEXT NOT NULL,
            topic     TEXT NOT NULL,         -- <event>.<app>.<user>, for catch-up's prefix
            stored_at REAL NOT NULL,         -- Unix seconds, for retention
            event     BLOB NOT NULL,         -- MessagePack, as detection sent it (EventBody.encode)
            json      TEXT NOT NULL          -- the current format, for people and catch-up
        );
        CREATE INDEX IF NOT EXISTS events_stored_at ON events(stored_at);
        -- What each sink has still to take: a row per (sink, event), deleted when the sink took it.
        CREATE TABLE IF NOT EXISTS outbox(
            sink     TEXT NOT NULL,          -- pub, ndjson:<path>, webhook:<host>/<hash of the URL>
            position INTEGER NOT NULL,       -- events.position
            PRIMARY KEY(sink, position)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS outbox_position ON outbox(position);
        -- The position reached in each of detection's outbox feeds (by feed ID: a new detection store is a new feed).
        CREATE TABLE IF NOT EXISTS upstream(
            feed     TEXT PRIMARY KEY,
            position INTEGER NOT NULL
        );
        -- A sink's own durable state, e.g. the NDJSON file's size after the last recorded write.
        CREATE TABLE IF NOT EXISTS sink_state(
            sink  TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """

    public let path: String
    /// The sinks that get an outbox row for each new event.
    public let sinks: [String]
    private let database: SQLiteDatabase

    /// Opens (creating) the store. Outbox rows of sinks no longer configured are deleted (logged): they would
    /// otherwise keep their events from expiring for ever. A sink configured for the first time gets the events
    /// stored from now on.
    public init(path: String, sinks: [String], log: Log? = nil) throws {
        self.path = path
        self.sinks = sinks
        database = try SQLiteDatabase(path: path, synchronous: .full)
        try database.execute(Self.schema)
        var orphaned: [(String, Int64)] = []
        try database.statement("SELECT sink, count(*) FROM outbox GROUP BY sink").query { row in
            let sink = row.text(0)
            if !sinks.contains(sink) { orphaned.append((sink, row.integer(1))) }
        }
        for (sink, count) in orphaned {
            log?.warning("sink no longer configured: its outbox is dropped", ["sink": sink, "events": String(count)])
            try database.transaction {
                try database.statement("DELETE FROM outbox WHERE sink = ?").run(sink)
                try database.statement("DELETE FROM sink_state WHERE sink = ?").run(sink)
            }
        }
    }

    public func close() {
        database.close()
    }

    /// Runs `body` (calls of this store) in one transaction.
    public func inOneTransaction<T>(_ body: () throws -> T) throws -> T {
        try database.transaction(body)
    }

    // MARK: From detection

    /// The position reached in detection's feed `feed` (0 for a feed never read).
    public func upstreamPosition(feed: String) throws -> UInt64 {
        try database.statement("SELECT position FROM upstream WHERE feed = ?").integer(feed).map { UInt64($0) } ?? 0
    }

    /// Stores `events` (with their MessagePack bodies) and the feed's new position in one transaction; returns the
    /// events that were new (those already stored are dropped).
    @discardableResult
    public func store(
        _ events: [(event: RoadSaveEvent, body: [UInt8])], feed: String, position: UInt64,
        now: Double = Date().timeIntervalSince1970
    ) throws -> [StoredEvent] {
        try database.transaction {
            var stored: [StoredEvent] = []
            // Looked up first rather than INSERT OR IGNORE, which would use up a position: positions stay contiguous,
            // so a subscriber that sees a jump knows it missed something.
            let exists = try database.statement("SELECT 1 FROM events WHERE event_id = ?")
            let insert = try database.statement(
                """
                INSERT INTO events(event_id, name, app, user, topic, stored_at, event, json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let outbox = try database.statement("INSERT INTO outbox(sink, position) VALUES (?, ?)")
            for (event, body) in events {
                let eventID = event.eventID
                guard try exists.integer(eventID) == nil else { continue }
                let topic = StoredEvent.topic(of: event)
                let json = event.json(.current)
                try insert.run(eventID, event.name, event.device.app, event.device.user, topic, now, body, json)
                let position = UInt64(database.lastInsertRowID)
                for sink in sinks { try outbox.run(sink, position) }
                stored.append(StoredEvent(position: position, event: event, topic: topic, json: json))
            }
            try database.statement(
                """
                INSERT INTO upstream(feed, position) VALUES (?, ?) ON CONFLICT(feed) DO UPDATE SET position = excluded.position
                """
            ).run(feed, position)
            return stored
        }
    }

    // MARK: Outboxes

    /// At most `limit` of the sink's outbox entries after `position`, oldest first.
    public func outbox(sink: String, after position: UInt64, limit: Int) throws -> [StoredEvent] {
        var entries: [StoredEvent] = []
        try database.statement(
            """
            SELECT e.position, e.event, e.topic, e.json FROM outbox o JOIN events e ON e.position = o.position
            WHERE o.sink = ? AND o.position > ? ORDER BY o.position LIMIT ?
            """
        ).query(sink, position, limit) { row in
            entries.append(try Self.storedEvent(row))
        }
        return entries
    }

    /// Deletes the sink's outbox rows of `positions` (it took those events) and, in the same transaction, sets its
    /// state when given.
    public func complete(sink: String, positions: [UInt64], state: String? = nil) throws {
        try database.transaction {
            let delete = try database.statement("DELETE FROM outbox WHERE sink = ? AND position = ?")
            for position in positions { try delete.run(sink, position) }
            if let state {
                try database.statement(
                    """
                    INSERT INTO sink_state(sink, value) VALUES (?, ?) ON CONFLICT(sink) DO UPDATE SET value = excluded.value
                    """
                ).run(sink, state)
            }
        }
    }

    /// The sink's recorded state (nil: none yet).
    public func sinkState(_ sink: String) throws -> String? {
        var value: String?
        try database.statement("SELECT value FROM sink_state WHERE sink = ?").query(sink) { row in value = row.text(0) }
        return value
    }

    /// Entries in the sink's outbox.
    public func outboxCount(sink: String) throws -> Int {
        Int(try database.statement("SELECT count(*) FROM outbox WHERE sink = ?").integer(sink) ?? 0)
    }

    // MARK: Retention

    /// Deletes the events stored before `cutoff` (Unix seconds) that no sink still has to take; returns how many.
    @discardableResult
    public func expire(storedBefore cutoff: Double) throws -> Int {
        try database.transaction {
            try database.statement(
                """
                DELETE FROM events WHERE stored_at < ?
                AND NOT EXISTS (SELECT 1 FROM outbox WHERE outbox.position = events.position)
                """
            ).run(cutoff)
            return database.changes
        }
    }

    // MARK: Catch-up

    /// The newest position ever given (0 for an empty store), whether or not its event is still kept.
    public func head() throws -> UInt64 {
        UInt64(try database.statement("SELECT seq FROM sqlite_sequence WHERE name = 'events'").integer() ?? 0)
    }

    /// The oldest position still kept (nil when none is).
    public func oldestPosition() throws -> UInt64? {
        try database.statement("SELECT min(position) FROM events").integer().map { UInt64($0) }
    }

    /// The position of the event with this eventID, if it is kept.
    public func position(ofEventID eventID: String) throws -> UInt64? {
        try database.statement("SELECT position FROM events WHERE event_id = ?").integer(eventID).map { UInt64($0) }
    }

    /// The position of the event with this eventID, if it is kept and its application is one of `applications`
    /// (any when nil): for a subscriber key limited to applications, another application's event is as unknown as one
    /// never stored.
    public func position(ofEventID eventID: String, applications: Set<String>?) throws -> UInt64? {
        guard let applications else { return try position(ofEventID: eventID) }
        var found: UInt64?
        try database.statement("SELECT position, app FROM events WHERE event_id = ?").query(eventID) { row in
            if applications.contains(row.text(1)) { found = row.unsigned(0) }
        }
        return found
    }

    /// At most `limit` events after `position` whose topic starts with `prefix` (every event when nil), oldest first.
    public func events(after position: UInt64, limit: Int, prefix: String? = nil) throws -> [StoredEvent] {
        var events: [StoredEvent] = []
        let append = { (row: SQLiteRow) throws in events.append(try Self.storedEvent(row)) }
        if let prefix, !prefix.isEmpty {
            // substr compares bytes exactly (LIKE would treat _ and % as patterns and ignore case).
            try database.statement(
                """
                SELECT position, event, topic, json FROM events
                WHERE position > ? AND substr(topic, 1, length(?)) = ? ORDER BY position LIMIT ?
                """
            ).query(position, prefix, prefix, limit, row: append)
        } else {
            try database.statement(
                """
                SELECT position, event, topic, json FROM events WHERE position > ? ORDER BY position LIMIT ?
                """
            ).query(position, limit, row: append)
        }
        return events
    }

    private static func storedEvent(_ row: SQLiteRow) throws -> StoredEvent {
        StoredEvent(
            position: row.unsigned(0), event: try EventBody.decode(row.blob(1)), topic: row.text(2),
            json: row.text(3))
    }
}
