import Foundation
import Testing
@testable import LayerKit

/// Running the structural layers' backward passes on either backend and
/// checking them against float64 references the tests compute.
enum ShapeGradientTest {
    /// The step of `layer` on `inputs`: the forward pass on the CPU, and a
    /// seeded dLoss/dOutput per output (rounded to fp16 when `half`), every
    /// input needing its gradient.
    static func step(_ layer: Layer, _ inputs: [Tensor], seed: UInt64, half: Bool = false) throws -> GradientStep {
        let outputs = try OpLayerTest.cpu(layer, inputs)
        let gradients = try outputs.enumerated().map { k, output in
            try OpLayerTest.tensor(output.shape, seed: seed &+ 1000 &+ UInt64(k), in: -2...2, half: half)
        }
        return GradientStep(inputs: inputs, outputs: outputs, outputGradients: gradients,
                            needsInputGradients: Array(repeating: true, count: inputs.count), parameterRoles: [])
    }

    /// Expects `actual` to be `expected` within max|Δ| / max(1, max|expected|)
    /// <= 1e-5; returns that error.
    @discardableResult
    static func expectGradient(_ actual: Tensor?, _ expected: [Double], shape: [Int], _ what: String,
                               sourceLocation: SourceLocation = #_sourceLocation) -> Double {
        guard let actual else {
            Issue.record(Comment(rawValue: "\(what): no gradient"), sourceLocation: sourceLocation)
            return .infinity
        }
        guard actual.shape == shape, actual.count == expected.count else {
            Issue.record(Comment(rawValue: "\(what): gradient \(actual.shape), expected \(shape)"),
                         sourceLocation: sourceLocation)
            return .infinity
        }
        var worst = 0.0, scale = 1.0
        for i in 0..<actual.count {
            worst = max(worst, abs(Double(actual[i]) - expected[i]))
            scale = max(scale, abs(expected[i]))
        }
        let error = worst / scale
        #expect(error <= 1e-5, "\(what): max|Δ| / max(1, max|g|) = \(error)", sourceLocation: sourceLocation)
        return error
    }

    /// Expects the GPU's gradients within |gpu - cpu| <= 1e-3 * max(1, |cpu|),
    /// element by element; returns the worst ratio of error to allowance.
    @discardableResult
    static func expectParity(_ gpu: [Tensor?], _ cpu: [Tensor?], _ what: String,
                             sourceLocation: SourceLocation = #_sourceLocation) -> Double {
        var worst = 0.0
        #expect(gpu.count == cpu.count, "\(what): \(gpu.count) GPU gradients, \(cpu.count) CPU ones",
                sourceLocation: sourceLocation)
        for (k, (g, c)) in zip(gpu, cpu).enumerated() {
            guard let g, let c else {
                #expect((g == nil) == (c == nil), "\(what): gradient \(k) on one backend only", sourceLocation: sourceLocation)
                continue
            }
            guard g.shape == c.shape else {
                Issue.record(Comment(rawValue: "\(what): gradient \(k) is \(g.shape) on the GPU, \(c.shape) on the CPU"),
                             sourceLocation: sourceLocation)
                continue
            }
            for i in 0..<c.count {
                worst = max(worst, abs(Double(g[i]) - Double(c[i])) / (1e-3 * max(1, abs(Double(c[i])))))
            }
        }
        #expect(worst <= 1, "\(what): GPU vs CPU error \(worst) x the parity allowance", sourceLocation: sourceLocation)
        return worst
    }

    /// Expects two runs' gradients to hold the same bits.
    static func expectSameBits(_ a: [Tensor?], _ b: [Tensor?], _ what: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        let same = a.count == b.count && zip(a, b).allSatisfy { x, y in
            guard let x, let y else { return x == nil && y == nil }
            return x.shape == y.shape && zip(x.values, y.values).allSatisfy { sameFloat($0, $1) }
        }
        #expect(same, "\(what): two GPU runs gave different bits", sourceLocation: sourceLocation)
    }

    /// The flat row-major index in `shape` of `position` (of a rank at
    /// least `shape`'s, right-aligned), reading extent-1 axes at 0: where a
    /// broadcast operand's element for an output position is.
    static func broadcastIndex(_ position: [Int], in shape: [Int]) -> Int {
        let aligned = Array(position.suffix(shape.count))
        var index = 0
        for (p, extent) in zip(aligned, shape) { index = index * extent + (extent == 1 ? 0 : p) }
        return index
    }
}

extension ShapeGradientTest {
    /// `x` rounded to the nearest fp16 value, in float64.
    static func half(_ x: Double) -> Double { Double(Float(Float16(Float(x)))) }

    /// The largest |a - cpu| / max(1, |cpu|) over the elements.
    static func worstError(_ a: [Double], _ cpu: Tensor) -> Double {
        zip(a, cpu.values).reduce(0) { max($0, abs($1.0 - Double($1.1)) / max(1, abs(Double($1.1)))) }
    }

    /// Expects a backward pass that stores intermediate results on the GPU
    /// (a product before its sum) within the issue's rule through more than
    /// one layer: the GPU's worst error against the CPU (relative to
    /// max(1, |cpu|)) at most max(1e-3, 2 x the fp16 twin's), the twin
    /// being the same steps in float64 with every intermediate and result
    /// rounded to fp16 (`twin`, one array per gradient). Returns both errors.
    @discardableResult
    static func expectWithinTwin(_ gpu: [Tensor?], _ cpu: [Tensor?], twin: [[Double]?], _ what: String,
                                 sourceLocation: SourceLocation = #_sourceLocation) -> (gpu: Double, twin: Double) {
        var gpuError = 0.0, twinError = 0.0
        for k in cpu.indices {
            guard let c = cpu[k], let g = gpu[k], let t = twin[k] else { continue }
            gpuError = max(gpuError, worstError(g.values.map(Double.init), c))
            twinError = max(twinError, worstError(t, c))
        }
        #expect(gpuError <= max(1e-3, 2 * twinError),
                "\(what): GPU error \(gpuError) > max(1e-3, 2 x the fp16 twin's \(twinError))", sourceLocation: sourceLocation)
        return (gpuError, twinError)
    }
}
