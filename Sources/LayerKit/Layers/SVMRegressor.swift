import Foundation

/// ai.onnx.ml `SVMRegressor` on a `[N, C]` input (or `[C]`): with support
/// vectors, `y = Σ coefficients[i] · K(x, sv[i]) + rho` (scikit-learn's
/// SVR, NuSVR and OneClassSVM; a one-class model gives the sign, ±1);
/// without, the linear `y = x · coefficients + rho`. The output is `[N,
/// 1]`. Sums in Double, as libsvm's (see `SVMKernel`).
///
/// CPU only: a few hundred support vectors against rows a few features
/// wide is less work than a GPU dispatch costs.
public final class SVMRegressor: Layer {
    public let layerName = "SVMRegressor"
    public let features: Int
    let kernel: SVMKernel
    /// `[vectors, features]`; empty for the linear form.
    let supportVectors: [Float]
    let coefficients: [Float]
    let rho: Float
    let isOneClass: Bool

    /// Throws `invalidParameter` unless `supportVectors` is `n_supports`
    /// rows of `features` with one coefficient each (or, with no support
    /// vectors, `features` coefficients), and rho is one value.
    init(kernel: SVMKernel, supportVectors: [Float], vectors: Int, coefficients: [Float], rho: [Float], isOneClass: Bool,
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
        let output = outputs[0].dataPointer
        supportVectors.withUnsafeBufferPointer { vectors in
            for row in 0..<rows {
                let x = UnsafePointer(inputs[0].dataPointer + row * features)
                var sum = 0.0
                if let base = vectors.baseAddress {
                    for (i, c) in coefficients.enumerated() { sum += Double(c) * kernel(x, base + i * features, count: features) }
                } else {
                    for k in 0..<features { sum += Double(x[k]) * Double(coefficients[k]) }
                }
                sum += Double(rho)
                output[row] = isOneClass ? (sum > 0 ? 1 : -1) : Float(sum)
            }
        }
    }
}
