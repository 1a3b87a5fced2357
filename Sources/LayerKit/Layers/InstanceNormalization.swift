import CKernels

/// ONNX InstanceNormalization: per batch item and channel `c`,
/// `y = scale[c] * (x - mean) / sqrt(variance + epsilon) + bias[c]`, the
/// mean and variance (`E[(x - mean)^2]`) over every axis after the channel
/// axis.
///
/// Any rank from 3 on the CPU, in double precision. On the GPU for rank 3
/// and 4 (`Shaders/instancenorm.comp`: one workgroup per item's slice,
/// reducing in shared memory, in fp32).
public final class InstanceNormalization: Layer, Sendable {
    /// One multiplier per channel.
    public let scale: [Float]
    /// One offset per channel.
    public let bias: [Float]
    /// Added to the variance before the square root.
    public let epsilon: Float
    private struct Prepared { let kernel: GPUKernel<InstanceNormalizationConstants>; let weights: GPUBuffer }
    private let gpuState = PerContext<Prepared>()

    /// Makes the layer from ONNX's `scale` and `B` (one value per channel
    /// each, the same positive count) and `epsilon` (finite, >= 0).
    public init(scale: [Float], bias: [Float], epsilon: Float = 1e-5) throws {
        guard !scale.isEmpty, scale.count == bias.count else {
            throw LayerKitError.invalidWeights(
                "InstanceNormalization: scale has \(scale.count) values and B \(bias.count); both need one per channel")
        }
        try LayerChecks.requireEpsilon(epsilon, layer: "InstanceNormalization")
        self.scale = scale
        self.bias = bias
        self.epsilon = epsilon
    }

    public var layerName: String { "InstanceNormalization" }

    /// The input's shape; throws unless its rank is at least 3 and axis 1
    /// has one entry per channel of the parameters.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireRank(shape, in: 3...Int.max, layer: layerName)
        guard shape[1] == scale.count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): input \(Tensor.describe(shape)) has \(shape[1]) channels, scale and B \(scale.count)")
        }
        return [shape]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (input, output) = (inputs[0], outputs[0])
        let plane = LayerChecks.product(shape[2...])
        let channels = shape[1]
        guard plane > 0 else { return }
        let (scale, bias, epsilon) = (scale, bias, Double(epsilon))
        forEachChunk(count: shape[0] * channels, chunkSize: max(1, defaultChunkSize / plane),
                     threadCount: CPUThreads.current) { range in
            for p in range {
                let x = input.dataPointer + p * plane, y = output.dataPointer + p * plane
                // lk_norm.c: partial sums that vectorize (4.2x the serial
                // double loops on 128x64x64, measured there).
                var mean = 0.0, variance = 0.0
                lk_mean_variance_f32(x, plane, &mean, &variance)
                let a = Double(scale[p % channels]) / (variance + epsilon).squareRoot()
                lk_normalize_f32(x, y, plane, mean, a, Double(bias[p % channels]))
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    /// Creates the pipeline and uploads scale and bias, once per context.
    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { _ = try prepared(on: context) }

    private func prepared(on context: GPUContext) throws -> Prepared {
        try gpuState.value(on: context) {
            try Prepared(kernel: BuiltInShaders.instanceNormalization.kernel(on: context),
                         weights: context.makeBuffer(floats: PerElementConstants.weightLayout([scale, bias],
                                                                                             channels: scale.count)))
        }
    }

    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1, inputs[0].shape == outputs[0].shape else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image of the same shape")
        }
        let (input, output) = (inputs[0], outputs[0])
        guard input.featureChannels == scale.count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): image \(Tensor.describe(input.shape)) has \(input.featureChannels) channels, scale \(scale.count)")
        }
        let state = try prepared(on: commandBuffer.context)
        // One 8x8 workgroup per array layer.
        try commandBuffer.dispatch(state.kernel, images: [input, output], buffers: [state.weights],
                                   constants: InstanceNormalizationConstants(shape: output.shapeConstants, epsilon: epsilon),
                                   threads: (8, 8, output.layers))
    }
}
