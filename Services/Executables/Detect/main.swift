// The detect service as an executable of its own, for containers: the same as `roadsave detect`.
import Foundation
import ServiceCommands

exit(DetectCommand.run(Array(CommandLine.arguments.dropFirst())))
