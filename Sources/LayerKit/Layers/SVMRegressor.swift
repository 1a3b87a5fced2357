import Foundation

/// ai.onnx.ml `SVMRegressor` on a `[N, C]` input (or `[C]`): with support
/// vectors, `y = Σ coefficients[i] · K(x, sv[i]) + rho` (scikit-learn's
/// SVR, NuSVR and OneClassSVM; a one-class model gives the sign, ±1);
/// without, the linear `y = x · coefficients + rho`. The output is `[N,
/// 1]`. Sums in Double, as libsvm's (see `SVMKernel`); a float64 input
/// (`predict(float64:rows:)`) is computed in double throughout.
///
/// CPU only: a few hundred support vectors against rows a few features
/// wide is less work than a GPU dispatch costs.
public final class SVMRegressor: Layer, Float64Regressor {
    public let layerName = "SVMRegressor"
    public let features: Int
    let kernel: SVMKernel
    /// `[vectors, features]`; empty for the linear form. The parameters
    /// as the file gives them (see `Float64Regressor`).
    let supportVectors: [Double]
    let coefficients: [Double]
    let rho: Double
    let isOneClass: Bool

    /// Throws `invalidParameter` unless `supportVectors` is `n_supports`
    /// rows of `features` with one coefficient each (or, with no support
    /// vectors, `features` coefficients), and rho is one value.
    init(kernel: SVMKernel, supportVectors: [Double], vectors: Int, coefficients: [Double], rho: [Double], isOneClass: Bool,
         features: Int) throws {
        if vectors > 0 {
            guard vectors <= supportVectors.count, supportVectors.count == vectors * features,
                  coefficients.count == vectors else {
                throw LayerKitError.invalidParameter(
                    "SVMRegressor: \(supportVectors.count) support vector values and \(coefficients.count) coefficients for "
                    + "n_supports \(vectors) of \(features) feature(s); expected \(features) values and one coefficient a vector")
            }
        } else {
            guard vectors == 0, supportVectors.isEmpty, coefficients.count == features else {
                throw LayerKitError.invalidParameter("SVMRegressor: n_supports \(vectors) with \(supportVectors.count) support "
                                                     + "vector values and \(coefficients.count) coefficients for \(features) feature(s)")
            }
        }
        guard rho.count == 1 else { throw LayerKitError.invalidParameter("SVMRegressor: rho has \(rho.count) values; expected 1") }
        (self.kernel, self.supportVectors, self.coefficients, self.rho, self.isOneClass, self.features) =
            (kernel, supportVectors, coefficients, rho[0], isOneClass, features)
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        [[try LinearModelRows.rows(inputShapes, features: features, layer: layerName), 1]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let rows = try LinearModelRows.rows([inputs[0].shape], features: features, layer: layerName)
        for row in 0..<rows { outputs[0].dataPointer[row] = Float(value(inputs[0].dataPointer + row * features)) }
    }

    func predict(float64 x: [Double], rows: Int) -> [Double]? {
        x.withUnsafeBufferPointer { x in
            guard let base = x.baseAddress else { return [] }
            return (0..<rows).map { value(base + $0 * features) }
        }
    }

    /// The output for the row at `x`, in Double.
    private func value<X: BinaryFloatingPoint>(_ x: UnsafePointer<X>) -> Double {
        var sum = 0.0
        supportVectors.withUnsafeBufferPointer { vectors in
            if let base = vectors.baseAddress {
                for (i, c) in coefficients.enumerated() { sum += c * kernel(x, base + i * features, count: features) }
            } else {
                for k in 0..<features { sum += Double(x[k]) * coefficients[k] }
            }
        }
        sum += rho
        return isOneClass ? (sum > 0 ? 1 : -1) : sum
    }
}
