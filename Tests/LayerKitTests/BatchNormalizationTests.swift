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
        let layer = try BatchNormalization(scale: vector(scale), bias: vector(bias), mean: vector(mean),
                                           variance: vector(variance), epsilon: 1e-3)
        return (layer, [scale, bias, mean, variance].map { $0.map(Double.init) })
    }

    static func vector(_ values: [Float]) throws -> Tensor { try Tensor(shape: [values.count], values: values) }

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
        let (one, two, three) = (try Self.vector([1]), try Self.vector([1, 1]), try Self.vector([1, 1, 1]))
        #expect(throws: LayerKitError.invalidWeights(
            "BatchNormalization: mean has 2 values (shape 2), scale has 3; all four need one per channel")) {
            try BatchNormalization(scale: three, bias: three, mean: two, variance: three)
        }
        #expect(throws: LayerKitError.invalidWeights(
            "BatchNormalization: variance + epsilon of channel 1 is -0.5, must be positive")) {
            try BatchNormalization(scale: two, bias: two, mean: two, variance: Self.vector([1, -0.5]), epsilon: 0)
        }
        let empty = try Self.vector([])
        #expect(throws: LayerKitError.self) { try BatchNormalization(scale: empty, bias: empty, mean: empty, variance: empty) }
        #expect(throws: LayerKitError.self) { try BatchNormalization(scale: one, bias: one, mean: one, variance: one, epsilon: -1) }
        let layer = try BatchNormalization(scale: Self.vector([1, 2]), bias: two, mean: two, variance: two)
        #expect(throws: LayerKitError.shapeMismatch("BatchNormalization: input 1x3x2x2 has 3 channels, the parameters 2")) {
            try layer.outputShapes(forInputShapes: [[1, 3, 2, 2]])
        }
        #expect(throws: LayerKitError.self) { try layer.outputShapes(forInputShapes: [[2]]) }
    }
}
