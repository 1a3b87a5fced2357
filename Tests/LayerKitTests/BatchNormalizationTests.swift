import Foundation
import Testing
@testable import LayerKit

struct BatchNormalizationTests {
    /// A layer with seeded parameters for `channels`, and the parameters.
    static func layer(channels: Int, seed: UInt64) throws -> (BatchNormalization, [[Double]]) {
        let scale = seededUniform(count: channels, in: -2...2, seed: seed)
        let bias = seededUniform(count: channels, in: -1...1, seed: seed + 1)
        let mean = seededUniform(count: channels, in: -1...1, seed: seed + 2)
        let variance = seededUniform(count: channels, in: 0.1...3, seed: seed + 3)
        let layer = try BatchNormalization(scale: scale, bias: bias, mean: mean, variance: variance, epsilon: 1e-3)
        return (layer, [scale, bias, mean, variance].map { $0.map(Double.init) })
    }

    /// scale * (x - mean) / sqrt(variance + epsilon) + bias along axis 1.
    static func reference(_ x: Tensor, _ p: [[Double]], epsilon: Double = 1e-3) -> [Double] {
        let plane = x.shape[2...].reduce(1, *)
        return (0..<x.count).map { i in
            let c = (i / plane) % x.shape[1]
            return p[0][c] * (Double(x[i]) - p[2][c]) / (p[3][c] + epsilon).squareRoot() + p[1][c]
        }
    }

    static let shapes: [[Int]] = [[2, 1, 3, 5], [2, 3, 4, 4], [2, 5, 1, 1], [2, 6, 7, 3], [1, 8, 2, 9], [2, 5], [3, 6, 5]]

    @Test func cpuMatchesTheReference() throws {
        for (k, shape) in (Self.shapes + [[2, 3, 2, 2, 3]]).enumerated() {
            let (layer, parameters) = try Self.layer(channels: shape[1], seed: UInt64(10 * k))
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k))
            OpLayerTest.expectClose(try OpLayerTest.cpu(layer, [x])[0], Self.reference(x, parameters),
                                    tolerance: OpLayerTest.cpuTolerance, "\(shape)")
        }
    }

    @Test(.enabled(if: TestGPU.isEnabled))
    func gpuMatchesTheReference() throws {
        for (k, shape) in Self.shapes.enumerated() {
            let (layer, parameters) = try Self.layer(channels: shape[1], seed: UInt64(10 * k))
            let x = try OpLayerTest.tensor(shape, seed: UInt64(k), half: true)
            OpLayerTest.expectClose(try OpLayerTest.gpu(layer, [x])[0], Self.reference(x, parameters),
                                    tolerance: OpLayerTest.gpuTolerance, "\(shape)")
        }
    }

    @Test func badParametersAndShapesThrow() throws {
        #expect(throws: LayerKitError.invalidWeights(
            "BatchNormalization: mean has 2 values, scale has 3; all four need one per channel")) {
            try BatchNormalization(scale: [1, 1, 1], bias: [0, 0, 0], mean: [0, 0], variance: [1, 1, 1])
        }
        #expect(throws: LayerKitError.invalidWeights(
            "BatchNormalization: variance + epsilon of channel 1 is -0.5, must be positive")) {
            try BatchNormalization(scale: [1, 1], bias: [0, 0], mean: [0, 0], variance: [1, -0.5], epsilon: 0)
        }
        #expect(throws: LayerKitError.self) { try BatchNormalization(scale: [], bias: [], mean: [], variance: []) }
        let layer = try BatchNormalization(scale: [1, 2], bias: [0, 0], mean: [0, 0], variance: [1, 1])
        #expect(throws: LayerKitError.shapeMismatch("BatchNormalization: input 1x3x2x2 has 3 channels, the parameters 2")) {
            try layer.outputShapes(forInputShapes: [[1, 3, 2, 2]])
        }
        #expect(throws: LayerKitError.self) { try layer.outputShapes(forInputShapes: [[2]]) }
    }
}
