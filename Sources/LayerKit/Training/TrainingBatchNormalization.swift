import Synchronization

/// ONNX BatchNormalization in training mode (`training_mode` 1), made from
/// the inference layer and a momentum: each forward pass normalizes with
/// the batch's own statistics, per channel (axis 1) over the batch and
/// spatial axes, computed in Double,
/// `y = scale * (x - batchMean) / sqrt(batchVariance + epsilon) + B` with
/// the biased (divide-by-count) batch variance, and updates the running
/// statistics as ONNX and PyTorch do:
/// `running = momentum * running + (1 - momentum) * batch` (ONNX momentum
/// 0.9 is PyTorch's momentum 0.1), the running variance with the unbiased
/// batch variance (count / (count - 1) times the biased one), as PyTorch
/// does. A channel needs two values or more.
///
/// Every `evaluate` is one training forward pass: it updates the running
/// statistics once and keeps the batch statistics, which the backward pass
/// of the same step reads. `runningMean`, `runningVariance` and `frozen`
/// (the inference layer with them) read the current ones. CPU only.
public final class TrainingBatchNormalization: Layer, Sendable {
    /// ONNX `scale` (a copy).
    public let scale: Tensor
    /// ONNX `B` (a copy).
    public let bias: Tensor
    /// epsilon.
    public let epsilon: Float
    /// ONNX momentum, the running statistics' share kept at each step.
    public let momentum: Float
    /// The shapes the running statistics were given in.
    private let meanShape: [Int], varianceShape: [Int]
    private let state: Mutex<State>

    /// What forward passes change.
    private struct State {
        var runningMean: [Float]
        var runningVariance: [Float]
        /// The last forward pass's input shape and batch statistics.
        var last: BatchStatistics?
    }

    /// One forward pass's statistics, per channel.
    struct BatchStatistics {
        var shape: [Int]
        var mean: [Double]
        /// 1 / sqrt(biased batch variance + epsilon).
        var inverseDeviation: [Double]
    }

    /// The training form of `layer`, starting from its running statistics;
    /// `momentum` (ONNX's, default 0.9) must be in [0, 1].
    public convenience init(_ layer: BatchNormalization, momentum: Float = 0.9) throws {
        guard momentum >= 0, momentum <= 1 else {
            throw LayerKitError.invalidParameter("BatchNormalization: momentum must be in [0, 1], got \(momentum)")
        }
        try self.init(scale: layer.scale, bias: layer.bias, mean: layer.mean, variance: layer.variance,
                      epsilon: layer.epsilon, momentum: momentum)
    }

    private init(scale: Tensor, bias: Tensor, mean: Tensor, variance: Tensor, epsilon: Float, momentum: Float) throws {
        let copy = { (t: Tensor) in try Tensor(shape: t.shape, values: t.values) }
        (self.scale, self.bias, self.epsilon, self.momentum) = (try copy(scale), try copy(bias), epsilon, momentum)
        (meanShape, varianceShape) = (mean.shape, variance.shape)
        state = Mutex(State(runningMean: mean.values, runningVariance: variance.values, last: nil))
    }

    public var layerName: String { "BatchNormalization" }

    /// The running mean after the forward passes so far (the shape ONNX gave it).
    public var runningMean: Tensor {
        get throws { try Tensor(shape: meanShape, values: state.withLock { $0.runningMean }) }
    }

    /// The running variance after the forward passes so far.
    public var runningVariance: Tensor {
        get throws { try Tensor(shape: varianceShape, values: state.withLock { $0.runningVariance }) }
    }

    /// The inference layer with the current scale, B and running statistics.
    public var frozen: BatchNormalization {
        get throws {
            try BatchNormalization(scale: scale, bias: bias, mean: runningMean, variance: runningVariance, epsilon: epsilon)
        }
    }

    /// The last forward pass's batch statistics, if any.
    var lastStatistics: BatchStatistics? { state.withLock { $0.last } }

    /// The input's shape; throws unless it is `[N, C, ...]` with C the
    /// parameters' channel count.
    public func outputShapes(forInputShapes inputShapes: [[Int]]) throws -> [[Int]] {
        try LayerChecks.requireInputCount(inputShapes, 1, layer: layerName)
        let shape = inputShapes[0]
        try LayerChecks.requireRank(shape, in: 2...Int.max, layer: layerName)
        guard shape[1] == scale.count else {
            throw LayerKitError.shapeMismatch(
                "\(layerName): input \(Tensor.describe(shape)) has \(shape[1]) channels, the parameters \(scale.count)")
        }
        return [shape]
    }

