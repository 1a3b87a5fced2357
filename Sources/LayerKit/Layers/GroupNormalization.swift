import CKernels

/// ONNX GroupNormalization (opset 21): the channels split into `groups`
/// runs of consecutive channels; per batch item and group,
/// `y = scale[c] * (x - mean) / sqrt(variance + epsilon) + bias[c]`, the
/// mean and variance (`E[(x - mean)^2]`) over the group's channels and every
/// position after the channel axis. InstanceNormalization is the case of one
/// channel a group.
///
/// Any rank from 2, on the CPU only, in double precision: a group is one
/// contiguous run of the input, so the statistics are InstanceNormalization's
/// vectorized loops over a longer run.
public final class GroupNormalization: Layer, Sendable {
    /// How many groups the channels split into.
    public let groups: Int
    /// One multiplier per channel.
    public let scale: [Float]
    /// One offset per channel.
    public let bias: [Float]
    /// Added to the variance before the square root.
    public let epsilon: Float

    /// Throws unless `scale` and `bias` hold one value per channel each (the
    /// same positive count, a multiple of `groups`) and `epsilon` is finite
    /// and >= 0.
    public init(groups: Int, scale: [Float], bias: [Float], epsilon: Float = 1e-5) throws {
        guard groups > 0, !scale.isEmpty, scale.count == bias.count, scale.count % groups == 0 else {
            throw LayerKitError.invalidWeights("GroupNormalization: scale has \(scale.count) values and bias \(bias.count); "
                                               + "both need one per channel, a multiple of the \(groups) groups")
        }
        try LayerChecks.requireEpsilon(epsilon, layer: "GroupNormalization")
        (self.groups, self.scale, self.bias, self.epsilon) = (groups, scale, bias, epsilon)
    }

    public var layerName: String { "GroupNormalization" }

    /// The input's shape; throws unless its rank is at least 2 and axis 1
    /// has one entry per channel of the parameters.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireRank(shape, in: 2...Int.max, layer: layerName)
        guard shape[1] == scale.count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): input \(Tensor.describe(shape)) has \(shape[1]) channels, scale and bias \(scale.count)")
        }
        return [shape]
    }

    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let (input, output) = (inputs[0], outputs[0])
        let plane = LayerChecks.product(shape[2...])
        let perGroup = shape[1] / groups
        guard plane > 0 else { return }
        let (scale, bias, epsilon, groups) = (scale, bias, Double(epsilon), groups)
        forEachChunk(count: shape[0] * groups, chunkSize: max(1, defaultChunkSize / (perGroup * plane)),
                     threadCount: CPUThreads.current) { range in
            for p in range {
                let start = p * perGroup * plane
                var mean = 0.0, variance = 0.0
                lk_mean_variance_f32(input.dataPointer + start, perGroup * plane, &mean, &variance)
                let deviation = 1 / (variance + epsilon).squareRoot()
                for k in 0..<perGroup {
                    let c = (p % groups) * perGroup + k
                    lk_normalize_f32(input.dataPointer + start + k * plane, output.dataPointer + start + k * plane, plane,
                                     mean, Double(scale[c]) * deviation, Double(bias[c]))
                }
            }
        }
    }
}
