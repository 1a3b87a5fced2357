/// `ConvTranspose` on the GPU: 1-D and 2-D (a 3-D one's rank-5 tensors
/// have no slice image), with `conv_transpose2d.comp`.
extension ConvTranspose {
    public var hasGPUImplementation: Bool { spatialRank <= 2 }

    /// Creates the pipeline and uploads the weights (as they are) and the
    /// bias to `context`'s device, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try prepared(on: context) }

    private func prepared(on context: GPUContext) throws -> PreparedConvolution {
        guard spatialRank <= 2 else {
            throw LayerKitError.unsupported("ConvTranspose: a 3-D ConvTranspose has no GPU form (rank-5 tensors)")
        }
        return try gpuState.value(on: context) {
            try PreparedConvolution(kernel: BuiltInShaders.convTranspose2d.kernel(on: context),
                                    weights: context.makeBuffer(floats: Array(weights.elements)),
                                    bias: context.makeBuffer(floats: deviceBias))
        }
    }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("ConvTranspose takes 1 input image and 1 output image")
        }
        let (input, output) = (inputs[0], outputs[0])
        let state = try prepared(on: commandBuffer.context)
        // A 1-D layer's images are [N, C, L, 1]: the kernel runs down the height.
        guard input.featureChannels == inputChannels, spatialRank == 2 || input.width == 1 else {
            throw LayerKitError.shapeMismatch(
                "ConvTranspose: input image \(Tensor.describe(input.shape)) does not fit weights \(Tensor.describe(weights.shape))")
        }
        let extents = spatialRank == 1 ? [input.height] : [input.height, input.width]
        let axes = try axes(forInputExtents: extents)
        let columns = spatialRank == 1 ? Axis(head: 0, output: 1) : axes[1]
        guard output.shape == [input.batch, outputChannels, axes[0].output, columns.output] else {
            throw LayerKitError.shapeMismatch(
                "ConvTranspose: output image \(Tensor.describe(output.shape)) does not fit input \(Tensor.describe(input.shape))")
        }
        let k = kernel
        let constants = ConvolutionConstants(
            shape: output.shapeConstants,
            inputWidth: UInt32(input.width), inputHeight: UInt32(input.height), inputChannels: UInt32(inputChannels),
            inputSlices: UInt32(input.slices), kernelWidth: UInt32(spatialRank == 1 ? 1 : k[1]),
            kernelHeight: UInt32(k[0]),
            strideX: UInt32(spatialRank == 1 ? 1 : strides[1]), strideY: UInt32(strides[0]),
            dilationX: UInt32(spatialRank == 1 ? 1 : dilations[1]), dilationY: UInt32(dilations[0]),
            padLeft: Int32(columns.head), padTop: Int32(axes[0].head),
            groupInputChannels: UInt32(inputChannels / group), groupOutputChannels: UInt32(outputChannels / group))
        try commandBuffer.dispatch(state.kernel, images: [input, output], buffers: [state.weights, state.bias],
                                   constants: constants, threads: output.threads)
    }
}
