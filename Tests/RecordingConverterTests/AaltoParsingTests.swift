// The Aalto TrafficSense files on small inline samples (run everywhere): local EEST times written as UTC, Google's
// activity names mapped as for every Android converter, rows that cannot be read named by file and line, the hand-kept
// log's quoted stops and multi-line comments.

import Foundation
import Recordings
import RoadSaveModel
import Testing

@Suite("Aalto TrafficSense parsing")
struct AaltoParsingTests {
    static let header =
        #""time","device_id","lat","lng","accuracy","activity_1","activity_1_conf","activity_2","activity_2_conf","activity_3","activity_3_conf""#

    static let samples = """
        \(header)
        "2016-08-26 09:00:00.206",2,60.186805,24.821049,33.6080017089844,"STILL",75,"IN_VEHICLE",5,"ON_BICYCLE",5
        "2016-08-26 09:00:05.428",5,60.192928,24.767222,5,"WALKING",62,"ON_BICYCLE",29,"RUNNING",6
        "2016-08-26 09:00:15.5",2,60.1869,24.8211,12,"IN_VEHICLE",100,"UNKNOWN",0,"UNKNOWN",0
        "2016-08-26 09:00:25",2,60.1870,24.8212,1200,"ON_BICYCLE",40,"ON_FOOT",30,"RUNNING",30
        "2016-08-26 09:00:35.1",2,60.1871,24.8213,8,"TILTING",100,"UNKNOWN",0,"UNKNOWN",0
        "2016-08-26 09:00:45.1",2,60.1872,24.8214,8,"SWIMMING",80,"UNKNOWN",0,"UNKNOWN",0
        "2016-08-26 09:00:55.1",2,91,24.8214,8,"STILL",80,"UNKNOWN",0,"UNKNOWN",0
        "26.8.2016 09:01",2,60.1872,24.8214,8,"STILL",80,"UNKNOWN",0,"UNKNOWN",0
        "2016-08-26 09:01:05.1",2,60.1872,24.8214,8,"STILL",101,"UNKNOWN",0,"UNKNOWN",0
        "2016-08-26 09:01:15.1",2,60.1872
        "2016-08-26T09:01:25Z",2,60.1872,24.8214,8,"STILL",80,"UNKNOWN",0,"UNKNOWN",0
        """

    static let log = """
        device_id,st_entrance,st_entry_time,line_type,line_name,vehicle_dep_time,vehicle_dep_stop,vehicle_arr_time, vehicle_arr_stop,st_exit_location,st_exit_time ,comments
        1,Ruoholahti A,"2016-08-26 09:25:00",SUBWAY,V,"2016-08-26 09:31:00",Ruoholahti(M),"2016-08-26 09:35:00",Helsingin Yliopisto(M),"Kamppi C, (Freda)","2016-08-26 09:38:00","Walked on.
        Lunch at ""Thai Orchid"".
        Back at 13:13."
        2,,,CAR,,"2016-08-26 14:46:30","Konemiehentie 2, Espoo","2016-08-26 15:17:00","Tahkotie 1, 01530 Vantaa",,,
        2,,,FERRY,,"2016-08-26 15:21:00",Tahkotie,"2016-08-26 15:31:00",Vantaankoski,,,
        3,,,BUS,550,"2016-08-26 15:21:00",A,"2016-08-26 15:11:00",B,,,
        4,,,tram,9,"2016-08-26 09:39:00",Kampintori,"2016-08-26 09:45:00",Kaisaniemenkatu,,,
        """

    /// 2016-08-26 06:00:00 UTC: 09:00 in Helsinki on summer time.
    static let nineLocal = 1_472_191_200.0

