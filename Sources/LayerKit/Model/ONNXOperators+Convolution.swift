/// The convolution family: Conv and ConvTranspose in 1-D to 3-D, the
/// windowed and global pools (Lp ones included), BatchNormalization and Dropout, every opset
/// from 1 (attribute names and defaults from the ONNX operator spec; the
/// window geometry as onnxruntime computes it).
extension ONNXOperators {
    static let convolution: [ONNXOperator] = [
        ONNXOperator("Conv", through: 22, inputs: 2...3, conv),  // 11: defaults spelled out; 22: types
        // 11: SAME_UPPER/SAME_LOWER pad split corrected in the text; 22: types
        ONNXOperator("ConvTranspose", through: 22, inputs: 2...3, convTranspose),
        // 6: consumed_inputs dropped; 7: is_test dropped; 9: spatial dropped; 14: training_mode; 15: types
        ONNXOperator("BatchNormalization", through: 15, arity: { (5...5, $0 >= 14 ? 1...3 : 1...5) }, batchNormalization),
        ONNXOperator("GlobalAveragePool", through: 22, inputs: 1...1) { try globalPool($0, .globalAverage) },  // 22: types
        ONNXOperator("GlobalMaxPool", through: 22, inputs: 1...1) { try globalPool($0, .globalMax) },  // 22: types
        // 7: count_include_pad; 10: ceil_mode; 19: dilations; 22: types (windows starting in the end padding dropped, as before)
        ONNXOperator("AveragePool", through: 22, inputs: 1...1) { try pool($0, average: true) },
        // 8: storage_order, Indices; 10: ceil_mode, dilations; 12: types; 22: types (windows starting in the end padding dropped, as before)
        ONNXOperator("MaxPool", through: 22, arity: { (1...1, $0 >= 8 ? 1...2 : 1...1) }) { try pool($0, average: false) },
        // 6: consumed_inputs dropped; 7: is_test dropped; 10: types; 12: ratio and training_mode as inputs, seed; 13, 22: types
        ONNXOperator("Dropout", through: 22, arity: { ($0 >= 12 ? 1...3 : 1...1, 1...2) }, dropout),
        // 2: p an int (before, a float); 11: auto_pad text; 18: ceil_mode, dilations; 22: types
        ONNXOperator("LpPool", through: 22, inputs: 1...1) { try lpPool($0, global: false) },
        // 2: p an int (before, a float); 22: types
        ONNXOperator("GlobalLpPool", through: 22, inputs: 1...1) { try lpPool($0, global: true) },
    ]

    /// The spatial axes of a windowed op's input (1 to 3), or this node's error.
    static func spatialRank(_ node: ONNXNodeContext) throws -> Int {
        let rank = try node.rank(0)
        guard (3...5).contains(rank) else {
            throw node.error("input of rank \(rank) (\(Tensor.describe(try node.shape(0)))): only 1-D to 3-D "
                             + "(rank 3 to 5, [N, C, spatial...]) is supported")
        }
        return rank - 2
    }

    /// A window attribute of `count` values, `fill` repeated when absent.
    static func windowValues(_ node: ONNXNodeContext, _ name: String, count: Int, fill: Int) throws -> [Int] {
        let values = try node.spatial(name, default: Array(repeating: fill, count: count))
        guard values.count == count else {
            throw node.error("attribute '\(name)' \(values) must have \(count) values (\(count == 6 || count == 4 || count == 2 ? "begins, then ends, " : "")one per spatial axis of the input)")
        }
        return values
    }

    /// `kernel_shape`, checked against the weights' extents when both exist.
    static func kernelShape(_ node: ONNXNodeContext, weights: Tensor) throws {
        if let kernel = try node.ints("kernel_shape"), kernel != Array(weights.shape[2...]) {
            throw node.error("kernel_shape \(kernel) does not match the weights \(Tensor.describe(weights.shape))")
        }
    }

    // MARK: - Conv and ConvTranspose

