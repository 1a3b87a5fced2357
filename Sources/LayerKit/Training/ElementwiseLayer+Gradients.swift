import Foundation

/// The catalog's ops, `Swish`, `FormulaLayer`, the ONNX element-wise ops and
/// custom layers registered as formulas backpropagate through the
/// derivatives of their one formula (`Expr.derivatives()`; conventions there).
///
/// Trainable: the per-channel values (weights set through `setWeightData`),
/// role = the value's name, node input 1, 2, ... in `definition.weightNames`
/// order, value of shape [C]. A scalar parameter (an attribute, `--param`)
/// has no role: it is part of the op's declaration, not a weight; to train
/// one, give it per channel.
extension ElementwiseLayer: DifferentiableLayer {
    var trainableParameters: [TrainableParameter] {
        definition.weightNames.enumerated().compactMap { index, name in
            guard let values = channelValues[name], let tensor = try? Tensor(shape: [values.count], values: values) else {
                return nil
            }
            return TrainableParameter(role: name, nodeInput: index + 1, value: tensor)
        }
    }

    /// A layer of the same kind (`Swish`, `FormulaLayer`, or the op's
    /// `ElementwiseLayer`; a subclass from outside LayerKit comes back as its
    /// op's `ElementwiseLayer`) with the same formula and scalars, and `values`
    /// in place of the per-channel values they name. Each value must have one
    /// element per channel, as the one it replaces, and be finite.
    func replacingParameters(_ values: [String: Tensor]) throws -> Layer {
        for (role, tensor) in values {
            guard let current = channelValues[role] else {
                let known = trainableParameters.map(\.role)
                throw LayerKitError.invalidParameter(
                    "\(layerName): no trainable parameter '\(role)' (its parameters: "
                    + (known.isEmpty ? "none" : known.joined(separator: ", ")) + ")")
            }
            guard tensor.count == current.count else {
                throw LayerKitError.shapeMismatch(
                    "\(layerName) '\(role)': \(tensor.count) values for \(current.count) channels")
            }
        }
        let copy: ElementwiseLayer
        switch self {
        case let formula as FormulaLayer:
            copy = try FormulaLayer(formula: formula.text, name: definition.name, parameters: scalars,
                                    weightNames: definition.weightNames)
        case is Swish:
            copy = try Swish(parameters: scalars)
        default:
            var parameters: [String: Any] = scalars
            if let choice = definition.choice, let option = choice.options.first(where: { $0.formula == formula }) {
                parameters[choice.name] = option.word
            }
            copy = try ElementwiseLayer(definition: definition, parameters: parameters)
        }
        let blobs = definition.weightNames.map { name in
            (values[name]?.values ?? channelValues[name] ?? []).withUnsafeBufferPointer { Data(buffer: $0) }
        }
        if !channelValues.isEmpty { try copy.setWeightData(blobs) }
        return copy
    }

    /// dLoss/dx = g * f'(x) per input; for each role asked, the sum of
    /// g * df/dvalue(x) over every axis but the channel axis (1).
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        try chain.gradients(of: step, roles: step.parameterRoles, on: runner)
    }
}

/// A fused chain backpropagates through the chain rule over its stages as
/// one formula (`FormulaChain.derivative`): dLoss/dx = g * (dy/dx)(x), one
/// per-element layer and one product. It has no trainable parameters: its
/// stages' values came from several nodes; train the layers unfused (as the
/// trainer imports models). A chain whose composed formula is too large to
/// differentiate as one throws, saying so.
extension FusedLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard step.parameterRoles.isEmpty else {
            throw LayerKitError.invalidParameter(
                "\(layerName): a fused layer has no trainable parameters, asked for "
                + step.parameterRoles.sorted().joined(separator: ", "))
        }
        return try chain.gradients(of: step, roles: [], on: runner)
    }
}
