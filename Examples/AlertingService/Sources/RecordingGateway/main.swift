// A minimal gateway: the records of an NDJSON recording to sensor-ingest, every one kept until acknowledged.
//
//     recording-gateway RECORDS.ndjson [--endpoint tcp://127.0.0.1:5550] [--key gateway.key --server-key ingest.key.pub]
import Foundation
import RoadSaveClient

func option(_ name: String) -> String? {
    CommandLine.arguments.firstIndex(of: name).flatMap { CommandLine.arguments.dropFirst($0 + 1).first }
}

guard CommandLine.arguments.count > 1, let text = try? String(contentsOfFile: CommandLine.arguments[1], encoding: .utf8)
else {
    print("usage: recording-gateway RECORDS.ndjson [--endpoint URL] [--key FILE --server-key FILE]")
    exit(2)
}
var configuration = RoadSaveGateway.Configuration()
if let endpoint = option("--endpoint") { configuration.endpoints = [endpoint] }
if let key = option("--key"), let serverKey = option("--server-key") {
    configuration.keys = RoadSaveKeys(secretKeyFile: key, serverPublicKeyFile: serverKey)
}
do {
    let gateway = try RoadSaveGateway(configuration)
    var receipts: [RoadSaveGateway.Receipt] = []
    var records: [SensorRecord] = []
    for (number, line) in text.split(separator: "\n").enumerated() {
        guard !line.allSatisfy(\.isWhitespace) else { continue }
        do {
            records.append(try SensorRecord(json: line)) // checked as sensor-ingest will check it
        } catch {
            print("line \(number + 1): \(error.field): \(error.reason) (not sent)")
            continue
        }
        if records.count == 500 {
            receipts += try await gateway.send(records) // suspends while 8 batches await acknowledgement
            records = []
        }
    }
    receipts += try await gateway.send(records)
    receipts += try await gateway.finish() // every acknowledgement, then "the stream is over"
    for rejection in receipts.flatMap(\.rejections) {
        print("record \(rejection.number ?? 0): \(rejection.field): \(rejection.reason) (\(rejection.kind))")
    }
    print("acknowledged \(receipts.map(\.accepted).reduce(0, +)) of \(receipts.map(\.records).reduce(0, +))")
} catch {
    print("recording-gateway: \(error)")
    exit(1)
}
