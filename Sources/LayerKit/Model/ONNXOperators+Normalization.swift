/// Normalizations, softmaxes and reductions: InstanceNormalization,
/// LayerNormalization, GroupNormalization, MeanVarianceNormalization,
/// LpNormalization, LRN, Softmax, LogSoftmax, Hardmax and the ten Reduce ops.
extension ONNXOperators {
    static let normalization: [ONNXOperator] = [
        // 13: along one axis, default -1 (before, the axes from axis on, flattened)
        ONNXOperator("Softmax", through: 13, inputs: 1...1) { try softmax($0, .softmax) },
        ONNXOperator("LogSoftmax", through: 13, inputs: 1...1) { try softmax($0, .logSoftmax) },  // as Softmax
        ONNXOperator("Hardmax", through: 13, inputs: 1...1) { try softmax($0, .hardmax) },  // as Softmax
        // 6: consumed_inputs dropped; 22: types
        ONNXOperator("InstanceNormalization", through: 22, inputs: 3...3, instanceNormalization),
        ONNXOperator("LayerNormalization", through: 17, inputs: 2...3, outputs: 1...3, layerNormalization),
        // 18: scale and bias per group (deprecated: refused at load); 21: per channel, stash_type
        ONNXOperator("GroupNormalization", through: 21, inputs: 3...3, groupNormalization),
        ONNXOperator("MeanVarianceNormalization", through: 13, inputs: 1...1, meanVarianceNormalization),  // 13: types
        ONNXOperator("LpNormalization", through: 22, inputs: 1...1, lpNormalization),  // 22: types
        ONNXOperator("LRN", through: 13, inputs: 1...1, lrn),  // 13: types
        // The reductions. Each: 11: negative axes; 13: types (ReduceSum: axes as an input,
        // noop_with_empty_axes); 18: axes as an input, noop_with_empty_axes; and as noted.
        reduction(.sum, through: 13, fold: { try TypedKernels.reduce($0, $1, .sum) }),
        reduction(.mean, through: 18, fold: { try TypedKernels.reduce($0, $1, .mean) }),
        reduction(.max, through: 20, fold: { try TypedKernels.reduce($0, $1, .max) }),  // 12, 20: types
        reduction(.min, through: 20, fold: { try TypedKernels.reduce($0, $1, .min) }),  // 12, 20: types
        reduction(.product, through: 18, fold: { try TypedKernels.reduce($0, $1, .prod) }),
        reduction(.l1, through: 18),
        reduction(.l2, through: 18),
        reduction(.sumSquare, through: 18),
        reduction(.logSum, through: 28),  // 28: types
        reduction(.logSumExp, through: 28),  // 28: types
    ]

    /// A Reduce op's declaration: its axes became an input in opset 13 for
    /// ReduceSum, 18 for the rest.
    static func reduction(_ operation: Reduce.Operation, through implemented: Int,
                          fold: TypedKernels.Kernel? = nil) -> ONNXOperator {
        let firstWithInput = operation == .sum ? 13 : 18
        return ONNXOperator(operation.rawValue, through: implemented,
                            arity: { ($0 >= firstWithInput ? 1...2 : 1...1, 1...1) }, fold: fold) {
            try reduce($0, operation, axesFromInput: $0.opset >= firstWithInput)
        }
    }

    /// Softmax, LogSoftmax, Hardmax. From opset 13 along `axis` (default
    /// -1); before, over the axes from `axis` (default 1) on, flattened,
    /// which is one axis when every later extent is 1.
    static func softmax(_ node: ONNXNodeContext, _ kind: Softmax.Kind) throws -> ConvertedNode {
        try node.requireAttributes(["axis"])
        let axis = try node.axis(node.int("axis", default: node.opset >= 13 ? -1 : 1), rank: node.rank(0))
        let flattens = try node.opset < 13 && LayerChecks.product(node.shape(0)[(axis + 1)...]) != 1
        return ConvertedNode(layer: try Softmax(axis: axis, kind: kind, flattensTrailingAxes: flattens), inputs: [0])
    }

