/// The backward passes of the layers that only move elements (no
/// parameters), each the inverse movement of the gradient, run as a layer
/// through the runner (the GPU when in use): Reshape, Flatten, Squeeze and
/// Unsqueeze (`ReshapeLayer`) reshape it back to the input's shape; Concat
/// splits it along its axis into the inputs' extents (`SplitLayer`);
/// Transpose permutes it by the inverse permutation; Split joins its
/// outputs' gradients (`ConcatLayer`); Expand sums it back to the input's shape.
extension ReshapeLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self, inputCount: 1) else {
            return try StructuralGradient.zeroGradients(step)
        }
        guard step.needsInputGradients[0] else { return LayerGradients(inputs: [nil]) }
        let back = try ReshapeLayer(outputShape: step.inputs[0].shape, name: layerName)
        return LayerGradients(inputs: [try runner.run(back, [g])[0]])
    }
}

extension ConcatLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self) else {
            return try StructuralGradient.zeroGradients(step)
        }
        guard step.needsInputGradients.contains(true) else {
            return LayerGradients(inputs: Array(repeating: nil, count: step.inputs.count))
        }
        let parts = try runner.run(SplitLayer(axis: axis, sizes: step.inputs.map { $0.shape[axis] }), [g])
        return LayerGradients(inputs: zip(parts, step.needsInputGradients).map { $1 ? $0 : nil })
    }
}

extension TransposeLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self, inputCount: 1) else {
            return try StructuralGradient.zeroGradients(step)
        }
        guard step.needsInputGradients[0] else { return LayerGradients(inputs: [nil]) }
        // Output axis k is input axis perm[k], so input axis perm[k] is the gradient's axis k.
        var inverse = Array(repeating: 0, count: perm.count)
        for (k, axis) in perm.enumerated() { inverse[axis] = k }
        return LayerGradients(inputs: [try runner.run(TransposeLayer(perm: inverse), [g])[0]])
    }
}

/// Split's backward: the outputs' gradients joined along its axis (`ConcatLayer`),
/// zeros for an output the loss does not depend on.
extension SplitLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        let parts = try step.outputs.indices.map { k in
            try StructuralGradient.outputGradient(step, of: self, output: k, inputCount: 1)
        }
        guard parts.contains(where: { $0 != nil }) else { return try StructuralGradient.zeroGradients(step) }
        guard step.needsInputGradients[0] else { return LayerGradients(inputs: [nil]) }
        let gradients = try zip(parts, step.outputs).map { part, output in try part ?? Tensor(shape: output.shape) }
        return LayerGradients(inputs: [try runner.run(ConcatLayer(axis: axis), gradients)[0]])
    }
}

/// Expand's backward: the gradient summed over the axes the input was
/// broadcast along (`StructuralGradient.sum`).
extension ExpandLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self, inputCount: 1) else {
            return try StructuralGradient.zeroGradients(step)
        }
        guard step.needsInputGradients[0] else { return LayerGradients(inputs: [nil]) }
        return LayerGradients(inputs: [try StructuralGradient.sum(g, toShape: step.inputs[0].shape, on: runner)])
    }
}
