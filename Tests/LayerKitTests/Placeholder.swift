import Testing
@testable import LayerKit
