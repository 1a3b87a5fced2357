import LayerKitCore
import Foundation
// Each MIL op LayerKit runs, as standard ONNX ops (opset 20). Parameters
// follow coremltools' op definitions (iOS 15 onward); a setting LayerKit
// cannot honour is refused by name rather than ignored.

extension MILTranslator {
    /// Ops that are one ONNX op of the same inputs (x, or x and y).
    static let elementwise = [
        "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "sqrt": "Sqrt", "exp": "Exp", "abs": "Abs",
        "identity": "Identity", "add": "Add", "sub": "Sub", "mul": "Mul", "real_div": "Div", "maximum": "Max",
        "minimum": "Min", "pow": "Pow", "erf": "Erf",
    ]
    /// Ops with their own translation.
    static let special = [
        "const", "cast", "conv", "conv_transpose", "linear", "matmul", "batch_norm", "instance_norm", "layer_norm",
        "relu6", "leaky_relu", "silu", "gelu", "softmax", "clip", "log", "rsqrt", "pad", "upsample_nearest_neighbor",
        "upsample_bilinear", "resize_nearest_neighbor", "resize_bilinear", "reshape", "transpose", "concat", "split", "squeeze", "expand_dims", "slice_by_index",
        "reduce_mean", "reduce_sum", "reduce_max", "reduce_min", "avg_pool", "max_pool", "flatten2d",
    ]
    /// Every op translated, for the refusal's list.
    static var translated: [String] { (Array(elementwise.keys) + special).sorted() }

    /// Adds `op`'s nodes (a `const` is kept as a value).
    mutating func add(_ op: MILOperation) throws {
        guard Self.elementwise[op.type] != nil || Self.special.contains(op.type), op.blockCount == 0 else {
            throw LayerKitError.invalidModel("ops of type \(op.type) are not supported by LayerKit (supported: "
                                             + Self.translated.joined(separator: ", ") + ")")
        }
        guard let output = op.outputs.first?.name else { throw LayerKitError.invalidModel("the op has no output") }
        for value in op.outputs { types[value.name] = value.type }
        if op.type == "const" {
            guard let value = op.attributes["val"] else { throw LayerKitError.invalidModel("a const without 'val'") }
            constants[output] = try decode(value, "'val'")
            return
        }
        if op.type == "split" { return try split(op) }
        if let onnx = Self.elementwise[op.type] {
            let inputs = try (op.inputs["y"] == nil ? ["x"] : ["x", "y"]).map { try tensor(op, $0) }
            return node(onnx, inputs, output)
        }
        let x = op.type == "concat" ? "" : try tensor(op, "x")
        switch op.type {
        case "cast": try cast(op, x, output)
        case "conv", "conv_transpose": try convolution(op, x, output)
        case "linear": try linear(op, x, output)
        case "matmul": try matmul(op, x, output)
        case "batch_norm", "instance_norm", "layer_norm": try normalization(op, x, output)
        case "relu6": node("Clip", [x, scalar(output + ".min", 0), scalar(output + ".max", 6)], output)
        case "leaky_relu": node("LeakyRelu", [x], output, ["alpha": .float(try float(op, "alpha", default: 0.01))])
        case "silu":
            node("Sigmoid", [x], output + ".sigmoid")
            node("Mul", [x, output + ".sigmoid"], output)
        case "gelu": try gelu(op, x, output)
        case "softmax": node("Softmax", [x], output, ["axis": .int(try ints(op, "axis", default: [-1])?.first ?? -1)])
        case "clip":
            node("Clip", [x, scalar(output + ".min", try float(op, "alpha", default: 0)),
                          scalar(output + ".max", try float(op, "beta", default: 1))], output)
        case "log", "rsqrt":
            // log(x + epsilon), 1 / sqrt(x + epsilon), MIL's definitions (log's default 1e-45 is float32's smallest).
            let epsilon = try float(op, "epsilon", default: op.type == "log" ? .leastNonzeroMagnitude : 1e-12)
            let shifted = epsilon == 0 ? x : output + ".shifted"
            if epsilon != 0 { node("Add", [x, scalar(output + ".epsilon", epsilon)], shifted) }
            if op.type == "log" { return node("Log", [shifted], output) }
            node("Sqrt", [shifted], output + ".sqrt")
            node("Reciprocal", [output + ".sqrt"], output)
        case "pad": try pad(op, x, output)
        case "upsample_nearest_neighbor", "upsample_bilinear": try upsample(op, x, output)
        case "resize_nearest_neighbor", "resize_bilinear": try resize(op, x, output)
        case "reshape": node("Reshape", [x, try int64s(op, "shape", output)], output)
        case "transpose":
            // MIL counts negative axes from the end; ONNX's perm does not.
            let rank = try rank(x)
            node("Transpose", [x], output, ["perm": .ints(try (ints(op, "perm") ?? []).map { $0 < 0 ? $0 + rank : $0 })])
        case "concat":
            guard try !bool(op, "interleave", default: false) else {
                throw LayerKitError.invalidModel("an interleaved concat, which LayerKit does not translate")
            }
            node("Concat", try tensors(op, "values"), output, ["axis": .int(try ints(op, "axis")?.first ?? 0)])
        case "squeeze":
            node("Squeeze", try op.inputs["axes"] == nil ? [x] : [x, int64s(op, "axes", output)], output)
        case "expand_dims": node("Unsqueeze", [x, try int64s(op, "axes", output)], output)
        case "slice_by_index": try slice(op, x, output)
        case "reduce_mean", "reduce_sum", "reduce_max", "reduce_min": try reduce(op, x, output)
        case "avg_pool", "max_pool": try pool(op, x, output)
        default: node("Flatten", [x], output, ["axis": .int(try ints(op, "axis", default: [1])?.first ?? 1)])
        }
    }