    /// The Reduce ops: axes from the attribute or, from opset 13 (ReduceSum)
    /// or 18 (the rest), from a constant input; no axes reduce every axis,
    /// or none with `noop_with_empty_axes`.
    static func reduce(_ node: ONNXNodeContext, _ operation: Reduce.Operation, axesFromInput: Bool) throws
        -> ConvertedNode {
        try node.requireAttributes(axesFromInput ? ["keepdims", "noop_with_empty_axes"] : ["axes", "keepdims"])
        let rank = try node.rank(0)
        let given = axesFromInput ? (node.has(1) ? try node.constantInts(1, "axes") : []) : (try node.ints("axes") ?? [])
        var axes: [Int] = []
        for value in given {
            let axis = try node.axis(value, rank: rank)
            guard !axes.contains(axis) else { throw node.error("axes \(given) name axis \(axis) twice") }
            axes.append(axis)
        }
        if axes.isEmpty {
            if try node.int("noop_with_empty_axes", default: 0) == 0 {
                axes = Array(0..<rank)
            } else if operation.isIdentityOnOneElement {
                return ConvertedNode(layer: nil, inputs: [0])
            }
            // Else noop_with_empty_axes reduces no axis, yet onnxruntime and ONNX's reference still apply the
            // element-wise part (|x| of ReduceL1, x² of ReduceSumSquare...): a Reduce over no axes.
        }
        let layer = try Reduce(operation, axes: axes, keepDims: node.int("keepdims", default: 1) != 0, rank: rank)
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func instanceNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset < 6 ? ["epsilon", "consumed_inputs"] : ["epsilon"])
        let shape = try node.shape(0)
        guard shape.count >= 3 else {
            throw node.error("input \(Tensor.describe(shape)) must have rank 3 or more (N, C, spatial axes)")
        }
        let scale = try node.constant(1, "scale"), bias = try node.constant(2, "B")
        for (name, tensor) in [("scale", scale), ("B", bias)] where tensor.shape != [shape[1]] {
            throw node.error("\(name) has shape \(Tensor.describe(tensor.shape)); the input has \(shape[1]) channels, "
                             + "so it needs shape \(shape[1])")
        }
        let layer = try InstanceNormalization(scale: Array(scale.elements), bias: Array(bias.elements),
                                              epsilon: node.float("epsilon", default: 1e-5))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// GroupNormalization (opset 21): scale and bias, one constant per
    /// channel; num_groups must divide the channels. stash_type names the
    /// precision of the statistics, float32 or wider: LayerKit computes them
    /// in double whatever it says.
    static func groupNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["epsilon", "num_groups", "stash_type"])
        let shape = try node.shape(0)
        guard shape.count >= 2 else { throw node.error("input \(Tensor.describe(shape)) must have rank 2 or more (N, C, ...)") }
        guard let groups = try node.node.int("num_groups") else { throw node.error("attribute 'num_groups' is required") }
        guard groups > 0, shape[1] % groups == 0 else {
            throw node.error("num_groups \(groups) must be positive and divide the input's \(shape[1]) channels")
        }
        let scale = try node.constant(1, "scale"), bias = try node.constant(2, "bias")
        for (name, tensor) in [("scale", scale), ("bias", bias)] where tensor.shape != [shape[1]] {
            throw node.error("\(name) has shape \(Tensor.describe(tensor.shape)); the input has \(shape[1]) channels, "
                             + "so it needs shape \(shape[1])")
        }
        let layer = try GroupNormalization(groups: groups, scale: Array(scale.elements), bias: Array(bias.elements),
                                           epsilon: node.float("epsilon", default: 1e-5))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// MeanVarianceNormalization: over `axes` (default [0, 2, 3]).
    static func meanVarianceNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axes"])
        let rank = try node.rank(0)
        let given = try node.ints("axes") ?? [0, 2, 3]
        let axes = try given.map { try node.axis($0, rank: rank) }
        guard Set(axes).count == axes.count else { throw node.error("axes \(given) name an axis twice") }
        return ConvertedNode(layer: try MeanVarianceNormalization(axes: axes), inputs: [0])
    }

    /// LpNormalization: along `axis` (default -1), p 1 or 2 (default 2).
    static func lpNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axis", "p"])
        let axis = try node.axis(node.int("axis", default: -1), rank: node.rank(0))
        let p = try node.int("p", default: 2)
        guard p == 1 || p == 2 else { throw node.error("p is \(p); ONNX's LpNormalization takes 1 or 2") }
        return ConvertedNode(layer: try LpNormalization(axis: axis, p: p), inputs: [0])
    }

    /// LayerNormalization: Scale and B broadcast over the normalized axes;
    /// the Mean and InvStdDev outputs when named (an omitted output before a
    /// named one is refused).
    static func layerNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["axis", "epsilon", "stash_type"])
        let shape = try node.shape(0)
        let axis = try node.axis(node.int("axis", default: -1), rank: shape.count)
        let normalized = Array(shape[axis...])
        let scale = try broadcast(node.constant(1, "Scale"), to: normalized, "Scale", node)
        let bias = try node.optionalConstant(2, "B").map { try broadcast($0, to: normalized, "B", node) }
        guard !node.node.outputs.contains(where: \.isEmpty) else {
            throw node.error("an omitted (empty-named) output is not supported: name Y, Y and Mean, or all three")
        }
        let layer = try LayerNormalization(axis: axis, epsilon: node.float("epsilon", default: 1e-5), scale: scale,
                                           bias: bias, outputCount: node.node.outputs.count)
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// `tensor`'s values spread over `shape` by ONNX's unidirectional
    /// broadcasting (its extents right-aligned, each equal or 1).
    static func broadcast(_ tensor: Tensor, to shape: [Int], _ what: String, _ node: ONNXNodeContext) throws -> [Float] {
        var source = tensor.shape
        while source.count > shape.count, source.first == 1 { source.removeFirst() }
        source = Array(repeating: 1, count: max(0, shape.count - source.count)) + source
        guard source.count == shape.count, zip(source, shape).allSatisfy({ $0 == $1 || $0 == 1 }) else {
            throw node.error("\(what) of shape \(Tensor.describe(tensor.shape)) does not broadcast to the normalized "
                             + "axes \(Tensor.describe(shape))")
        }
        let count = try node.elementCount(shape)
        guard count <= ONNXImporter.maxValueElements else {
            throw node.error("the normalized axes \(Tensor.describe(shape)) hold more than LayerKit's limit for one tensor")
        }
        if source == shape { return Array(tensor.elements) }
        var strides = [Int](repeating: 0, count: shape.count), stride = 1
        for i in shape.indices.reversed() where source[i] != 1 {
            strides[i] = stride
            stride *= source[i]
        }
        return (0..<count).map { index in
            var rest = index, offset = 0
            for i in shape.indices.reversed() {
                offset += (rest % shape[i]) * strides[i]
                rest /= shape[i]
            }
            return tensor[offset]
        }
    }

    static func lrn(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["alpha", "beta", "bias", "size"])
        guard let size = try node.node.int("size") else { throw node.error("size is required") }
        let layer = try LRN(size: size, alpha: node.float("alpha", default: 1e-4), beta: node.float("beta", default: 0.75),
                            bias: node.float("bias", default: 1))
        return ConvertedNode(layer: layer, inputs: [0])
    }
}
