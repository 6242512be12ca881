import Foundation
import Recordings
import Replay
import Report
import ServiceCommands
import Simulator

/// `roadsave`: one executable, a subcommand per job (PROTOCOL §6).
@main
struct RoadSaveCommand {
    static let usage = """
        Usage: roadsave COMMAND [options]

        Commands:
          replay FILE     run the detection engines over recorded records (NDJSON or MessagePack) and print
                          the events (NDJSON)
          simulate        write realistic record streams (NDJSON or MessagePack) for any number of devices,
                          from a seed
          convert         convert a recording of a public dataset (TMD, CBS, enviroCar, ...) into records
          report FILE     draw what the engines found in a recording: one HTML page (per device a map of the
                          trips, crashes and dismissed candidates, a timeline, tables) and GeoJSON

        Services (ZeroMQ):
          ingest          sensor-ingest: validate gateways' records, journal them (fsync'd), then acknowledge
          detect          detection: read the journals, the engines per device, control commands, platform calls
          notify          notifier: store events and deliver them (ZeroMQ PUB with catch-up, webhooks, NDJSON)
          up              all three services as supervised processes on one machine (embedded platform)

        Clients:
          send FILE       act as a device gateway: send records (NDJSON) to sensor-ingest, wait for the acks
          tail            subscribe to the notifier and print events (NDJSON) as they come
          ctl COMMAND     send a control command (configure, startMonitoring, ...) to detection

        Security:
          keygen NAME     write a CurveZMQ key pair (NAME.key, mode 0600, and NAME.key.pub)

        Run 'roadsave COMMAND --help' for a command's options.
        """

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = arguments.first else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        }
        let rest = Array(arguments.dropFirst())
        let status: Int32
        switch command {
        case "replay": status = await ReplayCommand.run(rest)
        case "simulate": status = SimulateCommand.run(rest)
        case "convert": status = ConvertCommand.run(rest)
        case "report": status = await ReportCommand.run(rest)
        case "ingest": status = IngestCommand.run(rest)
        case "detect": status = DetectCommand.run(rest)
        case "notify": status = NotifyCommand.run(rest)
        case "up": status = UpCommand.run(rest)
        case "send": status = await SendCommand.run(rest)
        case "tail": status = await TailCommand.run(rest)
        case "ctl": status = ControlCommand.run(rest)
        case "keygen": status = KeygenCommand.run(rest)
        case "-h", "--help", "help":
            print(usage)
            status = 0
        default:
            FileHandle.standardError.write(Data("roadsave: unknown command \"\(command)\"\n\n\(usage)\n".utf8))
            status = 2
        }
        exit(status)
    }
}
