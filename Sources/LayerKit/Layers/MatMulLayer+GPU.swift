/// MatMul on the GPU for two computed rank-4 values of the same batch and
/// channels: `Shaders/matmul.comp` multiplies each lane's planes, so the
/// heads of attention's [B, heads, S, d] · [B, heads, d, S] are four to a
/// texel. Other forms (broadcast batch axes, other ranks, Gemm) run on the CPU.
extension MatMulLayer: ShapeLimitedGPULayer {
    public var hasGPUImplementation: Bool { !isGemm }

    /// Nil for rank-4 A [N, C, M, K] and B [N, C, K, P].
    public func whyNotGPU(inputShapes: [[Int]], outputShapes: [[Int]]) -> String? {
        guard inputShapes.count == 2, inputShapes.allSatisfy({ $0.count == 4 }) else {
            return "its GPU form multiplies two rank-4 values' planes; these are of ranks "
                + inputShapes.map { "\($0.count)" }.joined(separator: " and ")
        }
        let (a, b) = (inputShapes[0], inputShapes[1])
        guard a[..<2] == b[..<2] else {
            return "its GPU form needs A and B of the same batch and channels, not "
                + "\(Tensor.describe(Array(a[..<2]))) and \(Tensor.describe(Array(b[..<2]))) broadcast"
        }
        return nil
    }

    /// Creates the pipeline on `context`, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try kernel(on: context) }

    private func kernel(on context: GPUContext) throws -> GPUKernel<MatMulConstants> {
        try gpuKernel.value(on: context) { try BuiltInShaders.matmul.kernel(on: context) }
    }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 2, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 2 input images and 1 output image")
        }
        let (a, b, output) = (inputs[0], inputs[1], outputs[0])
        if let reason = whyNotGPU(inputShapes: [a.shape, b.shape], outputShapes: [output.shape]) {
            throw LayerKitError.unsupported("\(layerName) cannot run on the GPU: \(reason)")
        }
        guard a.width == b.height, output.shape == [a.batch, a.featureChannels, a.height, b.width] else {
            throw LayerKitError.shapeMismatch("\(layerName): \(Tensor.describe(a.shape)) and \(Tensor.describe(b.shape)) "
                                              + "do not chain into \(Tensor.describe(output.shape))")
        }
        try commandBuffer.dispatch(kernel(on: commandBuffer.context), images: [a, b, output],
                                   constants: MatMulConstants(shape: output.shapeConstants, inner: UInt32(a.width)),
                                   threads: (output.width, output.height, output.layers))
    }
}
