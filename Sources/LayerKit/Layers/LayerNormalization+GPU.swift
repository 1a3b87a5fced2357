/// LayerNormalization on the GPU when the normalized axes are an image's
/// plane or its W: `Shaders/instancenorm.comp` with per-position scale and
/// bias. A transformer's [B, S, D] normalized over D is B items of S
/// channels, each a D x 1 plane, so each lane of a slice is one row, reduced
/// in fp32; a channels-last [B, H, W, C] over C (ConvNeXt, Swin) is each
/// row of the plane alone.
extension LayerNormalization: ShapeLimitedGPULayer {
    public var hasGPUImplementation: Bool { true }

    /// The most rows one dispatch normalizes alone: a workgroup each, and
    /// Vulkan guarantees 65,535 workgroups along z.
    static let maxGPURows = 65_535

    /// Nil when the axes from `axis` on are H and W of the NCHW image (rank
    /// 3 from axis 2, rank 4 from axis 2) or W alone (rank 4 from axis 3),
    /// and Y is the only output.
    public func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        guard outputCount == 1 else { return "it also gives the Mean and InvStdDev outputs, which only the CPU form makes" }
        guard let shape = inputShapes.first else { return nil }
        if shape.count == 3 && axis == 2 || shape.count == 4 && axis == 2 { return nil }
        if shape.count == 4 && axis == 3 {
            let rows = shape[0] * (shape[1] + 3) / 4 * shape[2]
            return rows <= Self.maxGPURows ? nil
                : "it normalizes \(rows) rows, more than the \(Self.maxGPURows) workgroups one GPU dispatch holds"
        }
        return "it normalizes axes \(axis) to \(shape.count - 1) of a rank-\(shape.count) input, which are not an "
            + "image's H and W or its W (its GPU form normalizes each channel's plane or rows)"
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
        // Scale spans the plane, or with H > 1 possibly a row of it alone.
        let perRow = input.width * input.height != scale.count && input.width == scale.count
        guard perRow || input.width * input.height == scale.count else {
            throw LayerKitError.shapeMismatch("\(layerName): image \(Tensor.describe(input.shape)) has neither a plane "
                                              + "nor a row of \(scale.count) texels, one per Scale value")
        }
        let state = try prepared(on: commandBuffer.context)
        // One 8x8 workgroup per array layer, or per row of one.
        let constants = InstanceNormalizationConstants(shape: output.shapeConstants, epsilon: epsilon, perPosition: 1,
                                                       perRow: perRow ? 1 : 0)
        try commandBuffer.dispatch(state.kernel, images: [input, output], buffers: [state.weights], constants: constants,
                                   threads: (8, 8, output.layers * (perRow ? output.height : 1)))
    }
}
