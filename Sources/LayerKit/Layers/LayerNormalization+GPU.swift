/// LayerNormalization on the GPU when the normalized axes are an image's
/// plane: `Shaders/instancenorm.comp` with per-position scale and bias. A
/// transformer's [B, S, D] normalized over D is B items of S channels, each
/// a D x 1 plane, so each lane of a slice is one row, reduced in fp32.
extension LayerNormalization: ShapeLimitedGPULayer {
    public var hasGPUImplementation: Bool { true }

    /// Nil when the axes from `axis` on are H and W of the NCHW image (rank
    /// 3 from axis 2, rank 4 from axis 2, or from axis 3 when H is 1) and Y
    /// is the only output.
    public func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        guard outputCount == 1 else { return "it also gives the Mean and InvStdDev outputs, which only the CPU form makes" }
        guard let shape = inputShapes.first else { return nil }
        if shape.count == 3 && axis == 2 || shape.count == 4 && (axis == 2 || axis == 3 && shape[2] == 1) { return nil }
        return "it normalizes axes \(axis) to \(shape.count - 1) of a rank-\(shape.count) input, which are not an "
            + "image's H and W (its GPU form normalizes each channel's plane)"
    }

    /// Creates the pipeline and uploads scale and bias, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try prepared(on: context) }

    private func prepared(on context: GPUContext) throws -> PreparedGPU {
        try gpuState.value(on: context) {
            // (scale, bias, 0, 0) per texel of the plane, as the shader reads them.
            let weights: [Float] = scale.indices.flatMap { [scale[$0], bias?[$0] ?? 0, 0, 0] }
            return try PreparedGPU(kernel: BuiltInShaders.instanceNormalization.kernel(on: context),
                                   weights: context.makeBuffer(floats: weights))
        }
    }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, inputs[0].shape == outputs[0].shape else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image of the same shape")
        }
        let (input, output) = (inputs[0], outputs[0])
        guard input.width * input.height == scale.count else {
            throw LayerKitError.shapeMismatch("\(layerName): image \(Tensor.describe(input.shape)) has a plane of "
                                              + "\(input.width * input.height) texels, Scale \(scale.count) values")
        }
        let state = try prepared(on: commandBuffer.context)
        // One 8x8 workgroup per array layer.
        try commandBuffer.dispatch(state.kernel, images: [input, output], buffers: [state.weights],
                                   constants: InstanceNormalizationConstants(shape: output.shapeConstants, epsilon: epsilon,
                                                                             perPosition: 1),
                                   threads: (8, 8, output.layers))
    }
}
