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
