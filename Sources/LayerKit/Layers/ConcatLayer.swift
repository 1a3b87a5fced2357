import Foundation

/// ONNX Concat: its inputs joined along one axis; every other extent must
/// match. Any number of inputs and any axis on the CPU; on the GPU along
/// axis 1, the slice image's channel axis.
public final class ConcatLayer: ElementMovingLayer, Sendable {
    /// The axis the inputs are joined along (non-negative).
    public let axis: Int

    /// The most inputs one GPU dispatch gathers from (with the output, the
    /// four bindings a dispatch may have); more take one dispatch per group.
    static let inputsPerDispatch = 3
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<ConcatConstants>>()

    /// A concatenation along `axis` (a converter resolves negative ONNX
    /// axes first); throws for a negative axis.
    public init(axis: Int) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "Concat")
    }

    public var layerName: String { "Concat" }

    /// The first input's shape with the extents along `axis` summed; throws
    /// for no input, mismatched ranks or extents, or an axis past the rank.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        guard var shape = inputShapes.first else {
            throw LayerKitError.shapeMismatch("\(layerName) takes at least one input")
        }
        try LayerChecks.requireAxis(axis, of: shape, layer: layerName)
        for other in inputShapes.dropFirst() {
            guard other.count == shape.count,
                  other.indices.allSatisfy({ $0 == axis || other[$0] == shape[$0] }) else {
                throw LayerKitError.shapeMismatch(
                    "\(layerName): input \(Tensor.describe(other)) does not match \(Tensor.describe(inputShapes[0])) "
                    + "except along axis \(axis)")
            }
            // Zero-size inputs may have huge extents: the sum is checked.
            let (sum, overflow) = shape[axis].addingReportingOverflow(other[axis])
            guard !overflow else {
                throw LayerKitError.shapeMismatch("\(layerName): the inputs' extents along axis \(axis) add past Int.max")
            }
            shape[axis] = sum
        }
        _ = try Tensor.elementCount(of: shape)
        return [shape]
    }

    /// Copies each input's contiguous runs (its extent along `axis` times
    /// the inner extents) into place, outer index by outer index.
    func moveElements<Element>(inputs: [UnsafeBufferPointer<Element>], inputShapes: [[Int]],
                               outputs: [UnsafeMutableBufferPointer<Element>]) throws {
        let shape = try outputShapes(forInputShapes: inputShapes)[0]
        let outer = LayerChecks.product(shape[..<axis])
        let inner = LayerChecks.product(shape[(axis + 1)...])
        let outRun = shape[axis] * inner
        guard outer > 0, outRun > 0, let destination = outputs[0].baseAddress else { return }
        var offset = 0
        var pieces: [(source: UnsafePointer<Element>?, run: Int, offset: Int)] = []
        for (input, inputShape) in zip(inputs, inputShapes) {
            pieces.append((input.baseAddress, inputShape[axis] * inner, offset))
            offset += inputShape[axis] * inner
        }
        let shared = SendableRuns(output: destination, pieces: pieces)
        forEachChunk(count: outer, chunkSize: max(1, defaultChunkSize / outRun), threadCount: CPUThreads.current) { range in
            for o in range {
                for piece in shared.pieces where piece.run > 0 {
                    guard let source = piece.source else { continue }
                    (shared.output + o * outRun + piece.offset).update(from: source + o * piece.run, count: piece.run)
                }
            }
        }
    }

    /// True along axis 1, the image's channel axis.
    public var hasGPUImplementation: Bool { axis == 1 }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<ConcatConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.concat.kernel(on: context) }
    }

    /// `Shaders/concat.comp`: each output texel gathers its four lanes from
    /// the inputs that own them. Inputs go in groups of up to three, one
    /// dispatch each over the output slices the group touches; a texel
    /// shared by two groups is loaded back and only the group's own lanes
    /// change, so every lane is written by exactly one dispatch, in order.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard hasGPUImplementation else {
            throw LayerKitError.unsupported("\(layerName) runs on the GPU only along axis 1 (the channel axis), not \(axis)")
        }
        guard let first = inputs.first, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes at least 1 input image and 1 output image")
        }
        let output = outputs[0]
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        guard shape == output.shape else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): output image \(Tensor.describe(output.shape)) is not the inputs' \(Tensor.describe(shape))")
        }
        let kernel = try kernel(on: commandBuffer.context)
        let groups = stride(from: 0, to: inputs.count, by: Self.inputsPerDispatch).map {
            $0..<min($0 + Self.inputsPerDispatch, inputs.count)
        }
        var offset = 0
        for (g, group) in groups.enumerated() {
            let start = offset
            // Unused slots have count 0.
            var offsets = SIMD4<UInt32>(), counts = SIMD4<UInt32>()
            for (slot, input) in inputs[group].enumerated() {
                offsets[slot] = UInt32(offset)
                counts[slot] = UInt32(input.featureChannels)
                offset += input.featureChannels
            }
            let firstSlice = start / 4, sliceCount = (offset - 1) / 4 - start / 4 + 1
            let isLast = g == groups.count - 1
            // Bit 0: load the texel first (other groups own some lanes); bit 1: zero the padding lanes.
            let constants = ConcatConstants(shape: output.shapeConstants, firstSlice: UInt32(firstSlice),
                                            sliceCount: UInt32(sliceCount),
                                            flags: UInt32((groups.count > 1 ? 1 : 0) | (isLast ? 2 : 0)),
                                            offsets: offsets, counts: counts)
            let unused = Self.inputsPerDispatch - group.count
            let images = Array(inputs[group]) + Array(repeating: first, count: unused) + [output]
            try commandBuffer.dispatch(kernel, images: images, constants: constants,
                                       threads: (output.width, output.height, output.batch * sliceCount))
        }
    }
}

/// The output and the inputs' runs of one concatenation, handed to worker
/// threads that write disjoint outer positions; the caller keeps the memory alive.
private struct SendableRuns<Element>: @unchecked Sendable {
    let output: UnsafeMutablePointer<Element>
    let pieces: [(source: UnsafePointer<Element>?, run: Int, offset: Int)]
}
