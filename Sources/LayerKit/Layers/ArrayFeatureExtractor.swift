import Foundation

/// ai.onnx.ml `ArrayFeatureExtractor`: the elements of the last axis of `X`
/// at the given indices, in their order (repeats allowed): `[..., C]` to
/// `[..., K]` (a `[C]` input gives `[1, K]`, as onnxruntime shapes it).
/// skl2onnx uses it to pick columns of a classifier's scores. CPU only, as
/// `Binarizer` (why there).
public final class ArrayFeatureExtractor: Layer {
    public let layerName = "ArrayFeatureExtractor"
    public let indices: [Int]

    /// Throws `invalidParameter` for no indices.
    public init(indices: [Int]) throws {
        guard !indices.isEmpty else { throw LayerKitError.invalidParameter("ArrayFeatureExtractor: no indices (input Y is empty)") }
        self.indices = indices
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        guard inputShapes.count == 1, let columns = inputShapes[0].last else {
            throw LayerKitError.shapeMismatch("ArrayFeatureExtractor takes one input of rank 1 or more")
        }
        for index in indices where !(0..<columns).contains(index) {
            throw LayerKitError.invalidParameter("ArrayFeatureExtractor: index \(index) is out of range for \(columns) feature(s)")
        }
        let shape = inputShapes[0]
        return [shape.count == 1 ? [1, indices.count] : shape.dropLast() + [indices.count]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let columns = inputs[0].shape.last ?? 1
        let rows = columns == 0 ? 0 : inputs[0].count / columns
        let (x, y) = (inputs[0].dataPointer, outputs[0].dataPointer)
        for row in 0..<rows {
            for (k, index) in indices.enumerated() { y[row * indices.count + k] = x[row * columns + index] }
        }
    }
}
