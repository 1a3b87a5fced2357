/// ShuffleNet's channel shuffle, as ONNX exporters write it: Reshape
/// [N, C, ...] -> [N, g, C/g, ...], Transpose perm [0, 2, 1, ...], Reshape
/// back to [N, C, ...]. The values in between have rank 5 for an image
/// input, which no slice image holds, so the three would run on the CPU;
/// one `ChannelShuffle` does the same movement on the GPU.
extension ModelGraph {
    /// Replaces each Reshape -> Transpose -> Reshape channel shuffle by one
    /// `ChannelShuffle` step, when the two values in between have no other
    /// reader and are not graph outputs. The step takes the Transpose's
    /// node name and the op type `layerkit.ChannelShuffle`.
    mutating func fuseChannelShuffles() {
        var readers = Array(repeating: 0, count: values.count)
        for step in steps { for input in step.inputs { readers[input] += 1 } }
        for output in outputs { readers[output] += 1 }
        let makers = self.makers()
        func onlyReader(of value: Int) -> Int? {
            guard readers[value] == 1 else { return nil }
            return steps.indices.first { steps[$0].inputs.contains(value) }
        }
        var removed = Set<Int>()
        for (first, step) in steps.enumerated() where step.layer is ReshapeLayer && !removed.contains(first) {
            guard step.inputs.count == 1, step.outputs.count == 1,
                  let middle = onlyReader(of: step.outputs[0]), makers[step.outputs[0]] == first,
                  let transpose = steps[middle].layer as? TransposeLayer, steps[middle].outputs.count == 1,
                  let last = onlyReader(of: steps[middle].outputs[0]), steps[last].layer is ReshapeLayer,
                  steps[last].outputs.count == 1 else { continue }
            let input = values[step.inputs[0]].shape
            let grouped = values[step.outputs[0]].shape
            guard input.count >= 2, grouped.count == input.count + 1, input[0] == grouped[0],
                  grouped[1] >= 1, grouped[1] * grouped[2] == input[1], Array(grouped[3...]) == Array(input[2...]),
                  transpose.perm == [0, 2, 1] + Array(3..<grouped.count),
                  values[steps[last].outputs[0]].shape == input,
                  let shuffle = try? ChannelShuffle(groups: grouped[1]) else { continue }
            steps[first] = Step(name: steps[middle].name, opType: "ChannelShuffle", domain: "layerkit", layer: shuffle,
                                inputs: step.inputs, outputs: steps[last].outputs)
            removed.formUnion([middle, last])
        }
        removeSteps(at: removed)
    }
}
