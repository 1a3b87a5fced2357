/// ONNX BatchNormalization in inference form: per channel `c` (axis 1),
/// `y = scale[c] * (x - mean[c]) / sqrt(variance[c] + epsilon) + bias[c]`,
/// run as the catalog's `Linear` op, `y = a[c] * x + b[c]`, with `a` and `b`
/// computed once in double precision: its CPU program and GPU kernel.
///
/// The input has rank 2 or more (N, C, then any spatial axes); on the GPU,
/// rank 2 to 4. The four tensors and epsilon are kept as given, for
/// training (`TrainingBatchNormalization`, `BatchNormalization+Gradients`).
public final class BatchNormalization: Layer, Sendable {
    /// Per-channel multipliers `scale / sqrt(variance + epsilon)`.
    public let multipliers: [Float]
    /// Per-channel offsets `bias - mean * multipliers`.
    public let offsets: [Float]
    /// The catalog's Linear op with `multipliers` as its scale and `offsets` as its bias.
    let linear: FormulaChain
    /// ONNX `scale` as given (a copy): training updates it.
    public let scale: Tensor
    /// ONNX `B` as given (a copy): training updates it.
    public let bias: Tensor
    /// ONNX `input_mean` as given (a copy): the running mean.
    public let mean: Tensor
    /// ONNX `input_var` as given (a copy): the running variance.
    public let variance: Tensor
    /// epsilon.
    public let epsilon: Float

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
        try LayerChecks.requireEpsilon(epsilon, layer: "BatchNormalization")
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
        guard let definition = OpDefinition.catalog.first(where: { $0.name == "Linear" }) else {
            throw LayerKitError.unknownOp("BatchNormalization runs as the catalog's Linear op, which is missing")
        }
        self.multipliers = multipliers
        self.offsets = offsets
        let copy = { (t: Tensor) in try Tensor(shape: t.shape, values: t.values) }
        (self.scale, self.bias, self.mean, self.variance) = (try copy(scale), try copy(bias), try copy(mean), try copy(variance))
        self.epsilon = epsilon
        linear = FormulaChain(stages: [.init(name: "BatchNormalization", formula: definition.formula, scalars: [:],
                                             channelValues: ["scale": multipliers, "bias": offsets])])
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

    /// Linear's CPU program: one multiply-add pass per channel plane.
    public func evaluate(inputs: [Tensor], outputs: [Tensor]) throws {
        let shape = try outputShapes(forInputShapes: inputs.map(\.shape))[0]
        try LayerChecks.requireOutput(outputs, shape, layer: layerName)
        try linear.evaluate(inputs: inputs, outputs: outputs)
    }

    public var hasGPUImplementation: Bool { true }

    public func prepare(on context: GPUContext, inputShapes: [[Int]]) throws { try linear.prepare(on: context) }

    /// Linear's element-wise kernel, `a` and `b` as its per-channel weights.
    public func encode(commandBuffer: GPUCommandBuffer, inputs: [SliceImage], outputs: [SliceImage]) throws {
        guard inputs.count == 1, outputs.count == 1 else {
            throw LayerKitError.shapeMismatch("\(layerName) takes 1 input image and 1 output image")
        }
        try linear.encode(commandBuffer: commandBuffer, inputs: inputs, outputs: outputs)
    }
}
