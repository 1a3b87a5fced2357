import Foundation
import Testing
@testable import LayerKit

/// GroupNormalization, MeanVarianceNormalization and LpNormalization on
/// values worked out by hand.
@Suite struct StatisticNormalizationTests {
    /// The layer's CPU output on `x` of `shape`.
    static func run(_ layer: Layer, _ shape: [Int], _ x: [Float]) throws -> [Float] {
        let output = try Tensor(shape: shape)
        try layer.evaluate(inputs: [Tensor(shape: shape, values: x)], outputs: [output])
        return output.values
    }

    static func close(_ a: [Float], _ b: [Double]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { abs(Double($0) - $1) <= 1e-6 * max(1, abs($1)) }
    }

    @Test func groupNormalizationNormalizesEachGroupOfChannels() throws {
        // Groups {c0, c1} = [1, 3, 5, 7] (mean 4, variance 5) and {c2, c3} = [0, 0, 2, -2] (mean 0, variance 2).
        let layer = try GroupNormalization(groups: 2, scale: [1, 2, 1, 1], bias: [0, 0, 1, 0], epsilon: 0)
        let y = try Self.run(layer, [1, 4, 2], [1, 3, 5, 7, 0, 0, 2, -2])
        let (r5, r2) = (5.0.squareRoot(), 2.0.squareRoot())
        #expect(Self.close(y, [-3 / r5, -1 / r5, 2 / r5, 6 / r5, 1, 1, r2, -r2]), "\(y)")
        #expect(throws: LayerKitError.self) { try GroupNormalization(groups: 3, scale: [1, 1, 1, 1], bias: [0, 0, 0, 0]) }
    }

    @Test func meanVarianceNormalizationDividesByTheStandardDeviation() throws {
        // Rows [1, 3] (mean 2, deviation 1) and [0, 4] (mean 2, deviation 2).
        let y = try Self.run(MeanVarianceNormalization(axes: [1]), [2, 2], [1, 3, 0, 4])
        #expect(Self.close(y, [-1, 1, -1, 1]), "\(y)")
        // Over both axes: [1, 3, 0, 4] has mean 2 and variance 2.5.
        let all = try Self.run(MeanVarianceNormalization(axes: [0, 1]), [2, 2], [1, 3, 0, 4])
        let d = 2.5.squareRoot()
        #expect(Self.close(all, [-1 / d, 1 / d, -2 / d, 2 / d]), "\(all)")
        #expect(throws: LayerKitError.self) { try MeanVarianceNormalization(axes: [1, 1]) }
    }

    @Test func lpNormalizationDividesByTheNorm() throws {
        let x: [Float] = [3, 4, 1, -1]
        #expect(Self.close(try Self.run(LpNormalization(axis: 1, p: 2), [2, 2], x), [0.6, 0.8, 0.5.squareRoot(), -0.5.squareRoot()]))
        #expect(Self.close(try Self.run(LpNormalization(axis: 1, p: 1), [2, 2], x), [3.0 / 7, 4.0 / 7, 0.5, -0.5]))
        // Along axis 0: columns [3, 1] and [4, -1].
        #expect(Self.close(try Self.run(LpNormalization(axis: 0, p: 1), [2, 2], x), [0.75, 0.8, 0.25, -0.2]))
        // A slice of zeros stays zeros, not 0 / 0.
        #expect(try Self.run(LpNormalization(axis: 1, p: 2), [2, 2], [0, 0, 3, 4]) == [0, 0, 0.6, 0.8])
        #expect(throws: LayerKitError.self) { try LpNormalization(axis: 0, p: 3) }
    }
}
