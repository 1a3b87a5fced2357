/// What the backward passes of the structural layers (pools, Softmax, the
/// broadcasting binary ops, reshapes, Concat, Split, Transpose, Expand) share: checking a
/// step against the layer, and summing a broadcast gradient back to an
/// operand's shape through layers the runner places (the GPU when in use).
enum StructuralGradient {
    /// `step`'s gradient of output `output`, checked by `GradientStep`'s
    /// checks: `inputCount` inputs (nil: any) with as many
    /// `needsInputGradients`, one gradient slot per output, a gradient of
    /// the output's shape. Nil when the loss does not depend on that output
    /// (no zeros are made: the caller skips the work).
    static func outputGradient(_ step: GradientStep, of layer: Layer, output: Int = 0,
                               inputCount: Int? = nil) throws -> Tensor? {
        _ = try step.checkedInputs(inputCount ?? step.inputs.count, layer: layer.layerName)
        guard step.outputGradients.count == step.outputs.count, output < step.outputs.count,
              step.outputGradients[output] == nil else {
            return try step.checkedOutputGradient(output, layer: layer.layerName)
        }
        return nil
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
