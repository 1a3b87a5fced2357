import Foundation
import Testing
@testable import LayerKit

struct ReshapeLayerTests {
    /// (input, output) shapes: flatten [N, C, H, W] -> [N, C*H*W] and back,
    /// channel counts 1, 3, 5, 6, 8, 1x1 images, rank changes both ways.
    static let cases: [([Int], [Int])] = [
        ([2, 3, 4, 5], [2, 60]), ([2, 60], [2, 3, 4, 5]), ([2, 5, 3, 3], [2, 45]), ([2, 45], [2, 5, 3, 3]),
        ([2, 6, 1, 1], [2, 6]), ([2, 8, 2, 3], [2, 6, 8]), ([1, 1, 6, 5], [1, 5, 6]), ([2, 3, 5], [5, 2, 3]),
        ([2, 6, 3, 3], [2, 3, 6, 3]), ([7], [1, 7, 1, 1]),
    ]

    @Test func cpuCopiesTheElementsInOrder() throws {
        for (k, (from, to)) in Self.cases.enumerated() {
            let x = try OpLayerTest.tensor(from, seed: UInt64(k))
            let layer = try ReshapeLayer(outputShape: to, name: "Flatten")
            let y = try OpLayerTest.cpu(layer, [x])[0]
            #expect(y.shape == to)
            OpLayerTest.expectClose(y, x.values.map(Double.init), tolerance: 0, "\(from) -> \(to)")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuCopiesTheElementsInOrder() throws {
        for (k, (from, to)) in Self.cases.enumerated() {
            let x = try OpLayerTest.tensor(from, seed: UInt64(k), half: true)
            let y = try OpLayerTest.gpu(ReshapeLayer(outputShape: to), [x])[0]
            OpLayerTest.expectClose(y, x.values.map(Double.init), tolerance: 0, "\(from) -> \(to)")
        }
    }

    @Test func aDifferentElementCountThrows() throws {
        let layer = try ReshapeLayer(outputShape: [2, 7])
        #expect(throws: LayerKitError.shapeMismatch("Reshape: cannot reshape 2x3x2 (12 elements) to 2x7")) {
            try layer.outputShapes(forInputShapes: [[2, 3, 2]])
        }
        #expect(throws: LayerKitError.self) { try ReshapeLayer(outputShape: [-1, 4]) }
    }
}
