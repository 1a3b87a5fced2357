extension ModelGraph {
    /// Replaces each MatMul of a computed rank-3 or rank-4 value by a
    /// constant matrix with one `BatchedGemm` step, taking in the Add of a
    /// constant bias (N values, broadcast along the last axis) that is the
    /// product's only reader: a transformer's Linear layer becomes one step,
    /// with a GPU form and B' packed once on the CPU. Other MatMuls keep
    /// their `MatMulLayer` steps. With `cache`, a fusion of the same layers
    /// and the same initializers (values named in `initializers`) as an
    /// earlier import's is that import's layer; a B or bias folded at load
    /// may differ from one import to the next (an input read at prepare
    /// feeds it) while the layers stay the same objects, so such a fusion is
    /// made anew.
    mutating func fuseBatchedGemms(cache: ConvertedNodeCache? = nil, initializers: Set<String> = []) {
        let (readers, isOutput) = self.readers()
        var removed = Set<Int>()
        for (index, step) in steps.enumerated() {
            guard let matMul = step.layer as? MatMulLayer, !matMul.isGemm, step.inputs.count == 2,
                  step.outputs.count == 1, (3...4).contains(values[step.inputs[0]].shape.count),
                  values[step.inputs[0]].constant == nil,
                  let b = values[step.inputs[1]].constant, b.shape.count == 2 else { continue }
            let product = step.outputs[0]
            let add = isOutput[product] ? nil : biasAdd(reading: product, readers: readers[product], columns: b.shape[1])
            let bias = add.flatMap { values[$0.bias].constant }
            let make = { try BatchedGemm(b: b, bias: bias) }
            let parts: [Layer?] = [matMul, add.flatMap { steps[$0.step].layer }]
            let fromFile = initializers.contains(values[step.inputs[1]].name)
                && add.map { initializers.contains(values[$0.bias].name) } ?? true
            let reusable = fromFile ? cache : nil
            guard let layer = try? reusable.map({ try $0.fused(from: parts.compactMap { $0 }, make: make) }) ?? make(),
                  let shapes = try? layer.outputShapes(forInputShapes: [values[step.inputs[0]].shape]),
                  shapes == [values[product].shape] else { continue }
            if let add {
                steps[add.step] = Step(name: step.name, opType: "\(step.opType)+\(steps[add.step].opType)",
                                       domain: step.domain, layer: layer, inputs: [step.inputs[0]],
                                       outputs: steps[add.step].outputs)
                removed.insert(index)
            } else {
                steps[index] = Step(name: step.name, opType: step.opType, domain: step.domain, layer: layer,
                                    inputs: [step.inputs[0]], outputs: step.outputs)
            }
        }
        removeSteps(at: removed)
    }

    /// Replaces each Reshape of a computed `[..., K]` value of rank 3 or 4
    /// to `[rows, K]`, Gemm, and Reshape back to `[..., N]` (each value in
    /// between read by the next step alone) by one `BatchedGemm` step on the
    /// unreshaped value, named after the Gemm: GPT-2's Conv1D layers as
    /// exporters write them. The `[rows, K]` matrix is `rows` images deep on
    /// the GPU (a 128-token prompt of GPT-2 small: 128 x 192 layers, past
    /// every device's 2,048), so unfused those three steps ran on the CPU;
    /// the rank-3 value is one image of K rows. `cache` keeps the fusion of
    /// one Gemm layer from import to import (B and C are the layer's own).
    mutating func fuseReshapedGemms(cache: ConvertedNodeCache? = nil) {
        let (readers, isOutput) = self.readers()
        /// The one step reading `value`, when it is that step's only input.
        func soleReader(of value: Int) -> Int? {
            guard !isOutput[value], readers[value].count == 1, steps[readers[value][0]].inputs == [value] else { return nil }
            return readers[value][0]
        }
        var removed = Set<Int>()
        for (first, step) in steps.enumerated() where step.layer is ReshapeLayer {
            let shape = values[step.inputs[0]].shape
            guard step.outputs.count == 1, (3...4).contains(shape.count), values[step.inputs[0]].constant == nil,
                  values[step.outputs[0]].shape == [shape.dropLast().reduce(1, *), shape[shape.count - 1]],
                  let product = soleReader(of: step.outputs[0]), Self.isStandard(steps[product]),
                  let gemm = steps[product].layer as? Gemm, steps[product].outputs.count == 1,
                  let last = soleReader(of: steps[product].outputs[0]), steps[last].layer is ReshapeLayer,
                  steps[last].outputs.count == 1,
                  values[steps[last].outputs[0]].shape == Array(shape.dropLast()) + [gemm.outputFeatures],
                  let made = BatchedGemm(gemm: gemm) else { continue }
            let fused = cache?.fused(from: [gemm]) { made } ?? made
            steps[last] = Step(name: steps[product].name, opType: steps[product].opType, domain: steps[product].domain,
                               layer: fused, inputs: step.inputs, outputs: steps[last].outputs)
            removed.formUnion([first, product])
        }
        removeSteps(at: removed)
    }

    /// The step adding a constant of `columns` values along the last axis
    /// to `value`, when it is `value`'s one reader, and that constant.
    private func biasAdd(reading value: Int, readers: [Int], columns: Int) -> (step: Int, bias: Int)? {
        guard readers.count == 1, Self.isStandard(steps[readers[0]]),
              let add = steps[readers[0]].layer as? BinaryLayer, add.operation == .add,
              add.inputCount == 2, !add.average else { return nil }
        let inputs = steps[readers[0]].inputs
        guard inputs.count == 2, let bias = inputs.first(where: { $0 != value }), inputs.contains(value),
              let shape = values[bias].constant?.shape, shape.last == columns, shape.dropLast().allSatisfy({ $0 == 1 }),
              values[steps[readers[0]].outputs[0]].shape == values[value].shape else { return nil }
        return (readers[0], bias)
    }
}
