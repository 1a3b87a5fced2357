import CKernels

/// ONNX BatchNormalization in inference form: per channel `c` (axis 1),
/// `y = scale[c] * (x - mean[c]) / sqrt(variance[c] + epsilon) + bias[c]`,
/// run as the affine map `y = a[c] * x + b[c]` with `a` and `b` computed once
/// in double precision.
///
/// The input has rank 2 or more (N, C, then any spatial axes); on the GPU,
/// rank 2 to 4.
public final class BatchNormalization: Layer, Sendable {
    /// Per-channel multipliers `scale / sqrt(variance + epsilon)`.
    public let multipliers: [Float]
    /// Per-channel offsets `bias - mean * multipliers`.
    public let offsets: [Float]

    /// Makes the layer from its four per-channel tensors (ONNX `scale`,
    /// `B`, `input_mean`, `input_var`), which must all hold the same
    /// positive number C of values, and `epsilon` (finite, >= 0); a
    /// `variance + epsilon` that is not positive throws.
    public init(scale: Tensor, bias: Tensor, mean: Tensor, variance: Tensor, epsilon: Float = 1e-5) throws {
        let channels = scale.count
        for (name, tensor) in [("bias", bias), ("mean", mean), ("variance", variance)] where tensor.count != channels {
            throw LayerKitError.invalidWeights(
                "BatchNormalization: \(name) has \(tensor.count) values (shape \(Tensor.describe(tensor.shape))), scale has "
                + "\(channels); all four need one per channel")
        }
        guard channels > 0 else {
            throw LayerKitError.invalidWeights("BatchNormalization: scale, bias, mean and variance are empty")
        }
        guard epsilon.isFinite, epsilon >= 0 else {
            throw LayerKitError.invalidParameter("BatchNormalization: epsilon must be finite and >= 0, got \(epsilon)")
        }
        var multipliers: [Float] = [], offsets: [Float] = []
        for c in 0..<channels {
            let denominator = Double(variance[c]) + Double(epsilon)
            guard denominator > 0 else {
                throw LayerKitError.invalidWeights(
                    "BatchNormalization: variance + epsilon of channel \(c) is \(denominator), must be positive")
            }
            let a = Double(scale[c]) / denominator.squareRoot()
            multipliers.append(Float(a))
            offsets.append(Float(Double(bias[c]) - Double(mean[c]) * a))
        }
        self.multipliers = multipliers
        self.offsets = offsets
    }

    public var layerName: String { "BatchNormalization" }

    /// The input's shape; throws unless its rank is at least 2 and axis 1
    /// has one entry per channel of the parameters.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireRank(shape, in: 2...Int.max, layer: layerName)
        guard shape[1] == multipliers.count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): input \(Tensor.describe(shape)) has \(shape[1]) channels, the parameters \(multipliers.count)")
        }
        return [shape]
    }

    /// One fused multiply-add pass per channel plane.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let plane = LayerChecks.product(shape[2...])
        let channels = shape[1]
        let (a, b) = (multipliers, offsets)
        let pointers = UnsafeSendable((UnsafePointer(inputs[0].dataPointer), outputs[0].dataPointer))
        let planesPerChunk = max(1, defaultChunkSize / max(plane, 1))
        forEachChunk(count: shape[0] * channels, chunkSize: planesPerChunk, threadCount: activeProcessorCount) { planes in
            for p in planes {
                let c = p % channels
                lk_affine_clamp_f32(pointers.value.0 + p * plane, a[c], b[c], -.infinity, .infinity,
                                    pointers.value.1 + p * plane, plane)
            }
        }
    }

    public var hasGPUImplementation: Bool { true }

    /// The element-wise template with the per-channel `a` and `b` as weights.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image")
        }
        try commandBuffer.dispatch(PerElementKernel(name: layerName, body: "x * weight(0) + weight(1)"),
                                   input: inputs[0], output: outputs[0], weights: [multipliers, offsets])
    }
}