    // MARK: Graph pieces

    /// Adds a node of the default domain, its output computed.
    mutating func node(_ opType: String, _ inputs: [String], _ output: String, _ attributes: [String: ONNXAttribute] = [:]) {
        graph.addNode(opType, inputs, output, attributes)
        computed.insert(output)
    }

    /// A scalar float initializer.
    mutating func scalar(_ name: String, _ value: Float) -> String { graph.constant(name, [], [value]) }

    /// Parameter `name`, integers, as an int64 initializer of one axis.
    mutating func int64s(_ op: MILOperation, _ name: String, _ output: String) throws -> String {
        let values = try ints(op, name) ?? []
        return graph.constant("\(output).\(name)", [values.count], int64s: values)
    }

    /// The rank of value `name`, from its type.
    func rank(_ name: String) throws -> Int {
        guard let type = types[name] else { throw LayerKitError.invalidModel("value '\(name)' has no type") }
        return type.dims.count
    }

    /// The known dimensions of value `name`.
    func dims(_ name: String) throws -> [Int] {
        guard let dims = types[name]?.dims, dims.allSatisfy({ $0 != nil }) else {
            throw LayerKitError.invalidModel("value '\(name)' has unknown dimensions")
        }
        return dims.compactMap { $0 }
    }

    /// MIL's `pad` list of a custom padding, [begin0, end0, begin1, end1, ...],
    /// as ONNX's pads [begin0, begin1, ..., end0, end1, ...].
    static func onnxPads(_ pad: [Int]) -> [Int] {
        stride(from: 0, to: pad.count, by: 2).map { pad[$0] } + stride(from: 1, to: pad.count, by: 2).map { pad[$0] }
    }

    /// The padding attributes of a convolution or pooling: `pads`, or `auto_pad` for same padding.
    mutating func padding(_ op: MILOperation, spatial: Int) throws -> [String: ONNXAttribute] {
        switch try string(op, "pad_type", default: "valid") {
        case "valid": return ["pads": .ints(Array(repeating: 0, count: 2 * spatial))]
        case "custom":
            let pad = try ints(op, "pad") ?? Array(repeating: 0, count: 2 * spatial)
            guard pad.count == 2 * spatial else {
                throw LayerKitError.invalidModel("'pad' has \(pad.count) values for \(spatial) spatial axes")
            }
            return ["pads": .ints(Self.onnxPads(pad))]
        case "same": return ["auto_pad": .string("SAME_UPPER")]
        case "same_lower": return ["auto_pad": .string("SAME_LOWER")]
        case let other: throw LayerKitError.invalidModel("pad_type '\(other)', which LayerKit does not translate")
        }
    }

