import Foundation

/// ONNX GatherElements: output element `p` (of the indices' shape) is the
/// input element at `p` with its `axis` coordinate replaced by
/// `indices[p]` (negative ones count from the end). The indices are
/// constant, of the input's rank, no larger than the input off `axis`.
/// CPU only, any rank.
public final class GatherElementsLayer: ElementMovingLayer, Sendable {
    /// The axis indexed (non-negative).
    public let axis: Int
    /// The indices, row-major, and their shape.
    public let indices: [Int]
    public let indicesShape: [Int]

    /// A gather along `axis` by `indices` shaped `indicesShape`.
    public init(axis: Int, indices: [Int], indicesShape: [Int]) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "GatherElements")
        guard (try? Tensor.elementCount(of: indicesShape)) == indices.count else {
            throw LayerKitError.invalidParameter(
                "GatherElements: \(indices.count) indices do not fill the indices' shape \(Tensor.describe(indicesShape))")
        }
        (self.indices, self.indicesShape) = (indices, indicesShape)
    }

    public var layerName: String { "GatherElements" }

    /// For each index position, the row-major offset of the element of a
    /// tensor of `shape` it names; throws for shapes or indices out of range.
    /// (ScatterElements writes where GatherElements reads.)
    static func offsets(indices: [Int], indicesShape: [Int], axis: Int, shape: [Int], layer: String) throws -> [Int] {
        guard indicesShape.count == shape.count, axis < shape.count else {
            throw LayerKitError.shapeMismatch(
                "\(layer): indices \(Tensor.describe(indicesShape)) and data \(Tensor.describe(shape)) must have one rank "
                + "with axis \(axis) in it")
        }
        for d in shape.indices where d != axis && indicesShape[d] > shape[d] {
            throw LayerKitError.shapeMismatch(
                "\(layer): indices \(Tensor.describe(indicesShape)) exceed data \(Tensor.describe(shape)) on axis \(d)")
        }
        let strides = LayerChecks.rowMajorStrides(shape)
        let extent = shape[axis]
        var position = Array(repeating: 0, count: shape.count)
        var offsets: [Int] = []
        offsets.reserveCapacity(indices.count)
        for index in indices {
            guard index >= -extent, index < extent else {
                throw LayerKitError.invalidParameter(
                    "\(layer): index \(index) is out of range for axis \(axis) of extent \(extent) "
                    + "(valid: \(-extent) to \(extent - 1))")
            }
            var offset = (index < 0 ? index + extent : index) * strides[axis]
            for d in shape.indices where d != axis { offset += position[d] * strides[d] }
            offsets.append(offset)
            // The next row-major position of the indices.
            for d in position.indices.reversed() {
                position[d] += 1
                if position[d] < indicesShape[d] { break }
                position[d] = 0
            }
        }
        return offsets
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        _ = try Self.offsets(indices: indices, indicesShape: indicesShape, axis: axis, shape: inputShapes[0], layer: layerName)
        return [indicesShape]
    }

    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let offsets = try Self.offsets(indices: indices, indicesShape: indicesShape, axis: axis, shape: inputShapes[0],
                                       layer: layerName)
        for (i, offset) in offsets.enumerated() { outputs[0][i] = inputs[0][offset] }
    }
}
