import CKernels

/// ONNX Softmax (opset 13): `exp(x - max) / sum(exp(x - max))` along one
/// axis, the maximum subtracted first so exp never overflows.
///
/// Any rank on the CPU. On the GPU only along axis 1, the slice image's
/// channel axis (a rank-2 [N, M] tensor is an N×M×1×1 image).
public final class Softmax: Layer, Sendable {
    /// The axis the softmax runs along (non-negative).
    public let axis: Int
    /// The pipeline `prepare` made on each context.
    private let gpuKernel = PerContext<GPUKernel<ShapeConstants>>()

    /// A softmax along `axis`, counted from 0 (a converter resolves
    /// negative ONNX axes first); throws for a negative axis.
    public init(axis: Int) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "Softmax")
    }

    public var layerName: String { "Softmax" }

    /// The input's shape; throws unless `axis` is one of its axes.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireAxis(axis, of: shape, layer: layerName)
        return [shape]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let outer = LayerChecks.product(shape[..<axis])
        let length = shape[axis]
        let inner = LayerChecks.product(shape[(axis + 1)...])
        let block = length * inner
        guard block > 0 else { return }
        let (input, output) = (inputs[0], outputs[0])
        forEachChunk(count: outer, chunkSize: max(1, defaultChunkSize / block), threadCount: CPUThreads.current) { range in
            let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 2 * inner)
            defer { scratch.deallocate() }
            lk_softmax_f32(input.dataPointer + range.lowerBound * block, output.dataPointer + range.lowerBound * block,
                           range.count, length, inner, scratch)
        }
    }

    /// True along axis 1, the image's channel axis.
    public var hasGPUImplementation: Bool { axis == 1 }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<ShapeConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.softmax.kernel(on: context) }
    }

    /// `Shaders/softmax.comp`: one invocation per (x, y, item) walks the
    /// slices twice (maximum, then sum of exponentials) and writes them all.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard hasGPUImplementation else {
            throw LayerKitError.unsupported("\(layerName) runs on the GPU only along axis 1 (the channel axis), not \(axis)")
        }
        guard inputs.count == 1, outputs.count == 1, inputs[0].shape == outputs[0].shape else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image of the same shape")
        }
        let output = outputs[0]
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [inputs[0], output],
                                   constants: output.shapeConstants,
                                   threads: (output.width, output.height, output.batch))
    }
}