    // MARK: Ops

    private mutating func cast(_ op: MILOperation, _ x: String, _ output: String) throws {
        switch try string(op, "dtype", default: "") {
        case "fp16", "fp32", "fp64": node("Identity", [x], output)
        case "int32": node("Cast", [x], output, ["to": .int(ONNXDataType.int32.rawValue)])
        case "bool": node("Cast", [x], output, ["to": .int(ONNXDataType.bool.rawValue)])
        case let other: throw LayerKitError.invalidModel("a cast to '\(other)', which LayerKit does not translate")
        }
    }

    private mutating func convolution(_ op: MILOperation, _ x: String, _ output: String) throws {
        let weight = try tensor(op, "weight")
        let spatial = try rank(weight) - 2
        guard spatial >= 1 else { throw LayerKitError.invalidModel("a weight of rank \(spatial + 2)") }
        var attributes = try padding(op, spatial: spatial)
        let ones = Array(repeating: 1, count: spatial)
        attributes["strides"] = .ints(try ints(op, "strides", default: ones) ?? ones)
        attributes["dilations"] = .ints(try ints(op, "dilations", default: ones) ?? ones)
        attributes["group"] = .int(try ints(op, "groups", default: [1])?.first ?? 1)
        if op.type == "conv_transpose", let shape = try ints(op, "output_shape") {
            try checkOutputShape(shape, of: x, weight: weight, attributes)
        }
        let inputs = [x, weight] + (op.inputs["bias"] == nil ? [] : [try tensor(op, "bias")])
        node(op.type == "conv" ? "Conv" : "ConvTranspose", inputs, output, attributes)
    }

    /// coremltools gives a conv_transpose the `output_shape` its padding
    /// computes; LayerKit takes one equal to that, and refuses another
    /// (which would need output padding).
    private func checkOutputShape(_ shape: [Int], of x: String, weight: String,
                                  _ attributes: [String: ONNXAttribute]) throws {
        let (input, kernel) = (try dims(x), try dims(weight))
        let spatial = kernel.count - 2
        guard case .ints(let strides)? = attributes["strides"], case .ints(let dilations)? = attributes["dilations"],
              shape.count >= spatial, input.count == spatial + 2 else {
            throw LayerKitError.invalidModel("output_shape \(shape) does not fit the input and weight")
        }
        let expected = (0..<spatial).map { axis -> Int in
            let full = (input[axis + 2] - 1) * strides[axis] + (kernel[axis + 2] - 1) * dilations[axis] + 1
            if case .ints(let pads)? = attributes["pads"] { return full - pads[axis] - pads[axis + spatial] }
            return input[axis + 2] * strides[axis]  // same padding
        }
        guard Array(shape.suffix(spatial)) == expected else {
            throw LayerKitError.invalidModel("output_shape \(shape) differs from the \(expected) the padding gives, "
                                             + "which LayerKit does not translate")
        }
    }

    /// x · weightᵀ + bias, weight [out, in]: MatMul with the weight
    /// transposed (once, when it is a constant), then Add.
    private mutating func linear(_ op: MILOperation, _ x: String, _ output: String) throws {
        guard let weight = try constant(op, "weight"), case .floats(let values) = weight.data,
              case let dims = try weight.dims("weight"), dims.count == 2 else {
            throw LayerKitError.invalidModel("'weight' is not a constant float matrix")
        }
        let (rows, columns) = (dims[0], dims[1])
        let transposed = (0..<columns).flatMap { c in (0..<rows).map { r in values[r * columns + c] } }
        let name = graph.constant(output + ".weightT", [columns, rows], transposed)
        guard op.inputs["bias"] != nil else { return node("MatMul", [x, name], output) }
        node("MatMul", [x, name], output + ".product")
        node("Add", [output + ".product", try tensor(op, "bias")], output)
    }

