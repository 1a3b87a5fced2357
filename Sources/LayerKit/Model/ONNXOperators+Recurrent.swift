extension ONNXOperators {
    /// The recurrent ops, one `RecurrentLayer` each (CPU only). Versions 1
    /// to 22 of all three; what each later version changed is in its comment.
    static let recurrent: [ONNXOperator] = [
        // 7: output_sequence dropped (it never changed a value: Y is made when listed); 14: layout; 22: types
        ONNXOperator("LSTM", through: 22, inputs: 3...8, outputs: 0...3) { try recurrentLayer($0, .lstm) },
        // 3: linear_before_reset, and both outputs optional; 7: output_sequence dropped; 14: layout; 22: types
        ONNXOperator("GRU", through: 22, arity: { (3...6, $0 >= 3 ? 0...2 : 2...2) }) {
            try recurrentLayer($0, .gru)
        },
        // 7: output_sequence dropped; 14: layout; 22: types
        ONNXOperator("RNN", through: 22, inputs: 3...6, outputs: 0...2) { try recurrentLayer($0, .rnn) },
    ]

    /// The ops whose omitted outputs (`["", "Y_h"]`) the load-time
    /// validation names (`ONNXValidation.namingOmittedOutputs`): their one
    /// layer makes every output up to the last listed (Attention's scores
    /// after omitted present key and value included).
    static let namesOmittedOutputs: Set<String> = ["LSTM", "GRU", "RNN", "Attention"]

    /// An LSTM, GRU or RNN node as a `RecurrentLayer`: W, R, B and P must be
    /// known at prepare (initializers, or values of the plan) and are packed
    /// once; so is sequence_lens, whose values are a plan's like every
    /// integer input's. X, initial_h and initial_c are the layer's inputs.
    static func recurrentLayer(_ node: ONNXNodeContext, _ cell: RecurrentLayer.Cell) throws -> ConvertedNode {
        var known = ["activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size"]
        // coreml_cell_clip: LayerKit's own, which the Core ML reader writes
        // for an LSTM's cellClipThreshold (CoreMLTranslation+Recurrent.swift).
        if cell == .lstm { known += ["input_forget", "coreml_cell_clip"] }
        if cell == .gru && node.opset >= 3 { known.append("linear_before_reset") }
        if node.opset < 7 { known.append("output_sequence") }
        if node.opset >= 14 { known.append("layout") }
        try node.requireAttributes(known)
        var options = RecurrentLayer.Options()
        let direction = try node.string("direction", default: "forward")
        guard let parsed = RecurrentLayer.Direction(rawValue: direction) else {
            throw node.error("direction '\(direction)' is not forward, reverse or bidirectional")
        }
        options.direction = parsed
        let layout = try node.int("layout", default: 0)
        guard layout == 0 || layout == 1 else { throw node.error("layout \(layout) is not 0 or 1") }
        options.batchMajor = layout == 1
        let hiddenSize = try node.node.int("hidden_size")
        if let hiddenSize, hiddenSize < 1 { throw node.error("hidden_size \(hiddenSize) must be >= 1") }
        options.clip = try node.node.float("clip")
        options.cellClip = try node.node.float("coreml_cell_clip")
        for (name, flag) in [("input_forget", \RecurrentLayer.Options.inputForget),
                             ("linear_before_reset", \RecurrentLayer.Options.linearBeforeReset)] {
            let value = try node.int(name, default: 0)
            guard value == 0 || value == 1 else { throw node.error("\(name) \(value) is not 0 or 1") }
            options[keyPath: flag] = value == 1
        }
        if let names = try node.node.strings("activations") {
            options.activations = try RecurrentActivation.list(names: names, alphas: try node.node.floats("activation_alpha") ?? [],
                                                               betas: try node.node.floats("activation_beta") ?? [],
                                                               op: cell.rawValue)
        } else if try node.node.floats("activation_alpha") != nil || node.node.floats("activation_beta") != nil {
            throw node.error("activation_alpha or activation_beta is given without activations")
        }
        if node.has(4) { options.sequenceLengths = try node.constantInts(4, "sequence_lens") }
        options.initialH = node.has(5)
        options.initialC = node.has(6)
        options.outputCount = node.node.outputs.count
        let layer = try RecurrentLayer(cell: cell, w: node.constant(1, "W"), r: node.constant(2, "R"),
                                       b: node.optionalConstant(3, "B"), peepholes: node.optionalConstant(7, "P"),
                                       hiddenSize: hiddenSize, options: options)
        return ConvertedNode(layer: layer, inputs: [0, 5, 6].filter(node.has))
    }
}
