import Foundation

/// ai.onnx.ml `Imputer` on a `[N, C]` (or `[C]`) input: every element equal
/// to the replaced value (NaN matches NaN, the default of scikit-learn's
/// SimpleImputer) becomes the imputed value of its feature (one value for
/// every feature, or one each). Integer inputs compare as the floats
/// LayerKit gives them. CPU only, as `Binarizer` (why there).
public final class Imputer: Layer {
    public let layerName = "Imputer"
    public let features: Int
    let imputed: [Float]
    let replaced: Float

    /// Throws `invalidParameter` unless there are 1 or `features` imputed values.
    public init(imputed: [Float], replaced: Float, features: Int) throws {
        guard imputed.count == 1 || imputed.count == features else {
            throw LayerKitError.invalidParameter("Imputer: \(imputed.count) imputed values for \(features) feature(s); "
                                                 + "expected 1 or \(features)")
        }
        (self.imputed, self.replaced, self.features) = (imputed, replaced, features)
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        _ = try LinearModelRows.rows(inputShapes, features: features, layer: layerName)
        return inputShapes
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let (x, y) = (inputs[0].dataPointer, outputs[0].dataPointer)
        for i in 0..<inputs[0].count {
            let matches = replaced.isNaN ? x[i].isNaN : x[i] == replaced
            y[i] = matches ? imputed[imputed.count == 1 ? 0 : i % features] : x[i]
        }
    }
}
