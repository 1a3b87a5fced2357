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

    @Test func theSubscriptReachesBothEnds() throws {
        let tensor = try Tensor(shape: [2, 3], values: [0, 1, 2, 3, 4, 5])
        #expect(tensor[0] == 0 && tensor[5] == 5)
        tensor[5] = -1
        #expect(tensor.values.last == -1)
    }

    #if DEBUG
    /// The subscript is checked by `assert`, so only a debug build of
    /// LayerKitCore traps; the trap is observed from a child process (an
    /// exit test). A release `swift test -c release` skips this.
    @Test func aDebugBuildTrapsOnAnIndexPastTheEnd() async {
        await #expect(processExitsWith: .failure) {
            let tensor = try Tensor(shape: [2, 3])
            _ = tensor[6]
        }
        await #expect(processExitsWith: .failure) {
            let tensor = try Tensor(shape: [2, 3])
            tensor[-1] = 0
        }
    }
    #endif
}
