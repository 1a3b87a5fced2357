import Foundation

/// ai.onnx.ml `FeatureVectorizer`: its inputs (`[N, C_i]`, or `[N]` as one
/// column) side by side in `[N, Σ d_i]`, input i given `d_i` columns
/// (`inputdimensions`): its first `d_i` columns, zeros where it has fewer.
/// CPU only, as `Binarizer` (why there).
public final class FeatureVectorizer: Layer {
    public let layerName = "FeatureVectorizer"
    public let dimensions: [Int]

    /// Throws `invalidParameter` for a dimension out of 0...2^24.
    public init(dimensions: [Int]) throws {
        for d in dimensions where !(0...(1 << 24)).contains(d) {
            throw LayerKitError.invalidParameter("FeatureVectorizer: input dimension \(d) is not in 0...\(1 << 24)")
        }
        self.dimensions = dimensions
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        guard inputShapes.count == dimensions.count, let first = inputShapes.first?.first else {
            throw LayerKitError.shapeMismatch("FeatureVectorizer: \(inputShapes.count) inputs for \(dimensions.count) "
                                              + "inputdimensions")
        }
        for shape in inputShapes where shape.first != first || shape.count > 2 {
            throw LayerKitError.shapeMismatch("FeatureVectorizer takes [N, C] or [N] inputs of one N, got "
                                              + "\(inputShapes.map(Tensor.describe))")
        }
        return [[first, dimensions.reduce(0, +)]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let y = vectorized(inputs.map(\.values), shapes: inputs.map(\.shape), rows: outputs[0].shape[0])
        for (k, value) in y.enumerated() { outputs[0].dataPointer[k] = value }
    }

    /// The `rows` rows of `inputs` (of `shapes`) side by side, in their
    /// type (Float for the layer, Double for a float64 value,
    /// `TypedKernels.featureVectorizer`).
    func vectorized<T: BinaryFloatingPoint>(_ inputs: [[T]], shapes: [[Int]], rows: Int) -> [T] {
        let width = dimensions.reduce(0, +)
        var y = [T](repeating: 0, count: rows * width)
        var offset = 0
        for (input, (shape, d)) in zip(inputs, zip(shapes, dimensions)) {
            let columns = shape.count == 2 ? shape[1] : 1
            for row in 0..<rows {
                for k in 0..<min(d, columns) { y[row * width + offset + k] = input[row * columns + k] }
            }
            offset += d
        }
        return y
    }
}
