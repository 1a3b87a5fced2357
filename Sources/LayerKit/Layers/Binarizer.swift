import Foundation

/// ai.onnx.ml `Binarizer`: `1` where an element is greater than `threshold`,
/// else `0` (NaN included), any shape. scikit-learn's Binarizer exports as
/// one. CPU only: one comparison an element, next to the other ai.onnx.ml
/// steps that run there.
public final class Binarizer: Layer {
    public let layerName = "Binarizer"
    public let threshold: Float

    public init(threshold: Float) { self.threshold = threshold }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        guard inputShapes.count == 1 else { throw LayerKitError.shapeMismatch("Binarizer takes one input, got \(inputShapes.count)") }
        return inputShapes
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let (x, y) = (inputs[0].dataPointer, outputs[0].dataPointer)
        for i in 0..<inputs[0].count { y[i] = x[i] > threshold ? 1 : 0 }
    }
}
