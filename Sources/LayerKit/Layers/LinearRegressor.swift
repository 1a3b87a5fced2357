import Foundation

/// ai.onnx.ml `LinearRegressor`: `Y = X · Wᵀ + b` for a `[N, C]` input (or
/// `[C]`, one row), `W` the `[targets, C]` coefficients and `b` the
/// intercepts (none: zeros); the output is `[N, targets]` (post_transform
/// NONE). Sums in Double with the parameters as the file gives them, so a
/// float64 input (`predict(float64:rows:)`) is computed in double. CPU
/// only: a scikit-learn model's few features are not worth a GPU dispatch.
public final class LinearRegressor: Layer, Float64Regressor {
    public let layerName = "LinearRegressor"
    public let targets: Int
    public let features: Int
    /// `[targets, features]`, row-major.
    let coefficients: [Double]
    let intercepts: [Double]

    /// Throws `invalidParameter` unless there are `targets × features`
    /// coefficients and no or `targets` intercepts.
    public init(coefficients: [Double], intercepts: [Double], targets: Int, features: Int) throws {
        guard targets >= 1, features >= 1, coefficients.count == targets * features else {
            throw LayerKitError.invalidParameter(
                "LinearRegressor: \(coefficients.count) coefficients for \(targets) target(s) of \(features) feature(s); "
                + "expected targets × features = \(max(0, targets) * features)")
        }
        guard intercepts.isEmpty || intercepts.count == targets else {
            throw LayerKitError.invalidParameter("LinearRegressor: \(intercepts.count) intercepts for \(targets) target(s)")
        }
        (self.coefficients, self.targets, self.features) = (coefficients, targets, features)
        self.intercepts = intercepts.isEmpty ? [Double](repeating: 0, count: targets) : intercepts
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        let rows = try LinearModelRows.rows(inputShapes, features: features, layer: layerName)
        return [[rows, targets]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let rows = try LinearModelRows.rows([inputs[0].shape], features: features, layer: layerName)
        LinearModelRows.scores(inputs[0].dataPointer, rows: rows, features: features, coefficients: coefficients,
                               intercepts: intercepts, into: outputs[0].dataPointer)
    }

    func predict(float64 x: [Double], rows: Int) -> [Double]? {
        var y = [Double](repeating: 0, count: rows * targets)
        x.withUnsafeBufferPointer { x in
            y.withUnsafeMutableBufferPointer { y in
                guard let input = x.baseAddress, let output = y.baseAddress else { return }
                LinearModelRows.scores(input, rows: rows, features: features, coefficients: coefficients,
                                       intercepts: intercepts, into: output)
            }
        }
        return y
    }
}

/// What the linear ai.onnx.ml layers share: the input's rows and `X · Wᵀ + b`.
enum LinearModelRows {
    /// N of a `[N, features]` input (1 for `[features]`).
    static func rows(_ shapes: [[Int]], features: Int, layer: String) throws -> Int {
        guard shapes.count == 1 else { throw LayerKitError.shapeMismatch("\(layer) takes one input, got \(shapes.count)") }
        let shape = shapes[0]
        guard (shape.count == 1 || shape.count == 2), shape.last == features else {
            throw LayerKitError.shapeMismatch("\(layer) takes [N, \(features)] features, got \(Tensor.describe(shape))")
        }
        return shape.count == 1 ? 1 : shape[0]
    }

    /// Writes `rows × outputs` scores of the rows at `input`, accumulated
    /// in Double (a few features: exactness costs nothing) and given in the
    /// input's type.
    static func scores<X: BinaryFloatingPoint, W: BinaryFloatingPoint>(
        _ input: UnsafePointer<X>, rows: Int, features: Int, coefficients: [W], intercepts: [W],
        into output: UnsafeMutablePointer<X>
    ) {
        let outputs = intercepts.count
        for row in 0..<rows {
            let x = input + row * features
            for j in 0..<outputs {
                var sum = Double(intercepts[j])
                for k in 0..<features { sum += Double(x[k]) * Double(coefficients[j * features + k]) }
                output[row * outputs + j] = X(sum)
            }
        }
    }
}
