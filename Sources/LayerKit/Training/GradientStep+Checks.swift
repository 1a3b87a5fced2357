/// The checks the dense layers' backward passes make of a step before any
/// arithmetic, so a trainer bug surfaces as an error naming the layer.
extension GradientStep {
    /// The forward inputs, which must be `count` tensors.
    func checkedInputs(_ count: Int, layer: String) throws -> [Tensor] {
        guard inputs.count == count, needsInputGradients.count == count else {
            throw LayerKitError.shapeMismatch(
                "\(layer) backward: \(inputs.count) forward inputs and \(needsInputGradients.count) input-gradient flags "
                + "given, the layer has \(count) input(s)")
        }
        return inputs
    }

    /// dLoss/dOutput `index`, of the forward output's shape; zeros where the
    /// step gives none (the loss does not depend on that output). Throws
    /// `LayerKitError.shapeMismatch` for a gradient of another shape.
    func checkedOutputGradient(_ index: Int, layer: String) throws -> Tensor {
        guard index < outputs.count, outputGradients.count == outputs.count else {
            throw LayerKitError.shapeMismatch(
                "\(layer) backward: \(outputGradients.count) output gradients for \(outputs.count) forward outputs")
        }
        let shape = outputs[index].shape
        guard let gradient = outputGradients[index] else { return try Tensor(shape: shape) }
        guard gradient.shape == shape else {
            throw LayerKitError.shapeMismatch(
                "\(layer) backward: the gradient of output \(index) is \(Tensor.describe(gradient.shape)); the output is "
                + "\(Tensor.describe(shape)) and its gradient must have that shape")
        }
        return gradient
    }

    /// Whether input `index` needs its gradient.
    func needsGradient(ofInput index: Int) -> Bool {
        index < needsInputGradients.count && needsInputGradients[index]
    }
}

/// The checks of `replacingParameters(_:)`: every role named is one of the
/// layer's and each value has its parameter's shape.
extension DifferentiableLayer {
    /// `values` checked against `trainableParameters`; returns, per role of
    /// the layer, the value to use (the new one, or the current one).
    func checkedReplacements(_ values: [String: Tensor]) throws -> [String: Tensor] {
        let parameters = trainableParameters
        var result: [String: Tensor] = [:]
        for parameter in parameters { result[parameter.role] = parameter.value }
        for (role, value) in values {
            guard let current = result[role] else {
                throw LayerKitError.invalidParameter(
                    "\(layerName): no trainable parameter \"\(role)\" (it has "
                    + (parameters.isEmpty ? "none" : parameters.map { "\"\($0.role)\"" }.joined(separator: ", ")) + ")")
            }
            guard value.shape == current.shape else {
                throw LayerKitError.shapeMismatch(
                    "\(layerName): parameter \"\(role)\" must keep its shape \(Tensor.describe(current.shape)), got "
                    + "\(Tensor.describe(value.shape))")
            }
            result[role] = value
        }
        return result
    }
}
