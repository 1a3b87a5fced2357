import Foundation
import Testing
@testable import LayerKit

/// Running the dense layers' backward passes and checking them against
/// float64 references written in the tests.
enum DenseGradientTest {
    /// The step of a CPU forward pass of `layer` on `inputs` with a seeded
    /// output gradient in [-1, 1] (fp16-rounded with `half`), every input's
    /// gradient and the `roles` asked for.
    static func step(_ layer: Layer, _ inputs: [Tensor], seed: UInt64, roles: Set<String>, half: Bool = false,
                     needs: [Bool]? = nil) throws -> GradientStep {
        let outputs = try OpLayerTest.cpu(layer, inputs)
        let gradient = try OpLayerTest.tensor(outputs[0].shape, seed: seed, in: -1...1, half: half)
        return GradientStep(inputs: inputs, outputs: outputs, outputGradients: [gradient],
                            needsInputGradients: needs ?? inputs.map { _ in true }, parameterRoles: roles)
    }

    /// The worst error max|Δ| / max(1, max|expected|).
    static func relativeError(_ actual: Tensor, _ expected: [Double]) -> Double {
        let scale = max(1, expected.map(abs).max() ?? 0)
        return zip(actual.values, expected).map { abs(Double($0) - $1) }.max().map { $0 / scale } ?? 0
    }

    /// Expects `actual` of `shape` within `tolerance` of `expected` by `error`; returns the error.
    @discardableResult
    static func expect(_ actual: Tensor?, _ expected: [Double], shape: [Int], tolerance: Double = 1e-5, _ what: String,
                       sourceLocation: SourceLocation = #_sourceLocation) -> Double {
        guard let actual else {
            Issue.record(Comment(rawValue: "\(what): no gradient"), sourceLocation: sourceLocation)
            return .infinity
        }
        #expect(actual.shape == shape, "\(what): shape", sourceLocation: sourceLocation)
        guard actual.count == expected.count else { return .infinity }
        let error = relativeError(actual, expected)
        #expect(error <= tolerance, "\(what): error \(error) > \(tolerance)", sourceLocation: sourceLocation)
        return error
    }

    /// Expects the GPU gradient within the parity rule of the CPU one:
    /// |gpu - cpu| <= 1e-3 * max(1, |cpu|) element by element.
    static func expectParity(_ gpu: Tensor?, _ cpu: Tensor?, _ what: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        guard let gpu, let cpu, gpu.shape == cpu.shape else {
            Issue.record(Comment(rawValue: "\(what): missing or misshapen gradient"), sourceLocation: sourceLocation)
            return
        }
        let worst = zip(gpu.values, cpu.values).map { abs($0 - $1) / max(1, abs($1)) }.max() ?? 0
        #expect(worst <= 1e-3, "\(what): GPU against CPU \(worst) > 1e-3", sourceLocation: sourceLocation)
    }
}
