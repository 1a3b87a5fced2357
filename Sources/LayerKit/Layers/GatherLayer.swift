import Foundation

/// ONNX Gather: entries of the input along one axis picked by constant
/// indices of any rank (negative ones count from the end), the output's
/// shape being the input's with that axis replaced by the indices' shape.
/// CPU only (threaded), any rank; for a model's runtime index inputs the
/// importer makes them per-run constants.
public final class GatherLayer: ElementMovingLayer, Sendable {
    /// The axis indexed (non-negative).
    public let axis: Int
    /// The indices, row-major, and their shape (`[]`: one scalar index).
    public let indices: [Int]
    public let indicesShape: [Int]

    /// A gather along `axis` of `indices` shaped `indicesShape`; throws for
    /// a negative axis or indices that do not fill their shape.
    public init(axis: Int, indices: [Int], indicesShape: [Int]) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "Gather")
        guard (try? Tensor.elementCount(of: indicesShape)) == indices.count else {
            throw LayerKitError.invalidParameter(
                "Gather: \(indices.count) indices do not fill the indices' shape \(Tensor.describe(indicesShape))")
        }
        (self.indices, self.indicesShape) = (indices, indicesShape)
    }

    public var layerName: String { "Gather" }

    /// The indices made non-negative for an axis of `extent`; throws for one out of range.
    func resolvedIndices(extent: Int) throws -> [Int] {
        try indices.map { index in
            guard index >= -extent, index < extent else {
                throw LayerKitError.invalidParameter(
                    "\(layerName): index \(index) is out of range for axis \(axis) of extent \(extent) "
                    + "(valid: \(-extent) to \(extent - 1))")
            }
            return index < 0 ? index + extent : index
        }
    }

    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireAxis(axis, of: shape, layer: layerName)
        _ = try resolvedIndices(extent: shape[axis])
        let output = Array(shape[..<axis]) + indicesShape + Array(shape[(axis + 1)...])
        _ = try Tensor.elementCount(of: output)
        return [output]
    }

    /// For each outer position and each index, one run of the inner extents.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let output = try outputShapes(forInputShapes: inputShapes)[0]
        let shape = inputShapes[0]
        let picks = try resolvedIndices(extent: shape[axis])
        let outer = LayerChecks.product(shape[..<axis]), inner = LayerChecks.product(shape[(axis + 1)...])
        guard try Tensor.elementCount(of: output) > 0, inner > 0,
              let source = inputs[0].baseAddress, let destination = outputs[0].baseAddress else { return }
        let extent = shape[axis]
        let buffers = SendableBuffers(input: UnsafeBufferPointer(start: source, count: inputs[0].count),
                                      output: UnsafeMutableBufferPointer(start: destination, count: outputs[0].count))
        // One run of `inner` elements per (outer position, index), spread over the run's threads.
        forEachChunk(count: outer * picks.count, chunkSize: max(1, defaultChunkSize / inner),
                     threadCount: CPUThreads.current) { range in
            guard let from = buffers.input.baseAddress, let to = buffers.output.baseAddress else { return }
            for run in range {
                let (o, k) = run.quotientAndRemainder(dividingBy: picks.count)
                (to + run * inner).update(from: from + (o * extent + picks[k]) * inner, count: inner)
            }
        }
    }
}