    static func conv(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"])
        let rank = try spatialRank(node)
        let weights = try node.constant(1, "the weights")
        guard weights.shape.count == rank + 2 else {
            throw node.error("weights must be rank \(rank + 2) for a \(rank)-D convolution, got \(Tensor.describe(weights.shape))")
        }
        try kernelShape(node, weights: weights)
        let bias = try node.optionalConstant(2, "the bias")
        let strides = try windowValues(node, "strides", count: rank, fill: 1)
        let dilations = try windowValues(node, "dilations", count: rank, fill: 1)
        let padding = try padding(node, spatialRank: rank)
        let group = try node.int("group", default: 1)
        let layer: Layer = rank == 3
            ? try Convolution3D(weights: weights, bias: bias, strides: strides, dilations: dilations, padding: padding,
                                group: group)
            : try Convolution(weights: weights, bias: bias, strides: strides, dilations: dilations, padding: padding,
                              group: group)
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func convTranspose(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape",
                                    "pads", "strides"])
        let rank = try spatialRank(node)
        let weights = try node.constant(1, "the weights")
        guard weights.shape.count == rank + 2 else {
            throw node.error("weights must be [C, M/group, k...] of rank \(rank + 2), got \(Tensor.describe(weights.shape))")
        }
        try kernelShape(node, weights: weights)
        let outputShape = try node.ints("output_shape") == nil ? nil : try windowValues(node, "output_shape", count: rank, fill: 0)
        let layer = try ConvTranspose(
            weights: weights, bias: node.optionalConstant(2, "the bias"),
            strides: windowValues(node, "strides", count: rank, fill: 1),
            dilations: windowValues(node, "dilations", count: rank, fill: 1),
            padding: padding(node, spatialRank: rank),
            outputPadding: windowValues(node, "output_padding", count: rank, fill: 0),
            outputShape: outputShape, group: node.int("group", default: 1))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// `auto_pad` and `pads` as one padding.
    static func padding(_ node: ONNXNodeContext, spatialRank: Int) throws -> Padding {
        switch try node.string("auto_pad", default: "NOTSET") {
        case "NOTSET": return .explicit(try windowValues(node, "pads", count: 2 * spatialRank, fill: 0))
        case "SAME_UPPER": return .sameUpper
        case "SAME_LOWER": return .sameLower
        case "VALID": return .valid
        case let other: throw node.error("auto_pad '\(other)' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
        }
    }

    // MARK: - Pooling

    static func globalPool(_ node: ONNXNodeContext, _ kind: Pooling.Kind) throws -> ConvertedNode {
        try node.requireAttributes([])
        guard try node.rank(0) >= 3 else {
            throw node.error("input \(Tensor.describe(try node.shape(0))) must be [N, C, spatial...] (rank 3 or more)")
        }
        return ConvertedNode(layer: try Pooling(kind: kind), inputs: [0])
    }

    /// MaxPool and AveragePool, every opset: 1-D and 2-D through `Pooling`
    /// (CPU kernel and GPU), 3-D and MaxPool's Indices through `GeneralPooling` (CPU).
    static func pool(_ node: ONNXNodeContext, average: Bool) throws -> ConvertedNode {
        try node.requireAttributes(average
            ? ["auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"]
            : ["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"])
        // Attributes an older opset does not define (onnxruntime refuses them too).
        let since = average ? ["count_include_pad": 7, "ceil_mode": 10, "dilations": 19]
                            : ["storage_order": 8, "ceil_mode": 10, "dilations": 10]
        for (name, opset) in since.sorted(by: { $0.key < $1.key }) where node.node.attributes[name] != nil && node.opset < opset {
            throw node.error("attribute '\(name)' is not part of \(node.node.opType) before opset \(opset) (the model imports \(node.opset))")
        }
        let rank = try spatialRank(node)
        guard node.node.attributes["kernel_shape"] != nil else { throw node.error("kernel_shape is required") }
        let kernel = try windowValues(node, "kernel_shape", count: rank, fill: 1)
        let strides = try windowValues(node, "strides", count: rank, fill: 1)
        let dilations = try windowValues(node, "dilations", count: rank, fill: 1)
        let padding = try padding(node, spatialRank: rank)
        let ceilMode = try node.int("ceil_mode", default: 0) != 0
        let kind: Pooling.Kind = average
            ? .average(countIncludePad: try node.int("count_include_pad", default: 0) != 0) : .max
        let indices = node.node.outputs.count == 2
        let storageOrder = try node.int("storage_order", default: 0)
        guard storageOrder == 0 || storageOrder == 1 else {
            throw node.error("storage_order \(storageOrder) must be 0 (row-major) or 1 (column-major)")
        }
        if rank == 3 || indices {
            let layer = try GeneralPooling(kind: average ? .average(countIncludePad: kind == .average(countIncludePad: true)) : .max,
                                           kernel: kernel, strides: strides, dilations: dilations,
                                           padding: padding, ceilMode: ceilMode, outputsIndices: indices,
                                           columnMajorIndices: storageOrder == 1)
            return ConvertedNode(layer: layer, inputs: [0])
        }
        let layer = try Pooling(kind: kind, kernel: kernel, strides: strides, dilations: dilations, padding: padding,
                                ceilMode: ceilMode)
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// LpPool (windowed; ceil_mode and dilations from opset 18) and
    /// GlobalLpPool (one window over every spatial axis), on the CPU. `p`
    /// is an integer from opset 2; opset 1's float p must be a whole number.
    static func lpPool(_ node: ONNXNodeContext, global: Bool) throws -> ConvertedNode {
        try node.requireAttributes(global ? ["p"] : ["auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"])
        for name in ["ceil_mode", "dilations"] where node.node.attributes[name] != nil && node.opset < 18 {
            throw node.error("attribute '\(name)' is not part of LpPool before opset 18 (the model imports \(node.opset))")
        }
        let p: Int
        switch node.node.attributes["p"] {
        case .float(let value)?:
            guard value >= 1, value <= Float(1 << 20), value == value.rounded() else {
                throw node.error("p \(value) must be a whole number >= 1")
            }
            p = Int(value)
        default:
            p = try node.int("p", default: 2)
        }
        guard (1...(1 << 20)).contains(p) else { throw node.error("p \(p) must be >= 1") }
        let rank = try spatialRank(node)
        let layer: GeneralPooling
        if global {
            let extents = Array(try node.shape(0)[2...])
            guard extents.allSatisfy({ (1...ONNXNodeContext.maxWindowValue).contains($0) }) else {
                throw node.error("input \(Tensor.describe(try node.shape(0))) has a spatial axis past \(ONNXNodeContext.maxWindowValue) cells")
            }
            layer = try GeneralPooling(kind: .lpNorm(p: p), kernel: extents)
        } else {
            guard node.node.attributes["kernel_shape"] != nil else { throw node.error("kernel_shape is required") }
            layer = try GeneralPooling(
                kind: .lpNorm(p: p), kernel: windowValues(node, "kernel_shape", count: rank, fill: 1),
                strides: windowValues(node, "strides", count: rank, fill: 1),
                dilations: windowValues(node, "dilations", count: rank, fill: 1), padding: padding(node, spatialRank: rank),
                ceilMode: node.int("ceil_mode", default: 0) != 0)
        }
        return ConvertedNode(layer: layer, inputs: [0])
    }

    // MARK: - BatchNormalization and Dropout

    /// Inference form, every opset: `is_test` (opsets 1-6) must be set,
    /// `training_mode` (14+) must be 0, and `spatial` 0 (opsets 7-8: the
    /// parameters per activation, not per channel) is taken when the
    /// parameters are per channel all the same (one value per channel).
    static func batchNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["consumed_inputs", "epsilon", "is_test", "momentum", "spatial", "training_mode"])
        guard try node.int("training_mode", default: 0) == 0 else {
            throw node.error("training_mode 1 (batch statistics) is not supported: LayerKit runs inference")
        }
        if node.opset <= 6, try node.int("is_test", default: 0) == 0 {
            throw node.error("is_test 0 (training mode, the default before opset 7) is not supported: LayerKit runs "
                             + "inference; set is_test to 1")
        }
        guard node.node.outputs.filter({ !$0.isEmpty }).count == 1 else {
            throw node.error("the running mean/variance outputs (training) are not supported")
        }
        let shape = try node.shape(0)
        guard shape.count >= 2 else { throw node.error("input \(Tensor.describe(shape)) must be [N, C, ...] (rank 2 or more)") }
        let names = ["scale", "B", "input_mean", "input_var"]
        var parameters: [Tensor] = []
        for (i, name) in names.enumerated() {
            let tensor = try node.constant(i + 1, name)
            // spatial 0 gives [C, D1, ...] parameters; per channel only when their other extents are 1.
            guard tensor.count == shape[1] else {
                throw node.error("\(name) \(Tensor.describe(tensor.shape)) must hold one value per channel (\(shape[1]))"
                                 + (try node.int("spatial", default: 1) == 0
                                    ? "; spatial 0 with per-activation parameters is not supported" : ""))
            }
            parameters.append(tensor)
        }
        let layer = try BatchNormalization(scale: parameters[0], bias: parameters[1], mean: parameters[2],
                                           variance: parameters[3], epsilon: node.float("epsilon", default: 1e-5))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// Inference: the input passes through; a `mask` output is all ones.
    /// `training_mode` (opset 12+) must be a constant false; `is_test`
    /// (opsets 1-6) must be set.
    static func dropout(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(node.opset <= 6 ? ["consumed_inputs", "is_test", "ratio"]
                                                   : node.opset < 12 ? ["ratio"] : ["seed"])
        if node.opset <= 6, try node.int("is_test", default: 0) == 0 {
            throw node.error("is_test 0 (training mode, the default before opset 7) is not supported: LayerKit runs "
                             + "inference; set is_test to 1")
        }
        if node.has(2) {
            guard let initializer = node.initializers[2] else {
                throw node.error("training_mode (input 2) is computed by the graph; LayerKit needs it as a constant false")
            }
            let mode: [Int]
            do { mode = try initializer.int64s() } catch { throw node.error("training_mode: \(error)") }
            guard mode.count == 1 else { throw node.error("training_mode must be a scalar, got \(Tensor.describe(initializer.dims))") }
            guard mode[0] == 0 else {
                throw node.error("training_mode true (random dropout) is not supported: LayerKit runs inference")
            }
        }
        var converted = ConvertedNode(layer: nil, inputs: [0])
        if node.node.outputs.count == 2, !node.node.outputs[1].isEmpty {
            // Every element kept: the mask is known at load, all true (1.0).
            let shape = try node.shape(0)
            converted.constantOutputs[1] = try Tensor(shape: shape, values: Array(repeating: 1, count: node.elementCount(shape)))
        }
        return converted
    }
}