    private mutating func matmul(_ op: MILOperation, _ x: String, _ output: String) throws {
        var operands = [x, try tensor(op, "y")]
        for (index, flag) in ["transpose_x", "transpose_y"].enumerated() where try bool(op, flag, default: false) {
            let rank = try rank(operands[index])
            guard rank >= 2 else { continue }
            let perm = Array(0..<rank - 2) + [rank - 1, rank - 2]
            node("Transpose", [operands[index]], "\(output).\(flag)", ["perm": .ints(perm)])
            operands[index] = "\(output).\(flag)"
        }
        node("MatMul", operands, output)
    }

    /// batch_norm, instance_norm and layer_norm, with gamma 1 and beta 0 where omitted.
    private mutating func normalization(_ op: MILOperation, _ x: String, _ output: String) throws {
        let epsilon = try float(op, "epsilon", default: 1e-5)
        let xDims = try dims(x)
        var axis = 1, shape = [xDims.count > 1 ? xDims[1] : 1]
        if op.type == "layer_norm" {
            let rank = xDims.count
            let axes = try (ints(op, "axes") ?? Array(0..<rank)).map { $0 < 0 ? $0 + rank : $0 }.sorted()
            guard !axes.isEmpty, axes == Array(rank - axes.count..<rank) else {
                throw LayerKitError.invalidModel("layer_norm over axes \(axes); LayerKit normalizes over the last axes")
            }
            axis = axes[0]
            shape = Array(xDims[axis...])
        }
        let count = shape.reduce(1, *)
        let gamma = try op.inputs["gamma"] == nil ? graph.constant(output + ".gamma", shape, Array(repeating: 1, count: count))
            : tensor(op, "gamma")
        let beta = try op.inputs["beta"] == nil ? graph.constant(output + ".beta", shape, Array(repeating: 0, count: count))
            : tensor(op, "beta")
        switch op.type {
        case "batch_norm":
            node("BatchNormalization", [x, gamma, beta, try tensor(op, "mean"), try tensor(op, "variance")], output,
                 ["epsilon": .float(epsilon)])
        case "instance_norm": node("InstanceNormalization", [x, gamma, beta], output, ["epsilon": .float(epsilon)])
        default: node("LayerNormalization", [x, gamma, beta], output, ["axis": .int(axis), "epsilon": .float(epsilon)])
        }
    }

    private mutating func gelu(_ op: MILOperation, _ x: String, _ output: String) throws {
        switch try string(op, "mode", default: "EXACT") {
        case "EXACT": node("Gelu", [x], output)
        case "TANH_APPROXIMATION": node("Gelu", [x], output, ["approximate": .string("tanh")])
        case "SIGMOID_APPROXIMATION":
            // x · sigmoid(1.702 x)
            node("Mul", [x, scalar(output + ".k", 1.702)], output + ".scaled")
            node("Sigmoid", [output + ".scaled"], output + ".sigmoid")
            node("Mul", [x, output + ".sigmoid"], output)
        case let other: throw LayerKitError.invalidModel("gelu mode '\(other)', which LayerKit does not translate")
        }
    }

    /// MIL pads the last pad.count / 2 axes; ONNX's Pad takes begins, then ends, of every axis.
    private mutating func pad(_ op: MILOperation, _ x: String, _ output: String) throws {
        let pad = try ints(op, "pad") ?? [], rank = try rank(x)
        guard pad.count % 2 == 0, pad.count / 2 <= rank else {
            throw LayerKitError.invalidModel("'pad' has \(pad.count) values for a value of rank \(rank)")
        }
        let full = Array(repeating: 0, count: 2 * rank - pad.count) + pad
        let modes = ["constant": "constant", "reflect": "reflect", "replicate": "edge"]
        let mode = try string(op, "mode", default: "constant")
        guard let onnxMode = modes[mode] else {
            throw LayerKitError.invalidModel("pad mode '\(mode)', which LayerKit does not translate")
        }
        let pads = graph.constant(output + ".pads", [full.count], int64s: Self.onnxPads(full))
        node("Pad", [x, pads, scalar(output + ".value", try float(op, "constant_val", default: 0))], output,
             ["mode": .string(onnxMode)])
    }

