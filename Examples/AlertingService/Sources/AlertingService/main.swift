// The first crash-detection callback, server side: every crash RoadSave reports, with its confidence, and what
// followed it, as the brief's delegate receives them. Resumes after the last position it handled when given one.
//
//     alerting-service [--endpoint tcp://127.0.0.1:5554] [--catch-up-endpoint tcp://127.0.0.1:5555]
//                      [--key subscriber.key --server-key notify.key.pub] [--after POSITION]
import Foundation
import RoadSaveClient

final class CrashAlerts: RoadSaveDelegate {
    func tripDidStart(_ tripInfo: TripStartInfo) {}
    func tripDidEnd(_ tripInfo: TripInfo) {}

    func crashDetected(_ crash: CrashInfo) {
        // A test crash (raiseTestCrash) is never an emergency; an untrusted position is confirmed first.
        let place = crash.latitude.map { "\($0),\(crash.longitude ?? 0)" } ?? "unknown"
        say("crash \(crash.crashID) confidence \(crash.confidence.rawValue) at \(place) test \(crash.isTest)")
    }

    func crashDidFollowUp(_ followUp: CrashFollowUpInfo) {
        // deviceSilent first: nobody may answer the call back.
        say("follow-up \(followUp.crashID) \(followUp.outcome.rawValue)")
    }
}

/// One line on standard output, written at once (`print` would hold it in a buffer when the output is a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func option(_ name: String) -> String? {
    CommandLine.arguments.firstIndex(of: name).flatMap { CommandLine.arguments.dropFirst($0 + 1).first }
}

var configuration = RoadSaveSubscriber.Configuration(
    filter: RoadSaveSubscriber.Filter(events: [.crashDetected, .crashFollowUp]))
configuration.endpoint = option("--endpoint") ?? configuration.endpoint
configuration.catchUpEndpoint = option("--catch-up-endpoint") ?? configuration.catchUpEndpoint
if let key = option("--key"), let serverKey = option("--server-key") {
    configuration.keys = RoadSaveKeys(secretKeyFile: key, serverPublicKeyFile: serverKey)
}
do {
    let subscriber = try RoadSaveSubscriber(configuration)
    try await subscriber.run(after: option("--after").flatMap(UInt64.init), delegate: CrashAlerts()) { delivery in
        say("handled \(delivery.position)") // store it: --after resumes from here, nothing lost, nothing twice
    }
} catch {
    say("alerting-service: \(error)")
}
