import Foundation

/// Checks and helpers the standard op layers share.
enum LayerChecks {
    /// Throws unless there are exactly `count` input shapes.
    static func requireInputCount(_ shapes: [[Int]], _ count: Int, layer: String) throws {
        guard shapes.count == count else {
            throw LayerKitError.shapeMismatch("\(layer) takes \(count) input\(count == 1 ? "" : "s"), got \(shapes.count)")
        }
    }

    /// Throws unless `shape`'s rank is in `ranks`.
    static func requireRank(_ shape: [Int], in ranks: ClosedRange<Int>, layer: String) throws {
        guard ranks.contains(shape.count) else {
            let allowed = ranks.upperBound == .max ? "at least \(ranks.lowerBound)"
                : ranks.count == 1 ? "\(ranks.lowerBound)" : "\(ranks.lowerBound) to \(ranks.upperBound)"
            throw LayerKitError.shapeMismatch(
                "\(layer): input of rank \(shape.count) (\(Tensor.describe(shape))), expected rank \(allowed)")
        }
    }

    /// The product of `dims` (1 for none).
    static func product(_ dims: ArraySlice<Int>) -> Int { dims.reduce(1, *) }

    /// Row-major strides of `shape`: the elements one step along each axis spans.
    static func rowMajorStrides(_ shape: [Int]) -> [Int] {
        var strides = Array(repeating: 1, count: shape.count)
        for axis in shape.indices.reversed().dropFirst() { strides[axis] = strides[axis + 1] * shape[axis + 1] }
        return strides
    }

    /// `axis` if it is non-negative (a converter resolves negative ONNX axes against the rank).
    static func nonNegativeAxis(_ axis: Int, layer: String) throws -> Int {
        guard axis >= 0 else {
            throw LayerKitError.invalidParameter("\(layer): axis \(axis) must be >= 0 (resolve negative axes against the rank)")
        }
        return axis
    }

    /// Throws unless `axis` is an axis of `shape`.
    static func requireAxis(_ axis: Int, of shape: [Int], layer: String) throws {
        guard axis < shape.count else {
            throw LayerKitError.shapeMismatch("\(layer): axis \(axis) is past the last axis of \(Tensor.describe(shape))")
        }
    }

    /// Throws unless `shape` has the axis `axis` and its axes from `axis` on
    /// hold `count` elements: one per value of a normalization's `parameter`
    /// (LayerNormalization's Scale, RMSNormalization's scale).
    static func requireNormalizedAxes(_ shape: [Int], from axis: Int, count: Int, parameter: String,
                                      layer: String) throws {
        try requireAxis(axis, of: shape, layer: layer)
        let normalized = product(shape[axis...])
        guard normalized == count else {
            throw LayerKitError.shapeMismatch(
                "\(layer): input \(Tensor.describe(shape)) has \(normalized) elements from axis \(axis) on, \(parameter) \(count)")
        }
    }

    /// Throws unless `outputs` is one tensor of `shape`.
    static func requireOutput(_ outputs: [Tensor], _ shape: [Int], layer: String) throws {
        guard outputs.count == 1, outputs[0].shape == shape else {
            throw LayerKitError.shapeMismatch("\(layer): the output must be one tensor of shape \(Tensor.describe(shape))")
        }
    }

    /// A normalization's epsilon (added to the variance before the square
    /// root): throws unless it is finite and >= 0.
    static func requireEpsilon(_ epsilon: Float, layer: String) throws {
        guard epsilon.isFinite, epsilon >= 0 else {
            throw LayerKitError.invalidParameter("\(layer): epsilon must be finite and >= 0, got \(epsilon)")
        }
    }
}
