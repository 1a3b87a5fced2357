/// SiLU as the exporters write it, `Mul(x, Sigmoid(x))`, one step: the
/// catalog's `Swish` with beta 1 (ONNX's own Swish op, opset 24, makes the
/// same step), which runs as one fused C kernel on the CPU. The two
/// unfused passes cost more than the fused kernel's one even inside a
/// convolution's epilogue, where both run on data in cache: the accurate
/// sigmoid alone is 0.46 ms on 96 x 112 x 112 floats at one thread, the
/// Swish kernel 0.31 (`OpBench --op Sigmoid|Swish --shape 1x96x112x112`),
/// and EfficientNet-B0 has 49 of them. As a per-element step, an epilogue
/// after a Conv or Gemm takes it in like any other.
///
/// The Sigmoid's output must have the Mul as its only reader and not be a
/// graph output; the Mul must read x and the sigmoid (either order) of the
/// same shape. The fused step computes `x / (1 + exp(-x))` (lk_swish.c),
/// so its result differs from the unfused nodes' by rounding only (about
/// 3e-7 relative; onnxruntime's QuickGelu fusion makes the same trade).
extension ModelGraph {
    /// Replaces each matched SiLU by one `Swish` step (domain "", ONNX's
    /// name for it) named after its Mul node, at the Mul's place.
    mutating func fuseSilus() {
        guard let definition = Swish.definition else { return }
        let (readers, isOutput) = self.readers()
        var removed = Set<Int>()
        for (index, step) in steps.enumerated() {
            guard let sigmoid = step.layer as? ElementwiseLayer, type(of: sigmoid) == ElementwiseLayer.self,
                  sigmoid.definition.name == "Sigmoid", Self.isStandard(step), step.inputs.count == 1,
                  step.outputs.count == 1, values[step.inputs[0]].constant == nil else { continue }
            let (x, s) = (step.inputs[0], step.outputs[0])
            guard !isOutput[s], readers[s].count == 1, let mul = readers[s].first, !removed.contains(mul),
                  let product = steps[mul].layer as? BinaryLayer, product.operation == .mul, product.inputCount == 2,
                  !product.average, Self.isStandard(steps[mul]), steps[mul].inputs.count == 2,
                  Set(steps[mul].inputs) == [x, s], steps[mul].outputs.count == 1,
                  values[steps[mul].outputs[0]].shape == values[x].shape,
                  let swish = try? ElementwiseLayer(definition: definition, parameters: ["beta": 1.0])
            else { continue }
            steps[mul] = Step(name: steps[mul].name, opType: "Swish", domain: "", layer: swish, inputs: [x],
                              outputs: steps[mul].outputs)
            removed.insert(index)
        }
        removeSteps(at: removed)
    }
}
