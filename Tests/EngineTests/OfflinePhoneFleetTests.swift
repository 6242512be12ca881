import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// Issue 29, silence is not a stop: a phone that loses its connection mid-trip keeps recording and uploads its buffer
/// later, in order, while the other devices of its gateway go on. The gateway's watermark (or detection's clock, for
/// a gateway without one) does not end the silent phone's trip at its stop delay: only its own records may, and the
/// trip stays open for `tripOfflineGrace`. Its buffer arriving within the grace gives replay's events; after the
/// grace the trip has ended, `deviceSilent`, at its last movement.
@Suite struct OfflinePhoneFleetTests {
    static let settings = DetectionSettings()
    static let stream = "journal/0/gw-1"
    static let busy = FleetStreams.device("busy")
    static let phone = FleetStreams.device("phone")

    /// Both drive for an hour and park; the phone is offline (records kept, not sent) from minute 10 for `offline`
    /// seconds. Returns the records in the order the gateway receives them and in event-time order.
    static func morning(offline: Double) -> (arrival: [SensorRecord], byTime: [SensorRecord], offlineFrom: Double) {
        var busy = Script()
        busy.device = Self.busy
        busy.activity(.automotive, .high)
        busy.drive(seconds: 3600, speed: 12, turnEvery: 300)
        busy.stand(seconds: 400)
        var phone = Script()
        phone.device = Self.phone
        phone.t += 0.5
        phone.activity(.automotive, .high)
        phone.drive(seconds: 3600, speed: 13, turnEvery: 300)
        phone.stand(seconds: 400)
        let offlineFrom = Script.start + 600
        let byTime = (busy.records + phone.records).sorted { ($0.t, $0.device) < ($1.t, $1.device) }
        let upload = offlineFrom + offline
        let held = byTime.filter { $0.device == Self.phone && $0.t >= offlineFrom && $0.t < upload }
        var arrival = byTime.filter { !($0.device == Self.phone && $0.t >= offlineFrom && $0.t < upload) }
        let at = arrival.firstIndex { $0.t >= upload } ?? arrival.count
        arrival.insert(contentsOf: held, at: at)
        return (arrival, byTime, offlineFrom)
    }

    /// Detection over the records in arrival order, in batches of 50: with `watermarks`, each batch's header says
    /// nothing more than 10 s older than the newest record read is to come (as `roadsave send` does), and the end
    /// of the stream comes last; without, the clock alone. The shell's clock runs `pace` times as fast as the
    /// records' time (a tick every 0.1 s of it), and `idleAfter` seconds of it pass with nothing at the end.
    static func detect(
        _ records: [SensorRecord], watermarks: Bool, pace: Double = 20,
        idleAfter: Double = 0
    ) -> [RoadSaveEvent] {
        var fleet = DeviceFleet()
        var events = WatermarkTests.answer(
            fleet.settingsFetched(app: FleetStreams.app, .fetched(settings), now: 0), &fleet)
        var now = 0.0
        var newest = -Double.infinity
        for start in stride(from: 0, to: records.count, by: 50) {
            let batch = records[start..<min(start + 50, records.count)]
            for record in batch {
                newest = max(newest, record.t)
                events += WatermarkTests.answer(
                    fleet.receive(record, from: watermarks ? stream : nil, now: now), &fleet)
            }
            if watermarks { fleet.watermarkRead(stream: stream, watermark: newest - 10, now: now) }
            // 50 records of two devices at one a second: 25 s of record time.
            for _ in 0..<Int((25 / pace) / 0.1) {
                now += 0.1
                events += WatermarkTests.answer(fleet.tick(now: now), &fleet)
            }
        }
        if watermarks { fleet.watermarkRead(stream: stream, watermark: .infinity, now: now) }
        var idle = 0.0
        repeat {
            now += 1
            idle += 1
            events += WatermarkTests.answer(fleet.tick(now: now), &fleet)
        } while idle < idleAfter
        return events
    }

    static func phoneTrips(_ events: [RoadSaveEvent]) -> [TripInfo] {
        events.compactMap { event in
            guard event.device == phone, case .tripDidEnd(let info) = event.body else { return nil }
            return info
        }
    }

    static func sorted(_ events: [RoadSaveEvent]) -> [RoadSaveEvent] { events.sorted { $0.eventID < $1.eventID } }

    @Test(arguments: [300.0, 900.0, 1500.0])
    func aBufferUploadedWithinTheGraceGivesReplaysEventsByWatermark(offline: Double) {
        let (arrival, byTime, _) = Self.morning(offline: offline)
        let expected = WatermarkTests.replay(byTime)
        #expect(Self.phoneTrips(expected).count == 1, "the premise: one trip of the phone")
        let events = Self.detect(arrival, watermarks: true)
        #expect(Self.sorted(events) == Self.sorted(expected), "offline \(offline) s, with watermarks")
    }

    /// The clock's rule, for a gateway without watermarks, on a clock that runs 20 times as fast as the records'
    /// time (the buffer's silence then lasts `offline` / 20 s of it): the same. And at the end, the devices silent on
    /// the clock for longer than the grace: their trips ended (they parked, their own records showed the stop).
    @Test(arguments: [300.0, 900.0])
    func aBufferUploadedWithinTheGraceGivesReplaysEventsByTheClock(offline: Double) {
        let (arrival, byTime, _) = Self.morning(offline: offline)
        let expected = WatermarkTests.replay(byTime)
        let events = Self.detect(arrival, watermarks: false, idleAfter: 10)
        #expect(Self.sorted(events) == Self.sorted(expected), "offline \(offline) s, by the clock")
    }

    /// Offline for longer than the grace: the trip ends `deviceSilent` at the last movement before the silence,
    /// when the watermark passes the grace (not at the stop delay); the buffer then starts a trip of its own.
    @Test func aBufferUploadedAfterTheGraceFindsTheTripEndedDeviceSilent() throws {
        let offline = Self.settings.tripOfflineGrace + 300
        let (arrival, _, offlineFrom) = Self.morning(offline: offline)
        var fleet = DeviceFleet()
        _ = fleet.settingsFetched(app: FleetStreams.app, .fetched(Self.settings), now: 0)
        var newest = -Double.infinity
        var endedAtWatermark: Double?
        var ends: [TripInfo] = []
        for record in arrival {
            newest = max(newest, record.t)
            var events = WatermarkTests.answer(fleet.receive(record, from: Self.stream, now: 0), &fleet)
            fleet.watermarkRead(stream: Self.stream, watermark: newest - 10, now: 0)
            events += WatermarkTests.answer(fleet.tick(now: 0), &fleet)
            for info in Self.phoneTrips(events) {
                if ends.isEmpty { endedAtWatermark = newest - 10 }
                ends.append(info)
            }
        }
        let first = try #require(ends.first)
        #expect(first.endReason == .deviceSilent)
        #expect(
            first.endDate < offlineFrom && first.endDate > offlineFrom - 2, "at its last movement before the silence")
        let decided = try #require(endedAtWatermark)
        #expect(decided > first.endDate + Self.settings.tripOfflineGrace, "decided when the watermark passed the grace")
        #expect(decided < first.endDate + Self.settings.tripOfflineGrace + 30)
        #expect(fleet.statistics.late == 0, "the buffer's records are applied, in order")
    }
}
