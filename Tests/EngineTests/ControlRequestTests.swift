import DetectionEngine
import RecordCodecs
import RoadSaveModel
import Testing

@Suite struct ControlRequestTests {
    func parse(_ json: String) throws(ControlRequest.Invalid) -> ControlRequest {
        try ControlRequest(json: Array(json.utf8))
    }

    func message(_ json: String) -> String? {
        do {
            _ = try parse(json)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func everyCommandOfTheContractParses() throws {
        let configure = try parse(
            #"{"command":"configure","app":"a","user":"u","detectionMode":"crashOnly","shouldAutoDetectTrips":false}"#)
        #expect(configure.command == .configure && configure.user == "u")
        #expect(configure.detectionMode == .crashOnly && configure.shouldAutoDetectTrips == false)
        #expect(try parse(#"{"command":"setDetectionMode","app":"a","mode":"tripOnly"}"#).detectionMode == .tripOnly)
        #expect(try parse(#"{"command":"setAutoTripDetection","app":"a","user":"u","enabled":false}"#).enabled == false)
        let all = try parse(#"{"command":"raiseTestCrash","app":"a"}"#)
        #expect(all.user == nil, "no user: every device of the application")
        #expect(all.followUp == nil, "a test crash has no follow-up unless asked")
        #expect(try parse(#"{"command":"raiseTestCrash","app":"a","followUp":true}"#).followUp == true)
        #expect(
            message(#"{"command":"raiseTestCrash","app":"a","followUp":"yes"}"#) == "followUp: expected true or false")
        for command in ["startMonitoring", "stopMonitoring"] {
            #expect(try parse(#"{"command":"\#(command)","app":"a","user":"u"}"#).command.rawValue == command)
        }
    }

    @Test func badRequestsSayWhatIsWrong() {
        #expect(message("nope")?.hasPrefix("not JSON") == true)
        #expect(message("[]") == "expected a JSON object")
        #expect(message(#"{"app":"a"}"#) == "command: missing")
        #expect(message(#"{"command":"explode","app":"a"}"#)?.hasPrefix("command: unknown \"explode\"") == true)
        #expect(message(#"{"command":"configure"}"#) == "app: missing")
        #expect(message(#"{"command":"configure","app":"a","user":7}"#) == "user: expected a non-empty string")
        #expect(message(#"{"command":"setDetectionMode","app":"a"}"#)?.hasPrefix("mode: missing") == true)
        #expect(
            message(#"{"command":"setDetectionMode","app":"a","mode":"off"}"#)?.contains("unknown mode \"off\"") == true
        )
        #expect(message(#"{"command":"setAutoTripDetection","app":"a"}"#)?.hasPrefix("enabled: missing") == true)
    }

    @Test func repliesFollowTheContract() throws {
        let failure = try JSONParser.parse(
            ControlReply.failure(
                "notConfigured", "notConfigured: call configure first",
                device: DeviceID(app: "a", user: "u")))
        #expect(failure["ok"] == .bool(false))
        #expect(failure["error"] == .string("notConfigured"))
        #expect(failure["message"] == .string("notConfigured: call configure first"))
    }
}
