/// The backward pass of Softmax, LogSoftmax and Hardmax (no parameters),
/// along the layer's axis (or the axes from it on, flattened, before opset
/// 13). Softmax: dx = y * (g - sum(g * y)); LogSoftmax: dx = g -
/// softmax(x) * sum(g); Hardmax is constant almost everywhere: dx = 0.
///
/// Built of layers the runner places: BinaryLayer products and differences
/// (the GPU when in use), ReduceSum (its GPU form along axis 1 of a rank-2
/// to rank-4 tensor, double precision on the CPU otherwise) and, for
/// LogSoftmax, the Softmax itself.
extension Softmax: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self, inputCount: 1), kind != .hardmax else {
            return try StructuralGradient.zeroGradients(step)
        }
        guard step.needsInputGradients[0] else { return LayerGradients(inputs: [nil]) }
        let (x, y) = (step.inputs[0], step.outputs[0])
        let rank = x.shape.count
        let sum = try Reduce(.sum, axes: flattensTrailingAxes ? Array(axis..<rank) : [axis], keepDims: true, rank: rank)
        let dx: Tensor
        if kind == .softmax {
            let gy = try runner.run(sum, [StructuralGradient.binary(.mul, g, y, on: runner)])[0]
            dx = try StructuralGradient.binary(.mul, y, StructuralGradient.binary(.sub, g, gy, on: runner), on: runner)
        } else {
            let probabilities = try runner.run(Softmax(axis: axis, flattensTrailingAxes: flattensTrailingAxes), [x])[0]
            let total = try runner.run(sum, [g])[0]
            dx = try StructuralGradient.binary(.sub, g, StructuralGradient.binary(.mul, probabilities, total, on: runner),
                                               on: runner)
        }
        return LayerGradients(inputs: [dx])
    }
}
