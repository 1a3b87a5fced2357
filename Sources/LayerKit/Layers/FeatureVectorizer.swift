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
        let width = dimensions.reduce(0, +)
        let rows = outputs[0].shape[0]
        let y = outputs[0].dataPointer
        var offset = 0
        for (input, d) in zip(inputs, dimensions) {
            let columns = input.shape.count == 2 ? input.shape[1] : 1
            for row in 0..<rows {
                for k in 0..<d { y[row * width + offset + k] = k < columns ? input.dataPointer[row * columns + k] : 0 }
            }
            offset += d
        }
    }
}