    /// Resize by the scale factors: nearest as floor(i / scale), bilinear
    /// with MIL's grid (align_corners, or half-pixel centres).
    private mutating func upsample(_ op: MILOperation, _ x: String, _ output: String) throws {
        let rank = try rank(x)
        guard rank >= 3 else { throw LayerKitError.invalidModel("an input of rank \(rank); MIL upsamples rank 3 or more") }
        let scales = Array(repeating: Float(1), count: rank - 2)
            + [try float(op, "scale_factor_height", default: 1), try float(op, "scale_factor_width", default: 1)]
        var attributes: [String: ONNXAttribute]
        if op.type == "upsample_nearest_neighbor" {
            attributes = ["mode": .string("nearest"), "coordinate_transformation_mode": .string("asymmetric"),
                          "nearest_mode": .string("floor")]
        } else {
            let aligned = try bool(op, "align_corners", default: true)
            guard try bool(op, "half_pixel_centers", default: !aligned) == !aligned else {
                throw LayerKitError.invalidModel("half_pixel_centers equal to align_corners, which LayerKit does not translate")
            }
            attributes = ["mode": .string("linear"),
                          "coordinate_transformation_mode": .string(aligned ? "align_corners" : "half_pixel")]
        }
        node("Resize", [x, "", graph.constant(output + ".scales", [rank], scales)], output, attributes)
    }

    /// MIL's `resize_bilinear` sampling modes as ONNX coordinate transformations
    /// (coremltools' grid points: STRICT_ALIGN_CORNERS and ALIGN_CORNERS place i at
    /// i (in - 1) / (out - 1), DEFAULT at i in / out, UNALIGN_CORNERS at
    /// (i + 0.5) in / out - 0.5, each clamped to the input as ONNX's linear mode
    /// clamps). OFFSET_CORNERS, (i + 0.5) (in - 1) / out, has no ONNX equivalent.
    private static let samplingModes = ["STRICT_ALIGN_CORNERS": "align_corners", "ALIGN_CORNERS": "align_corners",
                                        "DEFAULT": "asymmetric", "UNALIGN_CORNERS": "half_pixel"]

    /// Resize to a target height and width: nearest as floor(i in / out) (the
    /// upsample of scale out / in), bilinear by the sampling mode.
    private mutating func resize(_ op: MILOperation, _ x: String, _ output: String) throws {
        let dims = try dims(x)
        guard dims.count >= 3 else { throw LayerKitError.invalidModel("an input of rank \(dims.count); MIL resizes rank 3 or more") }
        let bilinear = op.type == "resize_bilinear"
        let target = try ["target_size_height", "target_size_width"].map { name in
            guard let size = try ints(op, name, default: bilinear ? [1] : nil)?.first else {
                throw LayerKitError.invalidModel("no '\(name)'")
            }
            guard size >= 1 else { throw LayerKitError.invalidModel("'\(name)' \(size) is not positive") }
            return size
        }
        var attributes: [String: ONNXAttribute] = ["mode": .string("nearest"),
                                                   "coordinate_transformation_mode": .string("asymmetric"),
                                                   "nearest_mode": .string("floor")]
        if bilinear {
            let mode = try string(op, "sampling_mode", default: "DEFAULT")
            guard var transformation = Self.samplingModes[mode] else {
                throw LayerKitError.invalidModel("sampling_mode '\(mode)', which LayerKit does not translate (it "
                                                 + "translates " + Self.samplingModes.keys.sorted().joined(separator: ", ") + ")")
            }
            if transformation == "align_corners" && target.contains(1) {
                // A single output point: STRICT_ALIGN_CORNERS leaves it undefined (0 / 0), ALIGN_CORNERS
                // puts it at (in - 1) / 2, which is half_pixel's point for one output.
                guard mode == "ALIGN_CORNERS", target == [1, 1] else {
                    throw LayerKitError.invalidModel("sampling_mode \(mode) with a target size of 1 beside "
                                                     + "\(target.max() ?? 1), which LayerKit does not translate")
                }
                transformation = "half_pixel"
            }
            attributes = ["mode": .string("linear"), "coordinate_transformation_mode": .string(transformation)]
        }
        let sizes = graph.constant(output + ".sizes", [dims.count], int64s: Array(dims.dropLast(2)) + target)
        node("Resize", [x, "", "", sizes], output, attributes)
    }

