import Testing
@testable import LayerKit

struct TensorTests {
    @Test func emptyTensorsAreFine() throws {
        let empty = try Tensor(shape: [0], values: [])
        #expect(empty.count == 0)
        #expect(try Tensor(shape: [2, 0, 3]).count == 0)
        #expect(throws: LayerKitError.self) { try Tensor(shape: [2], values: [1]) }
        #expect(throws: LayerKitError.self) { try Tensor(shape: [-1, 2]) }
        #expect(throws: LayerKitError.self) { try Tensor(shape: [1 << 40, 1 << 30]) }
    }
}
