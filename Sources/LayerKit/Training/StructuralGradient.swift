/// What the backward passes of the structural layers (pools, Softmax, the
/// broadcasting binary ops, reshapes, Concat, Transpose) share: checking a
/// step against the layer, and summing a broadcast gradient back to an
/// operand's shape through layers the runner places (the GPU when in use).
enum StructuralGradient {
    /// `step`'s gradient of output `output`, checked: the step must have
    /// `inputCount` inputs (nil: any) with as many `needsInputGradients`, and
    /// the gradient, when there is one, the output's shape. Nil when the loss
    /// does not depend on that output.
    static func outputGradient(_ step: GradientStep, of layer: Layer, output: Int = 0,
                               inputCount: Int? = nil) throws -> Tensor? {
        let name = layer.layerName
        if let inputCount, step.inputs.count != inputCount {
            throw LayerKitError.shapeMismatch(
                "\(name) backward: \(step.inputs.count) forward inputs given, the layer takes \(inputCount)")
        }
        guard step.needsInputGradients.count == step.inputs.count else {
            throw LayerKitError.shapeMismatch("\(name) backward: \(step.needsInputGradients.count) input-gradient "
                + "flags for \(step.inputs.count) inputs")
        }
        guard step.outputGradients.count == step.outputs.count, output < step.outputs.count else {
            throw LayerKitError.shapeMismatch("\(name) backward: \(step.outputGradients.count) output gradients for "
                + "\(step.outputs.count) outputs (output \(output) is needed)")
        }
        guard let gradient = step.outputGradients[output] else { return nil }
        let shape = step.outputs[output].shape
        guard gradient.shape == shape else {
            throw LayerKitError.shapeMismatch(
                "\(name) backward: the gradient of output \(output) is \(Tensor.describe(gradient.shape)), but the "
                + "output is \(Tensor.describe(shape)); a gradient has the shape of what it is the gradient of")
        }
        return gradient
    }

    /// `layer` itself: it holds no parameters. Throws when `values` names any
    /// (a role the layer does not have).
    static func noParameters(_ values: [String: Tensor], layer: Layer) throws -> Layer {
        guard values.isEmpty else {
            throw LayerKitError.invalidParameter("\(layer.layerName) holds no trainable parameters, but values were "
                + "given for \(values.keys.sorted().joined(separator: ", "))")
        }
        return layer
    }

    /// Zero gradients for the inputs that need one (the loss does not
    /// depend on the layer's output), nil for the others.
    static func zeroGradients(_ step: GradientStep) throws -> LayerGradients {
        LayerGradients(inputs: try zip(step.inputs, step.needsInputGradients).map { input, needed in
            needed ? try Tensor(shape: input.shape) : nil
        })
    }

    /// A tensor of one element, `value`, of rank `rank` (every extent 1):
    /// an operand the broadcasting shader reads at any rank.
    static func scalar(_ value: Float, rank: Int) throws -> Tensor {
        try Tensor(shape: Array(repeating: 1, count: rank), values: [value])
    }

    /// `a operation b`, broadcast, run by `runner`. An operand of lower rank
    /// than the other is given leading 1s first (a copy): the GPU form reads
    /// operands of the output's rank only.
    static func binary(_ operation: BinaryLayer.Operation, _ a: Tensor, _ b: Tensor,
                       on runner: GradientRunner) throws -> Tensor {
        let rank = max(a.shape.count, b.shape.count)
        func padded(_ t: Tensor) throws -> Tensor {
            t.shape.count == rank ? t : try t.reshaped(to: Array(repeating: 1, count: rank - t.shape.count) + t.shape)
        }
        return try runner.run(BinaryLayer(operation), [padded(a), padded(b)])[0]
    }

    /// `gradient` (of a broadcast result's shape) summed over the axes along
    /// which an operand of `shape` was broadcast, so it has `shape`: the
    /// gradient of that operand (a new tensor, a copy when nothing is summed).
    /// The sum is `Reduce`'s ReduceSum through `runner`: on the GPU when the
    /// axes are one of its GPU forms (every axis after the channel axis of a
    /// rank-3 or rank-4 gradient, or the channel axis alone), else on the CPU
    /// in double precision. Not split into a GPU part and a CPU part: partial
    /// sums stored in fp16 and then added lose what cancels (a per-channel
    /// bias's [N, C, 1, 1] partial sums were 1.6x the parity allowance off).
    static func sum(_ gradient: Tensor, toShape shape: [Int], on runner: GradientRunner) throws -> Tensor {
        let full = gradient.shape
        let rank = full.count
        guard shape.count <= rank else {
            throw LayerKitError.shapeMismatch("an operand of \(Tensor.describe(shape)) cannot broadcast to "
                + "\(Tensor.describe(full))")
        }
        let padded = Array(repeating: 1, count: rank - shape.count) + shape
        var axes: [Int] = []
        for axis in 0..<rank where padded[axis] != full[axis] {
            guard padded[axis] == 1 else {
                throw LayerKitError.shapeMismatch("an operand of \(Tensor.describe(shape)) cannot broadcast to "
                    + "\(Tensor.describe(full))")
            }
            axes.append(axis)
        }
        // A copy even when nothing is summed: the result is never the caller's tensor.
        guard !axes.isEmpty else { return try gradient.reshaped(to: shape) }
        let summed = try runner.run(Reduce(.sum, axes: axes, keepDims: true, rank: rank), [gradient])[0]
        return summed.shape == shape ? summed : try summed.reshaped(to: shape)
    }
}