    @Test func localSummerTimesAreWrittenAsUTC() throws {
        let (samples, _) = try AaltoConverter.parseSamples(Self.samples, file: "device_data.csv")
        #expect(samples.first?.t == Self.nineLocal + 0.206)
        #expect(samples[2].t == Self.nineLocal + 15.5)
        #expect(samples[3].t == Self.nineLocal + 25, "a time without a fraction")
        #expect(AaltoConverter.utcOffset == 3 * 3600)
        // A time that names its own zone is not the dataset's: adding EEST to it would count a zone twice.
        #expect(RecordingTime.seconds(fromLocal: "2016-08-26T09:01:25Z", utcOffset: AaltoConverter.utcOffset) == nil)
        #expect(
            RecordingTime.seconds(fromLocal: "2016-08-26 09:00:00", utcOffset: -3 * 3600) == Self.nineLocal + 6 * 3600)
    }

    @Test func badRowsAreNamedByFileAndLineAndSkipped() throws {
        let (samples, skipped) = try AaltoConverter.parseSamples(Self.samples, file: "device_data.csv")
        #expect(samples.count == 6)
        #expect(skipped.count == 5)
        let lines = skipped.lines()
        #expect(lines.count == 5)
        #expect(lines[0] == #"device_data.csv line 8: lat "91" is not a latitude -90…90"#)
        #expect(lines[1].hasPrefix(#"device_data.csv line 9: time "26.8.2016 09:01" is not a local time"#))
        #expect(lines[2].hasPrefix(#"device_data.csv line 10: activity_1 "STILL" with activity_1_conf "101""#))
        #expect(lines[3] == "device_data.csv line 11: 3 fields, the header has 11")
        #expect(lines[4].hasPrefix(#"device_data.csv line 12: time "2016-08-26T09:01:25Z""#))
    }

    @Test func theLogsQuotedStopsAndLongCommentsKeepTheirLines() throws {
        let (legs, skipped) = try AaltoConverter.parseLegs(Self.log, file: "manual_log.csv")
        #expect(legs.map(\.line) == [2, 5, 8])
        #expect(legs.map(\.mode) == ["metro", "car", "tram"])
        #expect(legs[0].start == Self.nineLocal + 31 * 60 && legs[0].end == Self.nineLocal + 35 * 60)
        #expect(legs[1].departureStop == "Konemiehentie 2, Espoo" && legs[1].arrivalStop == "Tahkotie 1, 01530 Vantaa")
        #expect(legs[1].user == "aalto-2")
        #expect(
            skipped.lines() == [
                "manual_log.csv line 6: line_type \"FERRY\" is not one of BUS, TRAM, SUBWAY, TRAIN, CAR",
                "manual_log.csv line 7: vehicle_arr_time 2016-08-26 15:11:00 is before vehicle_dep_time",
            ])
        let csv = AaltoConverter.legsCSV(legs).split(separator: "\n")
        #expect(csv.first == "user,mode,line_type,line_name,start_ts,end_ts,departure_stop,arrival_stop,log_line")
        #expect(
            csv[2]
                == #"aalto-2,car,CAR,,1472211990.000,1472213820.000,"Konemiehentie 2, Espoo","Tahkotie 1, 01530 Vantaa",5"#
        )
    }

    @Test func googlesMostProbableActivityIsMappedAsForEveryAndroidConverter() throws {
        var contents = AaltoConverter.Contents()
        (contents.samples, _) = try AaltoConverter.parseSamples(Self.samples, file: "device_data.csv")
        contents.models = [2: "Nexus 5X"]
        let recordings = AaltoConverter.recordings(of: contents, app: "app-1")
        #expect(recordings.map(\.user) == ["aalto-2", "aalto-5"])
        let phone = recordings[0]
        #expect(phone.label == "Nexus 5X")
        let objects = checkRecords(phone.lines, app: "app-1", user: "aalto-2")
        #expect(objects[0]["activityAvailable"] as? Bool == true && objects[0]["pedometerAvailable"] as? Bool == false)
        // One activity per row, from the first of the three: STILL 75, IN_VEHICLE 100, ON_BICYCLE 40, TILTING 100,
        // and SWIMMING, which Google does not define.
        let activities = records(objects, kind: "activity").map {
            "\($0["activity"] as? String ?? "") \($0["confidence"] as? String ?? "")"
        }
        #expect(activities == ["stationary high", "automotive high", "cycling low", "unknown high", "unknown high"])
        #expect(
            phone.report.notes.contains {
                $0.contains("activity names Google does not define") && $0.contains("SWIMMING")
            })
        #expect(GoogleActivityRecognition.activity(forName: "IN_VEHICLE") == .automotive)
        #expect(GoogleActivityRecognition.activity(forName: "ON_FOOT") == .walking)
        #expect(GoogleActivityRecognition.activity(forName: "SWIMMING") == nil)
        #expect(GoogleActivityRecognition.confidence(forPercent: 62) == .medium)
        // Each activity sorts before the fix it was stamped on.
        #expect(objects[1]["kind"] as? String == "activity" && objects[2]["kind"] as? String == "location")

        let locations = records(objects, kind: "location")
        #expect(locations.count == 5)
        #expect(locations.allSatisfy { $0["speed"] == nil && $0["course"] == nil }, "no speed is invented")
        #expect(locations.compactMap { double($0, "hacc") } == [33.6, 12, 1200, 8, 8])
        #expect(phone.report.notes.contains { $0.hasPrefix("1 of 5 fixes report an accuracy over 50 m") })
        #expect(phone.report.derived.contains { $0.contains("EEST (UTC+3") && $0.contains("2016-08-26T06:00:00.206Z") })
    }
}
