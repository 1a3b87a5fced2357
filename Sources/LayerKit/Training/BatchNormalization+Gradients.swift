/// The backward pass of BatchNormalization in frozen (inference) mode: the
/// running statistics are constants, so with r = 1 / sqrt(variance + epsilon)
/// and y = scale * (x - mean) * r + B per channel,
/// dL/dx = dL/dy * scale * r (the layer's own multipliers, run through the
/// runner as a per-channel scaling: on the GPU when training there),
/// dL/dscale = sum(dL/dy * (x - mean) * r) and dL/dB = sum(dL/dy) over the
/// batch and spatial axes, in Double on the CPU.
extension BatchNormalization: DifferentiableLayer {
    /// `scale` (node input 1) and `B` (node input 2), of the shapes given.
    var trainableParameters: [TrainableParameter] { Self.affineParameters(scale: scale, bias: bias) }

    /// `scale` (node input 1) and `B` (node input 2): what both modes train.
    static func affineParameters(scale: Tensor, bias: Tensor) -> [TrainableParameter] {
        [TrainableParameter(role: "scale", nodeInput: 1, value: scale),
         TrainableParameter(role: "B", nodeInput: 2, value: bias)]
    }

    /// The same running statistics and epsilon with the new scale and/or B.
    func replacingParameters(_ values: [String: Tensor]) throws -> Layer {
        let values = try checkedReplacements(values)
        return try BatchNormalization(scale: values["scale"] ?? scale, bias: values["B"] ?? bias, mean: mean,
                                      variance: variance, epsilon: epsilon)
    }

    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        let x = try step.checkedInputs(1, layer: layerName)[0]
        _ = try outputShapes(forInputShapes: [x.shape])
        let dy = try step.checkedOutputGradient(0, layer: layerName)
        var result = LayerGradients(inputs: [nil])
        let channels = multipliers.count
        if step.needsGradient(ofInput: 0) {
            // y' = multipliers * x exactly: mean 0, variance 1, epsilon 0, B 0.
            let zeros = try Tensor(shape: [channels]), ones = try Tensor(shape: [channels], values: .init(repeating: 1, count: channels))
            let scaling = try BatchNormalization(scale: Tensor(shape: [channels], values: multipliers), bias: zeros,
                                                 mean: zeros, variance: ones, epsilon: 0)
            result.inputs[0] = try runner.run(scaling, [dy])[0]
        }
        if !step.parameterRoles.isDisjoint(with: ["scale", "B"]) {
            let (mean, variance, epsilon) = (mean, variance, Double(epsilon))
            let sums = runner.cpu("BatchNormalization scale and B gradients (channel sums)") {
                ChannelPlanes(x.shape).sums(dy, x) { c in
                    (Double(mean[c]), 1 / (Double(variance[c]) + epsilon).squareRoot())
                }
            }
            if step.parameterRoles.contains("scale") {
                result.parameters["scale"] = try Tensor(shape: scale.shape, values: sums.map { Float($0.gradientTimesNormalized) })
            }
            if step.parameterRoles.contains("B") {
                result.parameters["B"] = try Tensor(shape: bias.shape, values: sums.map { Float($0.gradient) })
            }
        }
        return result
    }
}
