import CKernels

/// ONNX RMSNormalization (opset 23): over the axes from `axis` on, for each
/// index before it, `y = x / sqrt(mean(x^2) + epsilon) * scale`, the mean
/// in double precision; `scale` holds one value per element of the
/// normalized axes.
///
/// Any rank, on the CPU only (LayerNormalization without the mean, as
/// LLaMA-style transformers normalize).
public final class RMSNormalization: Layer, Sendable {
    /// The first normalized axis (non-negative).
    public let axis: Int
    public let epsilon: Float
    /// One multiplier per element of the normalized axes.
    public let scale: [Float]

    /// Throws for a negative axis or an epsilon that is not finite and >= 0.
    public init(axis: Int, epsilon: Float = 1e-5, scale: [Float]) throws {
        self.axis = try LayerChecks.nonNegativeAxis(axis, layer: "RMSNormalization")
        try LayerChecks.requireEpsilon(epsilon, layer: "RMSNormalization")
        self.epsilon = epsilon
        self.scale = scale
    }

    public var layerName: String { "RMSNormalization" }

    /// The input's shape; throws unless the normalized axes hold one
    /// element per scale value.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireNormalizedAxes(shape, from: axis, count: scale.count, parameter: "scale", layer: layerName)
        return [shape]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (input, y) = (inputs[0], outputs[0])
        let length = scale.count
        guard length > 0 else { return }
        let (scale, epsilon) = (scale, Double(epsilon))
        // lk_norm.c: the sum of squares over independent partial sums, the scaling vectorized.
        forEachChunk(count: input.count / length, chunkSize: max(1, defaultChunkSize / length),
                     threadCount: CPUThreads.current) { range in
            scale.withUnsafeBufferPointer { scale in
                for row in range {
                    let x = input.dataPointer + row * length
                    let inverse = 1 / (lk_mean_square_f32(x, length) + epsilon).squareRoot()
                    lk_normalize_affine_f32(x, y.dataPointer + row * length, length, 0, inverse,
                                            scale.baseAddress!, nil)
                }
            }
        }
    }
}
