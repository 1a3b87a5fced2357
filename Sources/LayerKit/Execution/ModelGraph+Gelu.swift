/// GELU as the exporters write it before opset 20, one step: the catalog's
/// `Gelu`, one pass over memory instead of five to eight (Whisper-base's
/// encoder: 30 ms of per-element passes at one thread, onnxruntime's fused
/// Gelu 14 ms), and a per-element stage an epilogue can take in after a
/// Conv or Gemm (Whisper's stem convolution).
///
/// The forms matched, operands of Add and Mul in either order:
/// - erf (`nn.GELU()`, BERT, ViT, Whisper, ConvNeXt):
///   `x * (1 + erf(x / sqrt(2))) * 0.5`, or `(x * 0.5) * (1 + erf(...))`,
///   `x / sqrt(2)` also as `x * (1 / sqrt(2))`;
/// - tanh (GPT-2's `gelu_new`): `(x * 0.5) * (1 + tanh(sqrt(2 / pi) *
///   (x + 0.044715 * x^3)))` or the `* 0.5` last, `x^3` as Pow(x, 3).
///
/// Each value in between must have one reader and not be a graph output,
/// and each constant must be within float32 rounding of its exact value.
/// The fused step computes the catalog's formula, so its result differs
/// from the unfused nodes' by rounding only (a few units in the last place;
/// onnxruntime's fused Gelu differs from them likewise).
extension ModelGraph {
    /// Replaces each matched GELU by one `Gelu` step (domain "", the
    /// standard op's name) named after its Erf or Tanh node, at the last
    /// replaced step's place.
    mutating func fuseGelus() {
        let (readers, isOutput) = self.readers()
        let match = GeluMatch(graph: self, readers: readers, isOutput: isOutput, makers: makers())
        var removed = Set<Int>()
        for (index, step) in steps.enumerated() {
            guard let found = match.gelu(at: index), removed.isDisjoint(with: found.steps),
                  let gelu = try? ElementwiseLayer(definition: GeluMatch.definition,
                                                   parameters: found.tanh ? ["approximate": "tanh"] : [:])
            else { continue }
            let last = found.steps.max() ?? index
            steps[last] = Step(name: step.name, opType: "Gelu", domain: "", layer: gelu, inputs: [found.input],
                               outputs: steps[last].outputs)
            removed.formUnion(found.steps.filter { $0 != last })
        }
        removeSteps(at: removed)
    }
}

/// The matching half of `ModelGraph.fuseGelus()`: walks from an Erf or
/// Tanh step to the GELU around it.
private struct GeluMatch {
    static let definition = OpDefinition.catalog.first { $0.name == "Gelu" }!

    let graph: ModelGraph
    let readers: [[Int]]
    let isOutput: [Bool]
    let makers: [Int: Int]

    /// The GELU whose Erf or Tanh is step `index`: its steps, its input
    /// value, and whether it is the tanh form.
    func gelu(at index: Int) -> (steps: [Int], input: Int, tanh: Bool)? {
        let step = graph.steps[index]
        guard let unary = step.layer as? ElementwiseLayer, type(of: unary) == ElementwiseLayer.self,
              ["Erf", "Tanh"].contains(unary.definition.name), step.inputs.count == 1, step.outputs.count == 1,
              let argument = inner(step.inputs[0], reader: index) else { return nil }
        let tanh = unary.definition.name == "Tanh"
        var steps = [index, argument.step]
        let x: Int
        if tanh {
            // sqrt(2 / pi) * (x + 0.044715 * x^3)
            guard let scaled = scalarOperand(argument.step, .mul, Float((2 / Double.pi).squareRoot())),
                  let sum = inner(scaled, reader: argument.step), let (a, b) = binary(sum.step, .add),
                  let term = [(a, b), (b, a)].lazy.compactMap({ value, cube in
                      cubeTerm(cube, reader: sum.step).flatMap { $0.base == value ? $0 : nil }
                  }).first else { return nil }
            x = term.base
            steps += [sum.step] + term.steps
        } else {
            // x / sqrt(2), or x * (1 / sqrt(2))
            guard let value = scalarOperand(argument.step, .div, Float(2.0.squareRoot()))
                    ?? scalarOperand(argument.step, .mul, Float(1 / 2.0.squareRoot())) else { return nil }
            x = value
        }
        guard let tail = halfTimesOnePlus(step.outputs[0], x: x) else { return nil }
        return (steps + tail, x, tanh)
    }

