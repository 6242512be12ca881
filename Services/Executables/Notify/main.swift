// The notify service as an executable of its own, for containers: the same as `roadsave notify`.
import Foundation
import ServiceCommands

exit(NotifyCommand.run(Array(CommandLine.arguments.dropFirst())))
