import CKernels

/// ONNX LayerNormalization (opset 17): over the axes from `axis` on, for
/// each index before it, `y = (x - mean) / sqrt(variance + epsilon) *
/// scale + bias`, the variance as `E[(x - mean)^2]`, in double precision;
/// `scale` and `bias` hold one value per element of the normalized axes.
/// Optionally also the mean and `1 / sqrt(variance + epsilon)` (ONNX's
/// `Mean` and `InvStdDev` outputs), shaped as the input with every
/// normalized axis 1.
///
/// Any rank on the CPU; on the GPU when the normalized axes are the
/// image's plane (`LayerNormalization+GPU.swift`).
public final class LayerNormalization: Layer, Sendable {
    /// The first normalized axis (non-negative).
    public let axis: Int
    public let epsilon: Float
    /// One multiplier per element of the normalized axes.
    public let scale: [Float]
    /// One offset per element of the normalized axes; nil for none.
    public let bias: [Float]?
    /// 1 (Y), 2 (Y, Mean) or 3 (Y, Mean, InvStdDev).
    public let outputCount: Int
    struct PreparedGPU { let kernel: GPUKernel<InstanceNormalizationConstants>; let weights: GPUBuffer }
    let gpuState = PerContext<PreparedGPU>()

    /// Throws for a negative axis, an epsilon that is not finite and >= 0,
    /// a bias of another length than `scale`, or `outputCount` not 1 to 3.
    public init(axis: Int, epsilon: Float = 1e-5, scale: [Float], bias: [Float]? = nil, outputCount: Int = 1) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "LayerNormalization")
        try LayerChecks.requireEpsilon(epsilon, layer: "LayerNormalization")
        if let bias, bias.count != scale.count {
            throw LayerKitError.invalidWeights("LayerNormalization: B has \(bias.count) values, Scale \(scale.count)")
        }
        guard (1...3).contains(outputCount) else {
            throw LayerKitError.invalidParameter("LayerNormalization: \(outputCount) outputs, expected 1 to 3")
        }
        self.epsilon = epsilon
        self.scale = scale
        self.bias = bias
        self.outputCount = outputCount
    }

    public var layerName: String { "LayerNormalization" }

    /// Y as the input, then Mean and InvStdDev with the normalized axes 1.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireNormalizedAxes(shape, from: axis, count: scale.count, parameter: "Scale", layer: layerName)
        let statistics = Array(shape[..<axis]) + Array(repeating: 1, count: shape.count - axis)
        return [shape] + Array(repeating: statistics, count: outputCount - 1)
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shapes = try outputShapes(forInputShapes: inputs.map(\.shape))
        guard outputs.map(\.shape) == shapes else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): the outputs must be of shapes \(shapes.map(Tensor.describe).joined(separator: ", "))")
        }
        let input = inputs[0]
        let length = scale.count
        guard length > 0 else { return }
        let rows = input.count / length
        let (scale, bias, epsilon) = (scale, bias, Double(epsilon))
        let mean = outputs.count > 1 ? outputs[1] : nil, inverse = outputs.count > 2 ? outputs[2] : nil
        let y = outputs[0]
        // lk_norm.c: the row sums over independent partial sums (a serial double sum is a chain of
        // dependent adds) and a normalize loop that vectorizes.
        forEachChunk(count: rows, chunkSize: max(1, defaultChunkSize / length), threadCount: CPUThreads.current) { range in
            scale.withUnsafeBufferPointer { scale in
                // An empty array's buffer may still have an address: no bias is nil for the kernel.
                (bias ?? []).withUnsafeBufferPointer { offsets in
                    for row in range {
                        let x = input.dataPointer + row * length
                        var m = 0.0, variance = 0.0
                        lk_mean_variance_f32(x, length, &m, &variance)
                        let invStdDev = 1 / (variance + epsilon).squareRoot()
                        lk_normalize_affine_f32(x, y.dataPointer + row * length, length, m, invStdDev,
                                                scale.baseAddress!, bias == nil ? nil : offsets.baseAddress)
                        mean?.dataPointer[row] = Float(m)
                        inverse?.dataPointer[row] = Float(invStdDev)
                    }
                }
            }
        }
    }
}
