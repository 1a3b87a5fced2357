import Foundation
import LayerKitCommands
exit(LayerKitCommands.main(Array(CommandLine.arguments.dropFirst())))