    /// Normalizes with the batch statistics and updates the running ones.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        let planes = ChannelPlanes(shape)
        let count = planes.perChannel
        guard count >= 2 else {
            throw LayerKitError.shapeMismatch(
                "\(layerName) (training): input \(Tensor.describe(shape)) has \(count) value(s) per channel; batch "
                + "statistics need 2 or more")
        }
        let (x, y) = (inputs[0], outputs[0])
        var sums = [Double](repeating: 0, count: planes.channels)
        planes.forEachPlane { _, c, start in
            for i in start..<start + planes.plane { sums[c] += Double(x.dataPointer[i]) }
        }
        let mean = sums.map { $0 / Double(count) }
        var squares = [Double](repeating: 0, count: planes.channels)
        planes.forEachPlane { _, c, start in
            for i in start..<start + planes.plane {
                let d = Double(x.dataPointer[i]) - mean[c]
                squares[c] += d * d
            }
        }
        let variance = squares.map { $0 / Double(count) }
        let inverse = variance.map { 1 / ($0 + Double(epsilon)).squareRoot() }
        let (scale, bias) = (scale, bias)
        planes.forEachPlane { _, c, start in
            let a = Double(scale[c]) * inverse[c], b = Double(bias[c])
            for i in start..<start + planes.plane {
                y.dataPointer[i] = Float((Double(x.dataPointer[i]) - mean[c]) * a + b)
            }
        }
        let (kept, unbiased) = (Double(momentum), Double(count) / Double(count - 1))
        state.withLock { state in
            for c in 0..<planes.channels {
                state.runningMean[c] = Float(kept * Double(state.runningMean[c]) + (1 - kept) * mean[c])
                state.runningVariance[c] = Float(kept * Double(state.runningVariance[c]) + (1 - kept) * variance[c] * unbiased)
            }
            state.last = BatchStatistics(shape: shape, mean: mean, inverseDeviation: inverse)
        }
    }
}

/// The backward pass with batch statistics: per channel, with
/// x̂ = (x - batchMean) * r, r = 1 / sqrt(batchVariance + epsilon) and n the
/// values a channel holds, dL/dB = sum(dL/dy), dL/dscale = sum(dL/dy * x̂),
/// dL/dx = scale * r / n * (n * dL/dy - dL/dB - x̂ * dL/dscale) (the mean
/// and variance depend on x too); in Double on the CPU, from the
/// statistics of the last forward pass. The running statistics get no
/// gradient.
extension TrainingBatchNormalization: DifferentiableLayer {
    /// `scale` (node input 1) and `B` (node input 2).
    var trainableParameters: [TrainableParameter] {
        BatchNormalization.affineParameters(scale: scale, bias: bias)
    }

    /// The same training layer (current running statistics, epsilon,
    /// momentum) with the new scale and/or B; it has no last forward pass.
    func replacingParameters(_ values: [String: Tensor]) throws -> Layer {
        let values = try checkedReplacements(values)
        return try TrainingBatchNormalization(scale: values["scale"] ?? scale, bias: values["B"] ?? bias,
                                              mean: runningMean, variance: runningVariance, epsilon: epsilon,
                                              momentum: momentum)
    }

    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        let x = try step.checkedInputs(1, layer: layerName)[0]
        _ = try outputShapes(forInputShapes: [x.shape])
        let dy = try step.checkedOutputGradient(0, layer: layerName)
        guard let statistics = lastStatistics, statistics.shape == x.shape else {
            throw LayerKitError.invalidParameter(
                "\(layerName) (training): the backward pass needs the batch statistics of a forward pass on "
                + "\(Tensor.describe(x.shape)); run the layer forward on this step's input first")
        }
        return try runner.cpu("BatchNormalization (training) backward with batch statistics") {
            let planes = ChannelPlanes(x.shape)
            let (mean, inverse) = (statistics.mean, statistics.inverseDeviation)
            let sums = planes.sums(dy, x) { c in (mean[c], inverse[c]) }
            var result = LayerGradients(inputs: [nil])
            if step.needsGradient(ofInput: 0) {
                let dx = try Tensor(shape: x.shape)
                let n = Double(planes.perChannel)
                let scale = self.scale
                planes.forEachPlane { _, c, start in
                    let (sumG, sumGX) = sums[c]
                    let factor = Double(scale[c]) * inverse[c] / n
                    for i in start..<start + planes.plane {
                        let normalized = (Double(x.dataPointer[i]) - mean[c]) * inverse[c]
                        dx.dataPointer[i] = Float(factor * (n * Double(dy.dataPointer[i]) - sumG - normalized * sumGX))
                    }
                }
                result.inputs[0] = dx
            }
            if step.parameterRoles.contains("scale") {
                result.parameters["scale"] = try Tensor(shape: scale.shape, values: sums.map { Float($0.gradientTimesNormalized) })
            }
            if step.parameterRoles.contains("B") {
                result.parameters["B"] = try Tensor(shape: bias.shape, values: sums.map { Float($0.gradient) })
            }
            return result
        }
    }
}
