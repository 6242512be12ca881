// The ingest service as an executable of its own, for containers: the same as `roadsave ingest`.
import Foundation
import ServiceCommands

exit(IngestCommand.run(Array(CommandLine.arguments.dropFirst())))
