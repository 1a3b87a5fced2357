import Foundation

/// A layer that only moves elements, never computes on them (Reshape,
/// Concat, Transpose, Slice, Gather's data, Split, Tile, Expand, ...).
///
/// Such a layer writes its element movement once, generic over the element
/// type: the CPU evaluator runs it on Float32 tensors, and the load-time
/// folding runs the same code on the bits of constants of any element type
/// (the int64 values of `Shape → Gather → Concat → Reshape`, float16
/// weights, strings), so the two can never disagree.
protocol ElementMovingLayer: Layer {
    /// Moves elements of `inputs` (of `inputShapes`, row-major) into
    /// `outputs` (of the shapes `outputShapes(forInputShapes:)` gives).
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws
}

extension ElementMovingLayer {
    /// `moveElements` on the tensors' Float32 storage.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shapes = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard shapes.count == outputs.count else {
            throw LayerKitError.shapeMismatch("\(layerName) makes \(shapes.count) outputs; \(outputs.count) were given")
        }
        for (output, shape) in zip(outputs, shapes) { try LayerChecks.requireOutput([output], shape, layer: layerName) }
        try moveElements(inputs: inputs.map { UnsafeBufferPointer($0.elements) }, inputShapes: inputs.map(\.shape),
                         outputs: outputs.map(\.elements))
    }
}
