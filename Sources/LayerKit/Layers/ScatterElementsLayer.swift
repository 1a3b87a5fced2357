import Foundation

/// ONNX ScatterElements (and the older Scatter) without reduction: the
/// input copied, then each update written where GatherElements with the
/// same constant indices would read (a repeated index keeps the last
/// update). Inputs: the data and the updates (of the indices' shape).
/// CPU only, any rank.
public final class ScatterElementsLayer: ElementMovingLayer, Sendable {
    /// The axis indexed (non-negative).
    public let axis: Int
    /// The indices, row-major, and their shape (the updates' shape).
    public let indices: [Int]
    public let indicesShape: [Int]

    /// A scatter along `axis` at `indices` shaped `indicesShape`.
    public init(axis: Int, indices: [Int], indicesShape: [Int]) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "ScatterElements")
        guard (try? Tensor.elementCount(of: indicesShape)) == indices.count else {
            throw LayerKitError.invalidParameter(
                "ScatterElements: \(indices.count) indices do not fill the indices' shape \(Tensor.describe(indicesShape))")
        }
        (self.indices, self.indicesShape) = (indices, indicesShape)
    }

    public var layerName: String { "ScatterElements" }

    /// The data's shape; throws unless the updates have the indices' shape.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 2, layer: layerName)
        guard inputShapes[1] == indicesShape else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): updates \(Tensor.describe(inputShapes[1])) must have the indices' shape "
                + Tensor.describe(indicesShape))
        }
        _ = try GatherElementsLayer.offsets(indices: indices, indicesShape: indicesShape, axis: axis,
                                            shape: inputShapes[0], layer: layerName)
        return [inputShapes[0]]
    }

    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        _ = try outputShapes(forInputShapes: inputShapes)
        let offsets = try GatherElementsLayer.offsets(indices: indices, indicesShape: indicesShape, axis: axis,
                                                      shape: inputShapes[0], layer: layerName)
        guard let source = inputs[0].baseAddress, let destination = outputs[0].baseAddress else { return }
        destination.update(from: source, count: min(inputs[0].count, outputs[0].count))
        for (i, offset) in offsets.enumerated() { outputs[0][offset] = inputs[1][i] }
    }
}