    private mutating func split(_ op: MILOperation) throws {
        let x = try tensor(op, "x"), outputs = op.outputs.map(\.name)
        var inputs = [x], attributes: [String: ONNXAttribute] = ["axis": .int(try ints(op, "axis")?.first ?? 0)]
        if let sizes = try ints(op, "split_sizes") {
            inputs.append(graph.constant(outputs[0] + ".split", [sizes.count], int64s: sizes))
        } else {
            attributes["num_outputs"] = .int(outputs.count)
        }
        graph.graph.nodes.append(ONNXNode(name: outputs[0], opType: "Split", domain: "", inputs: inputs,
                                          outputs: outputs, attributes: attributes))
        computed.formUnion(outputs)
    }

    /// Slice by begin, end and stride per axis; a masked begin or end is
    /// the axis's start or end, and squeezed axes are removed after.
    private mutating func slice(_ op: MILOperation, _ x: String, _ output: String) throws {
        let rank = try rank(x)
        let begin = try ints(op, "begin") ?? [], end = try ints(op, "end") ?? []
        let strides = try ints(op, "stride") ?? Array(repeating: 1, count: rank)
        func mask(_ name: String) throws -> [Bool] {
            guard let constant = try constant(op, name) else { return Array(repeating: false, count: rank) }
            guard case .bools(let bools) = constant.data else {
                throw LayerKitError.invalidModel("parameter '\(name)' is not a bool tensor")
            }
            return bools
        }
        let (beginMask, endMask, squeezeMask) = (try mask("begin_mask"), try mask("end_mask"), try mask("squeeze_mask"))
        guard [begin.count, end.count, strides.count, beginMask.count, endMask.count, squeezeMask.count]
            .allSatisfy({ $0 == rank }) else {
            throw LayerKitError.invalidModel("begin, end, stride and masks need \(rank) values each")
        }
        let starts = (0..<rank).map { beginMask[$0] ? (strides[$0] > 0 ? 0 : Int(Int32.max)) : begin[$0] }
        let ends = (0..<rank).map { endMask[$0] ? (strides[$0] > 0 ? Int(Int32.max) : Int(Int32.min)) : end[$0] }
        let squeezed = (0..<rank).filter { squeezeMask[$0] }
        let sliced = squeezed.isEmpty ? output : output + ".sliced"
        node("Slice", [x, graph.constant(output + ".starts", [rank], int64s: starts),
                       graph.constant(output + ".ends", [rank], int64s: ends),
                       graph.constant(output + ".axes", [rank], int64s: Array(0..<rank)),
                       graph.constant(output + ".steps", [rank], int64s: strides)], sliced)
        if !squeezed.isEmpty {
            node("Squeeze", [sliced, graph.constant(output + ".squeezed", [squeezed.count], int64s: squeezed)], output)
        }
    }

    private mutating func reduce(_ op: MILOperation, _ x: String, _ output: String) throws {
        let onnx = ["reduce_mean": "ReduceMean", "reduce_sum": "ReduceSum", "reduce_max": "ReduceMax",
                    "reduce_min": "ReduceMin"][op.type] ?? ""
        let keep = try bool(op, "keep_dims", default: false)
        let inputs = try op.inputs["axes"] == nil ? [x] : [x, int64s(op, "axes", output)]
        node(onnx, inputs, output, ["keepdims": .int(keep ? 1 : 0)])
    }

    private mutating func pool(_ op: MILOperation, _ x: String, _ output: String) throws {
        let kernel = try ints(op, "kernel_sizes") ?? []
        guard !kernel.isEmpty else { throw LayerKitError.invalidModel("no kernel_sizes") }
        var attributes = try padding(op, spatial: kernel.count)
        attributes["kernel_shape"] = .ints(kernel)
        let ones = Array(repeating: 1, count: kernel.count)
        attributes["strides"] = .ints(try ints(op, "strides", default: ones) ?? ones)
        attributes["ceil_mode"] = .int(try bool(op, "ceil_mode", default: false) ? 1 : 0)
        if op.type == "avg_pool" {
            attributes["count_include_pad"] = .int(try bool(op, "exclude_padding_from_average", default: false) ? 0 : 1)
        }
        node(op.type == "avg_pool" ? "AveragePool" : "MaxPool", [x], output, attributes)
    }
}
