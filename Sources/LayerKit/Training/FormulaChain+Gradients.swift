import Foundation

/// The backward pass of a per-element formula, shared by the catalog's ops
/// and fused chains: dLoss/dx = g * f'(x), the derivative formula run as a
/// per-element layer and the product as a `BinaryLayer(.mul)`, both through
/// the runner (so on the GPU when training there); a per-channel value's
/// gradient is the sum of g * df/dvalue(x) over the batch and spatial axes
/// (every axis but 1), on the CPU: each product exact in Double, summed in
/// Double in a fixed order (`ChannelPlanes.dots`), so a run repeated gives
/// the same bits; one pass over g and df/dvalue(x), with no product tensor.
extension FormulaChain {
    /// The gradients of `step` for a chain whose every input maps to the
    /// output of the same index. `roles` are composed value names (see
    /// `composedName`) with per-channel values; each gradient has one value
    /// per channel.
    func gradients(of step: GradientStep, roles: Set<String>, on runner: GradientRunner) throws -> LayerGradients {
        let stage = try composed()
        let derivatives = stage.formula.derivatives()
        var result = LayerGradients(inputs: Array(repeating: nil, count: step.inputs.count))
        guard step.inputs.count == step.outputGradients.count, step.inputs.count == step.needsInputGradients.count else {
            throw LayerKitError.invalidParameter(
                "\(name): backward step with \(step.inputs.count) inputs, \(step.outputGradients.count) output "
                + "gradients and \(step.needsInputGradients.count) input flags")
        }
        for (index, input) in step.inputs.enumerated() where step.needsInputGradients[index] {
            result.inputs[index] = try Self.gradientProduct(step.outputGradients[index], of: input,
                                                            times: derivatives[.input] ?? 0, stage, on: runner)
        }
        for role in roles.sorted() {
            guard let values = stage.channelValues[role] else {
                let known = stage.channelValues.keys.sorted()
                throw LayerKitError.invalidParameter(
                    "\(name) has no per-channel value '\(role)' to train (its per-channel values: "
                    + (known.isEmpty ? "none" : known.joined(separator: ", ")) + ")")
            }
            var total = [Double](repeating: 0, count: values.count)
            for (index, input) in step.inputs.enumerated() {
                guard let gradient = step.outputGradients[index] else { continue }
                let slope = try Self.slope(of: input, derivative: derivatives[.value(role)] ?? 0, gradient: gradient,
                                           stage, on: runner)
                // A rank-0 or 1 input's values are one channel.
                let planes = ChannelPlanes(input.shape.count < 2 ? [1, 1, input.count] : input.shape)
                guard planes.channels == values.count else {
                    throw LayerKitError.shapeMismatch("\(stage.name): \(values.count) values of '\(role)' for "
                                                      + "\(planes.channels) channels")
                }
                let sums = runner.cpu("\(stage.name)' times the gradient, summed per channel") {
                    planes.dots(gradient, slope)
                }
                for c in total.indices { total[c] += sums[c] }
            }
            result.parameters[role] = try Tensor(shape: [values.count], values: total.map { Float($0) })
        }
        return result
    }

    /// `gradient * derivative(input)` elementwise; zeros for a nil
    /// (zero) gradient.
    private static func gradientProduct(_ gradient: Tensor?, of input: Tensor, times derivative: Expr,
                                        _ stage: Stage, on runner: GradientRunner) throws -> Tensor {
        guard let gradient else { return try Tensor(shape: input.shape) }
        let slope = try slope(of: input, derivative: derivative, gradient: gradient, stage, on: runner)
        return try runner.run(BinaryLayer(.mul), [gradient, slope])[0]
    }

    /// `derivative(input)` elementwise, for an output gradient of the input's shape.
    private static func slope(of input: Tensor, derivative: Expr, gradient: Tensor, _ stage: Stage,
                              on runner: GradientRunner) throws -> Tensor {
        guard gradient.shape == input.shape else {
            throw LayerKitError.shapeMismatch("\(stage.name): output gradient of shape \(Tensor.describe(gradient.shape)) "
                                              + "for an output of shape \(Tensor.describe(input.shape))")
        }
        let layer = try ElementwiseLayer(derivative: derivative, of: stage)
        return try runner.run(layer, [input])[0]
    }
}

extension ElementwiseLayer {
    /// A layer computing `derivative`, a derivative of `stage`'s formula,
    /// with the stage's values bound (scalars as parameters, per-channel
    /// values as weights).
    convenience init(derivative: Expr, of stage: FormulaChain.Stage) throws {
        let names = derivative.valueNames
        let values: [OpDefinition.Value] = names.map { name in
            stage.channelValues[name] != nil ? .weight(name) : .parameter(name, stage.scalars[name] ?? 0)
        }
        let definition = OpDefinition("\(stage.name)'", values: values, formula: derivative)
        try self.init(definition: definition, parameters: [:])
        let blobs = definition.weightNames.map { name in
            (stage.channelValues[name] ?? []).withUnsafeBufferPointer { Data(buffer: $0) }
        }
        if !blobs.isEmpty { try setWeightData(blobs) }
    }
}
