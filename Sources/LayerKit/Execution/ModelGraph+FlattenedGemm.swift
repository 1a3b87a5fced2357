extension ModelGraph {
    /// Replaces each Flatten/Reshape of an `[N, C, H, W]` map with H·W > 1
    /// followed by a Gemm that is its only reader by one `FlattenedGemm`
    /// step (the Gemm's name and op type), so the wide flattened vector
    /// never has to be an image. A map already 1x1 (after global pooling)
    /// keeps its steps: its flattened vector is as wide as the map.
    mutating func fuseFlattenedGemms() {
        var readers = Array(repeating: 0, count: values.count)
        for step in steps { for input in step.inputs { readers[input] += 1 } }
        for output in outputs { readers[output] += 1 }
        var removed = Set<Int>()
        for (first, step) in steps.enumerated() where step.layer is ReshapeLayer {
            guard step.inputs.count == 1, step.outputs.count == 1, readers[step.outputs[0]] == 1,
                  let next = steps.indices.first(where: { steps[$0].inputs.contains(step.outputs[0]) }),
                  let gemm = steps[next].layer as? Gemm, steps[next].inputs == step.outputs else { continue }
            let map = values[step.inputs[0]].shape
            guard map.count == 4, map[2] * map[3] > 1, values[step.outputs[0]].shape == [map[0], map[1] * map[2] * map[3]],
                  let fused = FlattenedGemm(gemm: gemm, channels: map[1], height: map[2], width: map[3]) else { continue }
            steps[next] = Step(name: steps[next].name, opType: steps[next].opType, domain: steps[next].domain, layer: fused,
                               inputs: step.inputs, outputs: steps[next].outputs)
            removed.insert(first)
        }
        removeSteps(at: removed)
    }
}
