/// The transformer ops: Attention, RMSNormalization, RotaryEmbedding,
/// LinearAttention, CausalConvWithState and SwiGLU, one CPU layer each.
extension ONNXOperators {
    static let attention: [ONNXOperator] = [
        // 24: nonpad_kv_seqlen, the causal frontier bottom-right aligned; 25: left_window_size and right_window_size,
        // q_num_heads and kv_num_heads refused with 4-D inputs
        ONNXOperator("Attention", through: 25, arity: { ($0 >= 24 ? 3...7 : 3...6, 1...4) }, types: .boolMask,
                     attentionLayer),
        ONNXOperator("RMSNormalization", through: 23, inputs: 2...2, rmsNormalization),
        ONNXOperator("RotaryEmbedding", through: 23, inputs: 3...4, rotaryEmbedding),
        ONNXOperator("LinearAttention", through: 27, inputs: 3...6, outputs: 2...2, linearAttention),
        ONNXOperator("CausalConvWithState", through: 27, inputs: 2...4, outputs: 2...2, causalConvWithState),
        ONNXOperator("SwiGLU", through: 28, inputs: 2...2) { node in
            try node.requireAttributes(["alpha"])
            return ConvertedNode(layer: try SwiGLU(alpha: node.float("alpha", default: 1)), inputs: [0, 1])
        },
    ]

    /// Attention: Q, K, V, the mask (a float one as given, a boolean one
    /// known at prepare as its 0 / -inf bias) and the past caches are the
    /// layer's inputs; nonpad_kv_seqlen must be known at prepare.
    /// softmax_precision must name a float type; LayerKit's softmax is in
    /// float32 whatever it says.
    static func attentionLayer(_ node: ONNXNodeContext) throws -> ConvertedNode {
        var known = ["is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale", "softcap",
                     "softmax_precision"]
        if node.opset >= 25 { known += ["left_window_size", "right_window_size"] }
        try node.requireAttributes(known)
        var options = Attention.Options()
        options.qHeads = try node.node.int("q_num_heads")
        options.kvHeads = try node.node.int("kv_num_heads")
        if node.opset >= 25, try node.rank(0) == 4, options.qHeads != nil || options.kvHeads != nil {
            throw node.error("q_num_heads and kv_num_heads are for 3-D inputs: Attention-25 refuses them with 4-D ones")
        }
        options.isCausal = try flag(node, "is_causal")
        options.scale = try node.node.float("scale")
        options.softcap = try node.float("softcap", default: 0)
        options.window = (try node.int("left_window_size", default: -1), try node.int("right_window_size", default: -1))
        let mode = try node.int("qk_matmul_output_mode", default: 0)
        guard let scores = Attention.ScoresOutput(rawValue: mode) else {
            throw node.error("qk_matmul_output_mode \(mode) is not 0, 1, 2 or 3")
        }
        options.scores = scores
        try requireFloatType(node, "softmax_precision")
        guard node.has(4) == node.has(5) else { throw node.error("past_key and past_value must be given together") }
        options.hasPast = node.has(4)
        if node.has(6) {
            guard !options.hasPast else {
                throw node.error("nonpad_kv_seqlen cannot be combined with past_key and past_value")
            }
            options.nonpadLengths = try node.constantInts(6, "nonpad_kv_seqlen")
        }
        options.hasMask = node.has(3)
        options.outputCount = node.node.outputs.count
        var converted = ConvertedNode(layer: try Attention(options: options), inputs: [0, 1, 2, 3, 4, 5].filter(node.has))
        if options.hasMask, let bias = try booleanMaskBias(node) { converted.reshapedConstants[3] = bias }
        return converted
    }

    /// A boolean attn_mask (input 3) as the additive bias Attention adds: 0
    /// where true, -inf where false; its values must be known at prepare.
    /// Nil for a float mask; a mask of another type is refused.
    static func booleanMaskBias(_ node: ONNXNodeContext) throws -> Tensor? {
        let declared = node.initializers[3].flatMap { ElementType(rawValue: $0.dataType.rawValue) }
            ?? (node.inputTypes.count > 3 ? node.inputTypes[3] : nil)
        guard let type = declared, !type.isFloatingPoint else { return nil }
        guard type == .bool else { throw node.error("attn_mask is \(type); LayerKit takes a bool or float mask") }
        let mask = try node.constant(3, "attn_mask")
        return try Tensor(shape: mask.shape, values: mask.elements.map { $0 != 0 ? 0 : -.infinity })
    }

