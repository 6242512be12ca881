// The Go!Track files on small inline samples (run everywhere): local UTC-3 times written as UTC, positions only (no
// speed, accuracy, activity or steps invented), one device per phone with its car and bus rides in time order, rides
// uploaded twice or with a restarted clock left out, rows that cannot be read named by file and line.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("Go!Track parsing")
struct GoTrackParsingTests {
    static let tracks = """
        id,"id_android","speed","time","distance","rating","rating_bus","rating_weather","car_or_bus","linha"
        1,0,19.2,0.138,2.652,3,0,0,1,""
        2,0,30.8,0.171,5.29,3,0,0,2,"051 - ATALAIA CENTRO "
        3,7,13.5,0.067,0.918,3,0,0,1,"carro"
        4,7,13.5,0.067,0.918,3,0,0,1,"carro"
        5,7,19.7,0.389,7.7,3,0,0,1,""
        6,7,19.7,0.389,7.7,3,0,0,3,""
        """

    /// Phone 0: a car ride in the evening, a bus ride the morning before (listed second, ridden first). Phone 7: track 4
    /// is track 3 uploaded again, track 5 restarts its clock at track 3's start; track 3 repeats one row.
    static let points = """
        latitude,longitude,track_id,time
        -10.9393,-37.0627,1,2014-09-13 19:24:32
        -10.9390,-37.0620,1,2014-09-13 19:24:37
        -10.9380,-37.0610,1,2014-09-13 19:24:42
        -10.9100,-37.0500,2,2014-09-13 07:10:00
        -10.9110,-37.0510,2,2014-09-13 07:10:20
        -10.9000,-37.0480,3,2014-11-28 12:11:09
        -10.9001,-37.0481,3,2014-11-28 12:11:14
        -10.9001,-37.0481,3,2014-11-28 12:11:14
        -10.9000,-37.0480,4,2014-11-28 12:11:09
        -10.9001,-37.0481,4,2014-11-28 12:11:14
        -10.9002,-37.0482,5,2014-11-28 12:11:09
        -10.9003,-37.0483,5,2014-11-28 12:11:20
        -91,-37.0483,5,2014-11-28 12:11:30
        -10.9003,-37.0483,9,2014-11-28 12:11:40
        -10.9003,-37.0483,5,28/11/2014 12:11
        -10.9003,-37.0483,6,2014-11-28 13:00:00
        """

    static func contents() throws -> GoTrackConverter.Contents {
        try GoTrackConverter.parse(tracks: Self.tracks, points: Self.points)
    }

    @Test func localTimesAreUTCMinusThree() throws {
        let contents = try Self.contents()
        let first = try #require(contents.tracks.first?.points.first)
        #expect(first.t == RecordingTime.seconds(from: "2014-09-13T22:24:32Z"))
        #expect(GoTrackConverter.utcOffset == -3 * 3600)
    }

    @Test func badRowsAreNamedByFileAndLine() throws {
        let contents = try Self.contents()
        #expect(contents.tracks.map(\.id) == [1, 2, 3, 4, 5])
        #expect(
            contents.skipped.lines() == [
                #"go_track_tracks.csv line 7: car_or_bus "3" is neither 1 (car) nor 2 (bus)"#,
                #"go_track_trackspoints.csv line 14: latitude "-91" is not -90…90"#,
                #"go_track_trackspoints.csv line 15: track_id "9" is not a track of go_track_tracks.csv"#,
                #"go_track_trackspoints.csv line 16: time "28/11/2014 12:11" is not a local time YYYY-MM-DD HH:MM:SS"#,
                #"go_track_trackspoints.csv line 17: track_id "6" is not a track of go_track_tracks.csv"#,
            ])
        #expect(contents.tracks[2].points.count == 2 && contents.tracks[2].repeatedPoints == 1)
    }

    @Test func ridesUploadedTwiceOrWithARestartedClockAreLeftOut() throws {
        let contents = try Self.contents()
        let status = GoTrackConverter.statuses(contents.tracks)
        #expect(status == [1: .kept, 2: .kept, 3: .kept, 4: .duplicate(of: 3), 5: .overlaps(3)])
        let legs = GoTrackConverter.legsCSV(contents).split(separator: "\n").map(String.init)
        #expect(
            legs == [
                "user,mode,start_ts,end_ts,track_id,fixes,duration_s,line,status",
                "gotrack-0,car,1410647072.000,1410647082.000,1,3,10,,kept",
                "gotrack-0,bus,1410603000.000,1410603020.000,2,2,20,051 - ATALAIA CENTRO,kept",
                "gotrack-7,car,1417187469.000,1417187474.000,3,2,5,carro,kept",
                "gotrack-7,car,1417187469.000,1417187474.000,4,2,5,carro,duplicate of 3",
                "gotrack-7,car,1417187469.000,1417187480.000,5,2,11,,overlaps 3",
            ])
        let phone = try #require(GoTrackConverter.recordings(of: contents).last)
        #expect(phone.user == "gotrack-7" && phone.count(of: .location) == 2)
        #expect(
            phone.report.notes.contains { $0.hasPrefix("track 4 left out: every point (2) identical to track 3's") })
        #expect(phone.report.notes.contains { $0.hasPrefix("track 5 left out: its 2 points from 2014-11-28 12:11:09") })
        #expect(phone.report.notes.contains { $0.hasPrefix("track 3: 1 point row identical to the row before") })
    }

    @Test func aPhoneIsOneGPSOnlyDeviceWithItsRidesInTimeOrder() throws {
        let recordings = GoTrackConverter.recordings(of: try Self.contents(), app: "app-1")
        #expect(recordings.map(\.user) == ["gotrack-0", "gotrack-7"])
        let phone = recordings[0]
        let objects = checkRecords(phone.lines, app: "app-1", user: "gotrack-0")
        #expect(objects[0]["activityAvailable"] as? Bool == false && objects[0]["pedometerAvailable"] as? Bool == false)
        #expect(records(objects, kind: "activity").isEmpty && records(objects, kind: "steps").isEmpty)
        let locations = records(objects, kind: "location")
        // The bus ride of the morning, then the car ride of the evening.
        #expect(locations.compactMap { double($0, "lat") } == [-10.91, -10.911, -10.9393, -10.939, -10.938])
        #expect(locations.allSatisfy { $0["speed"] == nil && $0["hacc"] == nil && $0["course"] == nil })
        #expect(phone.label == "bus and car")
        #expect(phone.report.derived.contains { $0.contains("no speed, accuracy or course") })
        #expect(phone.report.derived.contains { $0.contains("UTC-3") })
    }
}
