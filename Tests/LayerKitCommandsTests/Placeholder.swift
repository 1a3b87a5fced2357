import Testing
@testable import LayerKitCommands