    /// `(1 + f) * x * 0.5` in either of the two orders: the Add and the
    /// Muls, the last one making the result.
    private func halfTimesOnePlus(_ f: Int, x: Int) -> [Int]? {
        guard let plus = onlyReader(of: f), scalarOperand(plus, .add, 1) == f,
              let product = onlyReader(of: graph.steps[plus].outputs[0]), let mul = binary(product, .mul),
              let (other, _) = split(mul, by: { $0 == graph.steps[plus].outputs[0] }) else { return nil }
        if other == x {
            // (x * (1 + f)) * 0.5
            guard let half = onlyReader(of: graph.steps[product].outputs[0]),
                  scalarOperand(half, .mul, 0.5) == graph.steps[product].outputs[0] else { return nil }
            return [plus, product, half]
        }
        // (x * 0.5) * (1 + f)
        guard let halfStep = inner(other, reader: product)?.step, scalarOperand(halfStep, .mul, 0.5) == x
        else { return nil }
        return [plus, halfStep, product]
    }

    /// 0.044715 * x^3, x^3 as Pow(x, 3) or (x * x) * x, when `reader`
    /// alone reads `value`: its steps and x.
    private func cubeTerm(_ value: Int, reader: Int) -> (steps: [Int], base: Int)? {
        guard let scale = inner(value, reader: reader)?.step, let cube = scalarOperand(scale, .mul, 0.044715),
              let cubeStep = inner(cube, reader: scale)?.step else { return nil }
        let step = graph.steps[cubeStep]
        if let pow = step.layer as? ElementwiseLayer, type(of: pow) == ElementwiseLayer.self,
           pow.definition.name == "Pow", pow.scalars["exponent"] == 3, step.inputs.count == 1 {
            return ([scale, cubeStep], step.inputs[0])
        }
        guard let (a, b) = binary(cubeStep, .mul) else { return nil }
        for (square, base) in [(a, b), (b, a)] {
            if let squareStep = inner(square, reader: cubeStep)?.step, let (p, q) = binary(squareStep, .mul),
               p == base, q == base {
                return ([scale, cubeStep, squareStep], base)
            }
        }
        return nil
    }

    /// The value step `reader` reads, when it is read by that step alone,
    /// is not a graph output, and is made by a step: with its maker.
    private func inner(_ value: Int, reader: Int) -> (value: Int, step: Int)? {
        guard readers[value] == [reader], !isOutput[value], let step = makers[value] else { return nil }
        return (value, step)
    }

    /// The one step reading `value`, when there is one and `value` is no
    /// graph output.
    private func onlyReader(of value: Int) -> Int? {
        guard readers[value].count == 1, !isOutput[value] else { return nil }
        return readers[value][0]
    }

    /// A two-input BinaryLayer step of `operation` on two computed values
    /// of the output's shape: its operands.
    private func binary(_ index: Int, _ operation: BinaryLayer.Operation) -> (Int, Int)? {
        let step = graph.steps[index]
        guard let layer = step.layer as? BinaryLayer, layer.operation == operation, layer.inputCount == 2,
              !layer.average, step.inputs.count == 2, step.outputs.count == 1,
              step.inputs.allSatisfy({ graph.values[$0].constant == nil
                  && graph.values[$0].shape == graph.values[step.outputs[0]].shape }) else { return nil }
        return (step.inputs[0], step.inputs[1])
    }

    /// The operands of `pair` with the one `isSecond` picks second.
    private func split(_ pair: (Int, Int), by isSecond: (Int) -> Bool) -> (Int, Int)? {
        if isSecond(pair.1) { return (pair.0, pair.1) }
        if isSecond(pair.0) { return (pair.1, pair.0) }
        return nil
    }

    /// The computed operand of a BinaryLayer step of `operation` whose other
    /// operand is one constant value within float32 rounding of `constant`
    /// (Div only as value / constant), of the output's shape.
    private func scalarOperand(_ index: Int, _ operation: BinaryLayer.Operation, _ constant: Float) -> Int? {
        let step = graph.steps[index]
        guard let layer = step.layer as? BinaryLayer, layer.operation == operation, layer.inputCount == 2,
              !layer.average, step.inputs.count == 2, step.outputs.count == 1 else { return nil }
        let positions = operation == .div ? [1] : [0, 1]
        for k in positions {
            let (c, v) = (step.inputs[k], step.inputs[1 - k])
            guard let tensor = graph.values[c].constant, tensor.count == 1, graph.values[v].constant == nil,
                  graph.values[v].shape == graph.values[step.outputs[0]].shape,
                  abs(tensor[0] - constant) <= 4 * constant.ulp else { continue }
            return v
        }
        return nil
    }
}
