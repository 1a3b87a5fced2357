import Foundation

/// ai.onnx.ml `Normalizer`: each row of a `[N, C]` (or `[C]`) input divided
/// by its largest value (MAX, signed, as onnxruntime does), the sum of its
/// absolute values (L1) or its Euclidean length (L2). A row whose divisor
/// is 0 is copied unchanged. scikit-learn's Normalizer, and the L1 step
/// skl2onnx adds after multiclass classifiers, export as one.
public final class Normalizer: Layer {
    public enum Norm: String, Sendable { case max = "MAX", l1 = "L1", l2 = "L2" }

    public let layerName = "Normalizer"
    public let norm: Norm

    public init(_ norm: Norm) { self.norm = norm }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        guard inputShapes.count == 1, inputShapes[0].count == 1 || inputShapes[0].count == 2 else {
            throw LayerKitError.shapeMismatch("Normalizer takes one [N, C] input, got \(inputShapes.map(Tensor.describe))")
        }
        return inputShapes
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = inputs[0].shape
        let columns = shape.last ?? 0
        guard columns > 0 else { return }
        let rows = inputs[0].count / columns
        let (x, y) = (inputs[0].dataPointer, outputs[0].dataPointer)
        for row in 0..<rows {
            let a = x + row * columns, b = y + row * columns
            var divisor: Float
            switch norm {
            case .max:
                divisor = -Float.greatestFiniteMagnitude
                for i in 0..<columns { divisor = max(divisor, a[i]) }
            case .l1:
                divisor = 0
                for i in 0..<columns { divisor += abs(a[i]) }
            case .l2:
                divisor = 0
                for i in 0..<columns { divisor += a[i] * a[i] }
                if divisor != 0 {
                    // onnxruntime's form: sign(x) * sqrt(x² / sum).
                    for i in 0..<columns { b[i] = (a[i] < 0 ? -1 : 1) * (a[i] * a[i] / divisor).squareRoot() }
                    continue
                }
            }
            for i in 0..<columns { b[i] = divisor != 0 ? a[i] / divisor : a[i] }
        }
    }
}
