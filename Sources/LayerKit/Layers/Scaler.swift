import Foundation

/// ai.onnx.ml `Scaler`: `Y = (X - offset) * scale` per feature (the last
/// axis of a `[N, C]` or `[C]` input); one offset or scale applies to every
/// feature. scikit-learn's StandardScaler exports as one.
public final class Scaler: Layer {
    public let layerName = "Scaler"
    public let features: Int
    let offset: [Float]
    let scale: [Float]

    /// Throws `invalidParameter` unless offset and scale each have 1 or
    /// `features` values.
    public init(offset: [Float], scale: [Float], features: Int) throws {
        for (name, values) in [("offset", offset), ("scale", scale)] where values.count != 1 && values.count != features {
            throw LayerKitError.invalidParameter("Scaler: \(values.count) \(name) values for \(features) feature(s); expected 1 or \(features)")
        }
        (self.features, self.offset, self.scale) = (features, offset, scale)
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        _ = try LinearModelRows.rows(inputShapes, features: features, layer: layerName)
        return inputShapes
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let (x, y) = (inputs[0].dataPointer, outputs[0].dataPointer)
        for i in 0..<inputs[0].count {
            let k = i % features
            y[i] = (x[i] - offset[offset.count == 1 ? 0 : k]) * scale[scale.count == 1 ? 0 : k]
        }
    }
}
