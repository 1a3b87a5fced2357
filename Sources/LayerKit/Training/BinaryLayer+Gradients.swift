/// The backward pass of the broadcasting element-wise ops (no parameters:
/// every operand is a graph value, a constant one such as a bias included,
/// and each gets its gradient like any input, so a trainer can train it).
///
/// Each input's gradient is its share of dLoss/dOutput summed over the axes
/// along which the input was broadcast, so it has the input's shape:
/// - `Add`, `Sum`: g; `Mean`: g / n; `Sub`: g and -g;
/// - `Mul`: g * b and g * a; `Div` (y = a / b): g / b and -(g / b) * y;
/// - `Max`, `Min` (two or more inputs, folded left to right as the forward
///   pass does): all of g to the input holding the result, a tie going to
///   the first input (an input replaces the running result only when
///   strictly greater, or smaller);
/// - the comparisons and logic ops give 1 or 0, constant almost everywhere:
///   zero gradients.
/// `Pow`, `Mod` and `PRelu` have no backward pass here (an error names them).
///
/// The products, masks and differences run as `BinaryLayer`s and the sums
/// as `Reduce`'s ReduceSum through the runner: on the GPU when in use (a
/// lower-rank operand is given leading 1s first, so the shader can read
/// it), see `StructuralGradient.sum` for which sums do.
extension BinaryLayer: ParameterFreeGradients {
    func gradients(of step: GradientStep, on runner: GradientRunner) throws -> LayerGradients {
        guard let g = try StructuralGradient.outputGradient(step, of: self, inputCount: inputCount) else {
            return try StructuralGradient.zeroGradients(step)
        }
        let x = step.inputs, needs = step.needsInputGradients
        let rank = g.shape.count
        var result = LayerGradients(inputs: Array(repeating: nil, count: x.count))
        func binary(_ operation: Operation, _ a: Tensor, _ b: Tensor) throws -> Tensor {
            try StructuralGradient.binary(operation, a, b, on: runner)
        }
        /// `t` (of the output's shape) summed to input `k`'s shape, `scale` times.
        func give(_ t: Tensor, to k: Int, scale: Float = 1) throws {
            var sum = try StructuralGradient.sum(t, toShape: x[k].shape, on: runner)
            if scale != 1 {
                sum = try binary(.mul, sum, StructuralGradient.scalar(scale, rank: sum.shape.count))
            }
            result.inputs[k] = sum
        }
        switch operation {
        case .add:
            let share = average && x.count > 1
                ? try binary(.mul, g, StructuralGradient.scalar(Float(1 / Double(x.count)), rank: rank)) : g
            for k in x.indices where needs[k] { try give(share, to: k) }
        case .sub:
            if needs[0] { try give(g, to: 0) }
            if needs[1] { try give(g, to: 1, scale: -1) }
        case .mul:
            if needs[0] { try give(binary(.mul, g, x[1]), to: 0) }
            if needs[1] { try give(binary(.mul, g, x[0]), to: 1) }
        case .div:
            guard needs[0] || needs[1] else { break }
            let share = try binary(.div, g, x[1])
            if needs[0] { try give(share, to: 0) }
            if needs[1] { try give(binary(.mul, share, step.outputs[0]), to: 1, scale: -1) }
        case .max, .min:
            try giveToExtremes(g, x, needs, on: runner, give: give)
        case .equal, .less, .greater, .lessOrEqual, .greaterOrEqual, .and, .or, .xor:
            return try StructuralGradient.zeroGradients(step)
        case .pow, .mod, .fmod, .prelu:
            throw LayerKitError.unsupported(
                "\(layerName) has no backward pass: LayerKit cannot train through it (Add, Sub, Mul, Div, Max, Min, Sum "
                + "and Mean can; a constant exponent's Pow and a per-channel PRelu import as formulas, which can)")
        }
        return result
    }

    /// Max and Min: the running result folded left to right, input k taking
    /// it where strictly greater (smaller); g goes to the last input that
    /// took it, else to input 0 (the first of tied inputs keeps it).
    private func giveToExtremes(_ g: Tensor, _ x: [Tensor], _ needs: [Bool], on runner: GradientRunner,
                                give: (Tensor, Int, Float) throws -> Void) throws {
        guard x.count > 1 else {
            if needs[0] { try give(g, 0, 1) }
            return
        }
        func binary(_ operation: Operation, _ a: Tensor, _ b: Tensor) throws -> Tensor {
            try StructuralGradient.binary(operation, a, b, on: runner)
        }
        // takes[k]: 1 where input k replaced the result of inputs 0..<k.
        var takes: [Tensor] = []
        var running = x[0]
        for k in 1..<x.count {
            takes.append(try binary(operation == .max ? .greater : .less, x[k], running))
            if k < x.count - 1 { running = try binary(operation, running, x[k]) }
        }
        // Walking back from the last input: each gets g where it took the
        // result and no later input did.
        var untaken = try StructuralGradient.scalar(1, rank: g.shape.count)
        for k in (1..<x.count).reversed() {
            let mask = try binary(.mul, takes[k - 1], untaken)
            if needs[k] { try give(binary(.mul, g, mask), k, 1) }
            guard k > 1 || needs[0] else { break }
            untaken = try binary(.sub, untaken, mask)
        }
        if needs[0] { try give(binary(.mul, g, untaken), 0, 1) }
    }
}
