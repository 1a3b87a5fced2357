import Foundation

/// ai.onnx.ml `LabelEncoder` between numbers (int64 or float keys and
/// values): each element found among the keys becomes its value, any other
/// the default; any shape. A NaN key matches NaN. Integers are held as the
/// Floats LayerKit computes in, exact to 2^24. Strings are refused by the
/// converter. CPU only, as `Binarizer` (why there).
public final class LabelEncoder: Layer {
    public let layerName = "LabelEncoder"
    let keys: [Float]
    let values: [Float]
    let defaultValue: Float

    /// Throws `invalidParameter` unless there are as many keys as values.
    public init(keys: [Float], values: [Float], defaultValue: Float) throws {
        guard keys.count == values.count else {
            throw LayerKitError.invalidParameter("LabelEncoder: \(keys.count) keys for \(values.count) values")
        }
        (self.keys, self.values, self.defaultValue) = (keys, values, defaultValue)
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        guard inputShapes.count == 1 else { throw LayerKitError.shapeMismatch("LabelEncoder takes one input") }
        return inputShapes
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        var lookup: [Float: Float] = [:]
        var nanValue: Float?
        // The first of repeated keys wins.
        for (key, value) in zip(keys, values).reversed() {
            if key.isNaN { nanValue = value } else { lookup[key] = value }
        }
        let (x, y) = (inputs[0].dataPointer, outputs[0].dataPointer)
        for i in 0..<inputs[0].count {
            y[i] = x[i].isNaN ? (nanValue ?? defaultValue) : (lookup[x[i]] ?? defaultValue)
        }
    }
}
