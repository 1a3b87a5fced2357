import Foundation

/// ai.onnx.ml `OneHotEncoder` with integer categories (`cats_int64s`): each
/// element becomes a row of `categories.count` values, 1 at its category's
/// position; an element of no category gives a row of zeros, or an error
/// when `zeros` is 0. The output has the input's shape plus that axis.
/// Float elements are truncated to integers first, as onnxruntime does.
/// CPU only, as `Binarizer` (why there).
public final class OneHotEncoder: Layer {
    public let layerName = "OneHotEncoder"
    public let categories: [Int64]
    public let allowsUnknown: Bool
    private let positions: [Int64: Int]

    /// Throws `invalidParameter` for no categories.
    public init(categories: [Int64], allowsUnknown: Bool) throws {
        guard !categories.isEmpty else { throw LayerKitError.invalidParameter("OneHotEncoder: no categories (cats_int64s)") }
        var positions: [Int64: Int] = [:]
        for (i, category) in categories.enumerated() where positions[category] == nil { positions[category] = i }
        (self.categories, self.allowsUnknown, self.positions) = (categories, allowsUnknown, positions)
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        guard inputShapes.count == 1 else { throw LayerKitError.shapeMismatch("OneHotEncoder takes one input") }
        return [inputShapes[0] + [categories.count]]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let (x, y) = (inputs[0].dataPointer, outputs[0].dataPointer)
        let width = categories.count
        for i in 0..<inputs[0].count {
            for j in 0..<width { y[i * width + j] = 0 }
            // Values past Int64 (and NaN) are of no category.
            let value = x[i].isFinite && abs(x[i]) < 9.2e18 ? Int64(x[i]) : nil
            if let value, let j = positions[value] {
                y[i * width + j] = 1
            } else if !allowsUnknown {
                throw LayerKitError.invalidParameter("OneHotEncoder: \(x[i]) is none of the categories, and zeros is 0")
            }
        }
    }
}
