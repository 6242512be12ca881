import Foundation
import RoadSaveModel
import Testing

@testable import DetectionEngine

/// A drive that stands longer than the stop delay (a jam, a queue, a level crossing) ends its trip; when it crawls on
/// from where it stood soon after, without a classifier, the next trip starts on the classifier's thresholds rather
/// than the stricter GPS-only ones, which city traffic at walking-to-cycling speeds never meets (issue 44, "drives
/// kept whole": Go!Track's stop-and-go car rides; `TripEngine.stoodDrive`).
@Suite struct DriveResumedTests {
    /// GPS only. Drives 5 minutes at 14 m/s and stands `standing` seconds (longer than the 240 s stop delay: the
    /// trip ends), then, after `silence` seconds without a fix that find the phone `away` metres on, crawls 60 s at
    /// 6 m/s (360 m: slower on average than `gpsOnlyStartSpeed`, never `gpsOnlyStartHeldSpeed`) and parks.
    static func script(driveFirst: Bool = true, standing: Int = 300, silence: Double = 0, away: Double = 0) -> Script {
        var s = Script()
        s.capabilities(activity: false, pedometer: false)
        s.heading = 90
        if driveFirst {
            s.accelerate(from: 2.5, to: 14, seconds: 8)
            s.drive(seconds: 300, speed: 14)
            s.accelerate(from: 14, to: 0, seconds: 6)
        }
        s.stand(seconds: standing)
        if silence > 0 {
            s.silence(seconds: silence)
            s.advance(metres: away)
            s.fix(speed: 0)
        }
        s.accelerate(from: 0, to: 6, seconds: 5)
        s.drive(seconds: 60, speed: 6)
        s.accelerate(from: 6, to: 0, seconds: 4)
        s.stand(seconds: 400)
        return s
    }

    @Test func aDriveThatStoodPastTheStopDelayAndCrawlsOnIsResumed() throws {
        let trips = Self.script().tripEnds
        #expect(trips.count == 2)
        #expect(trips.first?.endReason == .stopDelay)
        let crawl = try #require(trips.last)
        #expect(crawl.transportMode.isDriving)
        #expect(crawl.distanceMetres > 300, "the crawl from its first moving fix")
    }

    @Test func theSameCrawlOnItsOwnStartsNoTrip() {
        // Without the drive before it, the crawl is what a bicycle does: the GPS-only thresholds keep it out.
        #expect(Self.script(driveFirst: false).tripEnds.isEmpty)
    }

    @Test func aCrawlLongAfterTheStopIsNotResumed() {
        // Ten minutes standing: more than the stop delay after the trip's end, the driver may have gone anywhere.
        let trips = Self.script(standing: 600).tripEnds
        #expect(trips.count == 1)
    }

    @Test func theWindowEndsTwiceTheStopDelayAfterTheDrivesLastMovement() {
        // The drive's last moving fix is the one at 2.3 m/s as it stops; the crawl's first is its second fix
        // (2.4 m/s), 2 s after standing ends: 1 + 477 + 2 = 480 s later is inside, a second more is not.
        #expect(Self.script(standing: 477).tripEnds.count == 2)
        #expect(Self.script(standing: 478).tripEnds.count == 1)
    }

    @Test func aCrawlFromElsewhereIsNotResumed() {
        // Found 600 m from where the car stood: not the car creeping on in its queue.
        let trips = Self.script(standing: 300, silence: 60, away: 600).tripEnds
        #expect(trips.count == 1)
    }

    @Test func whereTheDriveStoodSurvivesACheckpoint() throws {
        // Stored while the car stands after its trip ended, restored by another detection: the crawl is resumed the
        // same.
        let s = Self.script()
        let whole = s.tripEnds
        let cut = try #require(whole.first?.endDate) + 280
        var first = Harness()
        first.feed(s.records.filter { $0.t <= cut })
        #expect(first.tripEnds.count == 1, "stored after the first trip ended")
        let stored = try JSONEncoder().encode(first.session)
        var second = Harness()
        second.session = try JSONDecoder().decode(DeviceSession.self, from: stored)
        second.run(s.records.filter { $0.t > cut })
        #expect(second.tripEnds == [try #require(whole.last)])
    }
}