    /// RMSNormalization (opset 23): over the axes from `axis` (default -1)
    /// on, scale broadcast over them. stash_type must name a float type;
    /// LayerKit computes the statistics in double whatever it says.
    static func rmsNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axis", "epsilon", "stash_type"])
        try requireFloatType(node, "stash_type")
        let shape = try node.shape(0)
        let axis = try node.axis(node.int("axis", default: -1), rank: shape.count)
        let scale = try broadcast(node.constant(1, "scale"), to: Array(shape[axis...]), "scale", node)
        let layer = try RMSNormalization(axis: axis, epsilon: node.float("epsilon", default: 1e-5), scale: scale)
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// RotaryEmbedding (opset 23): the input and the cos and sin caches are
    /// the layer's inputs; position_ids, when given, must be known at prepare.
    static func rotaryEmbedding(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["interleaved", "num_heads", "rotary_embedding_dim"])
        let positions = node.has(3) ? try node.constantInts(3, "position_ids") : nil
        let layer = try RotaryEmbedding(interleaved: flag(node, "interleaved"), heads: node.node.int("num_heads"),
                                        rotaryDimension: node.int("rotary_embedding_dim", default: 0), positions: positions)
        return ConvertedNode(layer: layer, inputs: [0, 1, 2])
    }

    /// LinearAttention (opset 27): the update rule (default gated_delta)
    /// decides which of decay (input 4) and beta (input 5) are given;
    /// chunk_size is a tuning hint with no bearing on the values.
    static func linearAttention(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule"])
        let name = try node.string("update_rule", default: "gated_delta")
        guard let rule = LinearAttention.Rule(rawValue: name) else {
            throw node.error("update_rule '\(name)' is not linear, gated, delta or gated_delta")
        }
        for (i, input, needed) in [(4, "decay", rule.gates), (5, "beta", rule.corrects)] where node.has(i) != needed {
            throw node.error("update_rule '\(name)' \(needed ? "needs" : "takes no") \(input) input")
        }
        guard let qHeads = try node.node.int("q_num_heads"), let kvHeads = try node.node.int("kv_num_heads") else {
            throw node.error("q_num_heads and kv_num_heads are required")
        }
        let layer = try LinearAttention(rule: rule, qHeads: qHeads, kvHeads: kvHeads, scale: node.float("scale", default: 0),
                                        hasPast: node.has(3))
        return ConvertedNode(layer: layer, inputs: [0, 1, 2, 3, 4, 5].filter(node.has))
    }

    /// CausalConvWithState (opset 27): activation none, silu or swish (SiLU's alias).
    static func causalConvWithState(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["activation"])
        let activation = try node.string("activation", default: "none")
        guard ["none", "silu", "swish"].contains(activation) else {
            throw node.error("activation '\(activation)' is not none, silu or swish")
        }
        let layer = CausalConvWithState(hasBias: node.has(2), hasPast: node.has(3), silu: activation != "none")
        return ConvertedNode(layer: layer, inputs: [0, 1, 2, 3].filter(node.has))
    }

    /// A 0-or-1 attribute (default 0) as a Bool.
    static func flag(_ node: ONNXNodeContext, _ name: String) throws -> Bool {
        let value = try node.int(name, default: 0)
        guard value == 0 || value == 1 else { throw node.error("\(name) \(value) is not 0 or 1") }
        return value == 1
    }

    /// Throws unless attribute `name`, when given, names a float element
    /// type (a precision).
    static func requireFloatType(_ node: ONNXNodeContext, _ name: String) throws {
        guard let code = try node.node.int(name) else { return }
        guard let type = ElementType(rawValue: code), type.isFloatingPoint else {
            throw node.error("\(name) \(code) is not a float element type (1 float, 10 float16, 11 double, 16 bfloat16...)")
        }
    }
}
