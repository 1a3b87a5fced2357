import LayerKitCore
// Each TFLite builtin operator LayerKit runs, as ONNX ops (opset 17) on NCHW
// values. Options are read by the field ids of schema.fbs's options tables;
// an option LayerKit cannot honour is refused by name rather than ignored.

extension TFLiteGraphBuilder {
    /// The builtin operators translated, by `BuiltinOperator` code.
    static let builtinNames = [
        0: "ADD", 1: "AVERAGE_POOL_2D", 2: "CONCATENATION", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 5: "DEPTH_TO_SPACE",
        6: "DEQUANTIZE", 9: "FULLY_CONNECTED", 14: "LOGISTIC", 17: "MAX_POOL_2D", 18: "MUL", 19: "RELU",
        20: "RELU_N1_TO_1", 21: "RELU6", 22: "RESHAPE", 23: "RESIZE_BILINEAR", 25: "SOFTMAX", 28: "TANH", 34: "PAD",
        40: "MEAN", 41: "SUB", 42: "DIV", 45: "STRIDED_SLICE", 47: "EXP", 54: "PRELU", 55: "MAXIMUM", 57: "MINIMUM",
        59: "NEG", 60: "PADV2", 66: "SIN", 67: "TRANSPOSE_CONV", 73: "LOG", 75: "SQRT", 76: "RSQRT", 92: "SQUARE",
        97: "RESIZE_NEAREST_NEIGHBOR", 98: "LEAKY_RELU", 99: "SQUARED_DIFFERENCE", 101: "ABS", 108: "COS", 111: "ELU",
        114: "QUANTIZE", 117: "HARD_SWISH", 124: "DENSIFY",
    ]
    /// The builtin operators that are one ONNX op of the same one input.
    static let unaryOps = ["RELU": "Relu", "LOGISTIC": "Sigmoid", "TANH": "Tanh", "NEG": "Neg", "HARD_SWISH": "HardSwish",
                           "ABS": "Abs", "EXP": "Exp", "LOG": "Log", "SQRT": "Sqrt", "SIN": "Sin", "COS": "Cos",
                           "ELU": "Elu"]
    /// The builtin operators that are one broadcasting ONNX op of their two inputs.
    static let binaryOps = ["ADD": "Add", "MUL": "Mul", "SUB": "Sub", "DIV": "Div", "MAXIMUM": "Max", "MINIMUM": "Min"]

    /// Adds `op`'s nodes.
    mutating func add(_ op: TFLiteOperator, code: TFLiteOperatorCode) throws {
        guard let output = op.outputs.first, let input = op.inputs.first, input >= 0 else {
            throw LayerKitError.invalidModel("the operator has \(op.inputs.count) inputs and \(op.outputs.count) outputs")
        }
        if code.builtin == 32 { return try custom(op, name: code.custom ?? "") }
        guard let name = Self.builtinNames[code.builtin] else {
            throw LayerKitError.invalidModel("the operator is not supported by LayerKit (supported: "
                                             + Self.builtinNames.values.sorted().joined(separator: ", ") + ")")
        }
        // The inputs an op may leave out (-1): a convolution's or fully-connected layer's bias.
        let optional: Set<Int> = ["CONV_2D": [2], "DEPTHWISE_CONV_2D": [2], "FULLY_CONNECTED": [2],
                                  "TRANSPOSE_CONV": [3]][name] ?? []
        for (position, index) in op.inputs.enumerated() where index < 0 && !optional.contains(position) {
            throw LayerKitError.invalidModel("input \(position) is left out (-1), which the operator needs")
        }
        // An int8 or uint8 activation is held as its real value; an op computing one is emulated in float32.
        var quantized = false
        for index in op.inputs + op.outputs where index >= 0 && !isConstant(index) {
            quantized = try grid(index) != nil || quantized
        }
        guard !quantized || Self.quantizedOperators.contains(name) else {
            throw LayerKitError.invalidModel("\(name) of int8 or uint8 tensors is not supported by LayerKit (supported: "
                                             + Self.quantizedOperators.sorted().joined(separator: ", ") + ")")
        }
        let options = op.options
        func option(_ id: Int, _ field: String, default value: Int = 0) throws -> Int {
            try options?.integer(id, field, default: value) ?? value
        }
        func byteOption(_ id: Int, _ field: String) throws -> Int {
            try options?.integer(id, field, size: 1, signed: false) ?? 0
        }
        func flag(_ id: Int, _ field: String) throws -> Bool { try options?.bool(id, field) ?? false }
        switch name {
        case "CONV_2D":
            try convolution(op, depthwise: false, padding: byteOption(0, "padding"),
                            strides: [option(2, "stride_h"), option(1, "stride_w")],
                            dilations: [option(5, "dilation_h_factor", default: 1), option(4, "dilation_w_factor", default: 1)],
                            activation: byteOption(3, "fused_activation_function"))
        case "DEPTHWISE_CONV_2D":
            try convolution(op, depthwise: true, padding: byteOption(0, "padding"),
                            strides: [option(2, "stride_h"), option(1, "stride_w")],
                            dilations: [option(6, "dilation_h_factor", default: 1), option(5, "dilation_w_factor", default: 1)],
                            activation: byteOption(4, "fused_activation_function"))
        case "TRANSPOSE_CONV":
            guard op.inputs.count >= 3 else { throw LayerKitError.invalidModel("TRANSPOSE_CONV has \(op.inputs.count) inputs") }
            try transposeConvolution(x: op.inputs[2], weights: op.inputs[1], bias: op.inputs.count > 3 ? op.inputs[3] : -1,
                                     output: output, padding: byteOption(0, "padding"),
                                     strides: [option(2, "stride_h"), option(1, "stride_w")],
                                     activation: byteOption(3, "fused_activation_function"))
        case "FULLY_CONNECTED":
            guard try byteOption(1, "weights_format") == 0 else {
                throw LayerKitError.invalidModel("FULLY_CONNECTED's shuffled weights format is not supported")
            }
            try fullyConnected(op, keepDims: flag(2, "keep_num_dims"), activation: byteOption(0, "fused_activation_function"))
        case "MAX_POOL_2D", "AVERAGE_POOL_2D":
            let kernel = [try option(4, "filter_height"), try option(3, "filter_width")]
            let strides = [try option(2, "stride_h"), try option(1, "stride_w")]
            let pads = try self.pads(input, padding: byteOption(0, "padding"), kernel: kernel, strides: strides,
                                     dilations: [1, 1])
            try emit(name == "MAX_POOL_2D" ? "MaxPool" : "AveragePool", [value(input)], output: output,
                     activation: byteOption(5, "fused_activation_function"),
                     ["kernel_shape": .ints(kernel), "strides": .ints(strides), "pads": .ints(pads)])
        case let name where Self.binaryOps[name] != nil:
            guard op.inputs.count == 2 else { throw LayerKitError.invalidModel("\(name) has \(op.inputs.count) inputs") }
            // MAXIMUM and MINIMUM fuse no activation (their options table is empty).
            let fuses = ["ADD", "MUL", "SUB", "DIV"].contains(name)
            try emit(Self.binaryOps[name] ?? "", try broadcast(op.inputs[0], op.inputs[1]), output: output,
                     activation: fuses ? byteOption(0, "fused_activation_function") : 0)
        case let name where Self.unaryOps[name] != nil: try emit(Self.unaryOps[name] ?? "", [value(input)], output: output)
        case "SQUARE": try emit("Mul", [value(input), value(input)], output: output)
        case "SQUARED_DIFFERENCE":
            guard op.inputs.count == 2 else { throw LayerKitError.invalidModel("\(name) has \(op.inputs.count) inputs") }
            let difference = unique(tensors[output].name + ".difference")
            addNode("Sub", try broadcast(op.inputs[0], op.inputs[1]), difference)
            try emit("Mul", [difference, difference], output: output)
        case "RSQRT":
            let root = unique(tensors[output].name + ".sqrt")
            addNode("Sqrt", [try value(input)], root)
            try emit("Reciprocal", [root], output: output)
        case "PRELU", "LEAKY_RELU":
            if name == "LEAKY_RELU" {
                try emit("LeakyRelu", [value(input)], output: output, ["alpha": .float(try options?.float(0, "alpha") ?? 0)])
            } else {
                try emit("PRelu", try broadcast(op.inputs[0], op.inputs[1]), output: output)
            }
        case "RELU6": try activate(try value(input), 3, into: outputName(output))
        case "RELU_N1_TO_1": try activate(try value(input), 2, into: outputName(output))
        case "SOFTMAX":
            let beta = try options?.float(0, "beta", default: 1) ?? 1
            var logits = try value(input)
            if beta != 1 {
                let scaled = unique(tensors[output].name + ".scaled")
                addNode("Mul", [logits, constant(scaled + ".beta", [], [beta])], scaled)
                logits = scaled
            }
            // Over the last TFLite axis: the channels of a rank-4 value.
            try emit("Softmax", [logits], output: output, ["axis": .int(tensors[input].shape.count == 4 ? 1 : -1)])
        case "CONCATENATION":
            let rank = tensors[output].shape.count
            var axis = try option(0, "axis")
            if axis < 0 { axis += rank }
            guard (0..<rank).contains(axis) else { throw LayerKitError.invalidModel("axis \(axis) of rank \(rank)") }
            try emit("Concat", try op.inputs.map { try value($0) }, output: output,
                     activation: byteOption(1, "fused_activation_function"),
                     ["axis": .int(rank == 4 ? Self.nchwAxis[axis] : axis)])
        case "RESHAPE":
            try emit("Reshape", inTFLiteLayout: [tfliteLayout(input),
                                                 constant(tensors[output].name + ".shape", [tensors[output].shape.count],
                                                          int64s: tensors[output].shape)], output: output)
        case "PAD", "PADV2": try pad(op)
        case "MEAN": try mean(op, keepDims: flag(0, "keep_dims"))
        case "STRIDED_SLICE": try stridedSlice(op, options)
        case "DEPTH_TO_SPACE":
            // TensorFlow's NHWC depth-to-space orders the moved channels as ONNX's DCR mode does.
            try emit("DepthToSpace", [value(input)], output: output, ["blocksize": .int(try option(0, "block_size")),
                                                               "mode": .string("DCR")])
        case "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR":
            let bilinear = name == "RESIZE_BILINEAR"
            try resize(op, bilinear: bilinear, alignCorners: flag(bilinear ? 2 : 0, "align_corners"),
                       halfPixel: flag(bilinear ? 3 : 1, "half_pixel_centers"))
        case "DEQUANTIZE" where !isConstant(input), "QUANTIZE":
            // The real value passes; QUANTIZE's rounding to the output's grid follows.
            addNode("Identity", [try value(input)], outputName(output))
        case "DEQUANTIZE": try dequantize(op)
        default: try densify(op)
        }
        if !isConstant(output), let grid = try grid(output) { try requantize(output, grid) }
    }

    // MARK: Layout helpers

    /// Two operands of a broadcasting op in the graph's layout: when one is
    /// rank 4 (NCHW inside), the other is brought to rank 4 as TFLite aligns it.
    mutating func broadcast(_ a: Int, _ b: Int) throws -> [String] {
        let ranks = (tensors[a].shape.count, tensors[b].shape.count)
        guard ranks.0 == 4 || ranks.1 == 4 else { return [try value(a), try value(b)] }
        return [try rank4(a), try rank4(b)]
    }

    /// ONNX `pads` [top, left, bottom, right] for a window over the NHWC tensor
    /// `input`: SAME as TFLite computes it (the odd pixel at the end), VALID none.
    func pads(_ input: Int, padding: Int, kernel: [Int], strides: [Int], dilations: [Int]) throws -> [Int] {
        let shape = tensors[input].shape
        // Windows past 65536 are refused: no model has them, and the arithmetic below stays far from overflow.
        let fits = { (values: [Int]) in values.allSatisfy { (1...(1 << 16)).contains($0) } }
        guard shape.count == 4, fits(strides), fits(kernel), fits(dilations) else {
            throw LayerKitError.invalidModel("a window of kernel \(kernel), strides \(strides), dilations \(dilations) "
                                             + "over shape \(shape)")
        }
        guard padding == 0 else { return [0, 0, 0, 0] }
        var before = [0, 0], after = [0, 0]
        for axis in 0..<2 {
            let size = shape[axis + 1], extent = (kernel[axis] - 1) * dilations[axis] + 1
            let out = (size + strides[axis] - 1) / strides[axis]
            let total = max(0, (out - 1) * strides[axis] + extent - size)
            (before[axis], after[axis]) = (total / 2, total - total / 2)
        }
        return before + after
    }

    // MARK: Operators

    /// CONV_2D (weights OHWI, grouped when the weights' I is a fraction of the
    /// input's channels) or DEPTHWISE_CONV_2D (weights [1, H, W, C*M], one group per input channel).
    private mutating func convolution(_ op: TFLiteOperator, depthwise: Bool, padding: Int, strides: [Int],
                                      dilations: [Int], activation: Int) throws {
        guard op.inputs.count >= 2 else { throw LayerKitError.invalidModel("the operator has no weights") }
        let (input, weights) = (op.inputs[0], op.inputs[1])
        let shape = tensors[weights].shape, channels = tensors[input].shape.last ?? 0
        guard shape.count == 4, tensors[input].shape.count == 4, channels > 0 else {
            throw LayerKitError.invalidModel("weights of shape \(shape) for input of shape \(tensors[input].shape)")
        }
        let groups = depthwise ? channels : channels / max(1, shape[3])
        guard depthwise ? shape[0] == 1 && shape[3] % channels == 0 : shape[3] * groups == channels else {
            throw LayerKitError.invalidModel("weights of shape \(shape) do not fit \(channels) input channels")
        }
        let (dims, data) = Self.transposed(try floats(weights), shape, depthwise ? [3, 0, 1, 2] : Self.toNCHW)
        var inputs = [try value(input), constant(tensors[weights].name, dims, data)]
        if op.inputs.count > 2, op.inputs[2] >= 0 { inputs.append(try value(op.inputs[2])) }
        let kernel = [shape[1], shape[2]]
        try emit("Conv", inputs, output: op.outputs[0], activation: activation,
                 ["kernel_shape": .ints(kernel), "strides": .ints(strides), "dilations": .ints(dilations),
                  "group": .int(groups),
                  "pads": .ints(try pads(input, padding: padding, kernel: kernel, strides: strides, dilations: dilations))])
    }

    /// TRANSPOSE_CONV, or mediapipe's Convolution2DTransposeBias: weights
    /// [O, H, W, I] as ONNX's [I, O, H, W]; the output tensor's size decides
    /// the padding (SAME: the excess split with the odd pixel at the end) and any extra border.
    mutating func transposeConvolution(x: Int, weights: Int, bias: Int, output: Int, padding: Int, strides: [Int],
                                       activation: Int) throws {
        let shape = tensors[weights].shape, inShape = tensors[x].shape, outShape = tensors[output].shape
        guard shape.count == 4, inShape.count == 4, outShape.count == 4, inShape[3] == shape[3],
              strides.allSatisfy({ $0 > 0 }) else {
            throw LayerKitError.invalidModel("weights of shape \(shape) for input of shape \(inShape)")
        }
        var before = [0, 0], after = [0, 0], extra = [0, 0]
        for axis in 0..<2 {
            let full = (inShape[axis + 1] - 1) * strides[axis] + shape[axis + 1]
            let total = padding == 0 ? max(0, full - outShape[axis + 1]) : 0
            (before[axis], after[axis]) = (total / 2, total - total / 2)
            extra[axis] = outShape[axis + 1] - (full - total)
            guard extra[axis] >= 0, extra[axis] < max(strides[axis], 1) || extra[axis] == 0 else {
                throw LayerKitError.invalidModel("output size \(outShape) does not follow from input \(inShape), "
                                                 + "weights \(shape) and strides \(strides)")
            }
        }
        let (dims, data) = Self.transposed(try floats(weights), shape, [3, 0, 1, 2])
        var inputs = [try value(x), constant(tensors[weights].name, dims, data)]
        if bias >= 0 { inputs.append(try value(bias)) }
        try emit("ConvTranspose", inputs, output: output, activation: activation,
                 ["kernel_shape": .ints([shape[1], shape[2]]), "strides": .ints(strides),
                  "pads": .ints(before + after), "output_padding": .ints(extra)])
    }

    /// FULLY_CONNECTED: the input's rows (its last axis, or all but the batch
    /// flattened in NHWC order) times the [O, I] weights transposed, plus the bias.
    private mutating func fullyConnected(_ op: TFLiteOperator, keepDims: Bool, activation: Int) throws {
        guard op.inputs.count >= 2 else { throw LayerKitError.invalidModel("the operator has no weights") }
        let (input, weights, output) = (op.inputs[0], op.inputs[1], op.outputs[0])
        let shape = tensors[weights].shape
        guard shape.count == 2, shape[1] > 0 else { throw LayerKitError.invalidModel("weights of shape \(shape)") }
        var rows = try tfliteLayout(input)
        if !keepDims && tensors[input].shape.count != 2 {
            let flat = unique(tensors[input].name + ".rows")
            addNode("Reshape", [rows, constant(flat + ".shape", [2], int64s: [-1, shape[1]])], flat)
            rows = flat
        }
        let (dims, data) = Self.transposed(try floats(weights), shape, [1, 0])
        let product = unique(tensors[output].name + ".matmul")
        addNode("MatMul", [rows, constant(tensors[weights].name, dims, data)], product)
        var result = product
        if op.inputs.count > 2, op.inputs[2] >= 0 {
            result = unique(tensors[output].name + ".biased")
            addNode("Add", [product, try value(op.inputs[2])], result)
        }
        let target = tensors[output].shape
        if target.count == 4 || activation != 0 {
            let activated = activation == 0 ? result : unique(tensors[output].name + ".activated")
            if activation != 0 { try activate(result, activation, into: activated) }
            emit("Reshape", inTFLiteLayout: [activated, constant(activated + ".shape", [target.count], int64s: target)],
                 output: output)
        } else {
            addNode("Identity", [result], outputName(output))
        }
    }

    /// PAD and PADV2: paddings [rank, 2] (before, after per TFLite axis) as ONNX
    /// pads on the graph's axes; PADV2's constant value, else zeros.
    private mutating func pad(_ op: TFLiteOperator) throws {
        guard op.inputs.count >= 2 else { throw LayerKitError.invalidModel("PAD has no paddings") }
        let input = op.inputs[0], rank = tensors[input].shape.count
        let paddings = try integers(op.inputs[1], "paddings")
        guard paddings.count == 2 * rank, paddings.allSatisfy({ $0 >= 0 }) else {
            throw LayerKitError.invalidModel("paddings \(paddings) for rank \(rank)")
        }
        let axes = rank == 4 ? Self.toNCHW : Array(0..<rank)
        let pads = axes.map { paddings[2 * $0] } + axes.map { paddings[2 * $0 + 1] }
        var inputs = [try value(input), constant(tensors[input].name + ".pads", [pads.count], int64s: pads)]
        if op.inputs.count > 2, op.inputs[2] >= 0 { inputs.append(try value(op.inputs[2])) }
        try emit("Pad", inputs, output: op.outputs[0])
    }

    /// MEAN over constant axes: ReduceMean on the graph's axes, the dimensions
    /// kept; without keep_dims the result is reshaped in TFLite's layout.
    private mutating func mean(_ op: TFLiteOperator, keepDims: Bool) throws {
        guard op.inputs.count >= 2 else { throw LayerKitError.invalidModel("MEAN has no axes") }
        let input = op.inputs[0], output = op.outputs[0], rank = tensors[input].shape.count
        let axes = try integers(op.inputs[1], "axes").map { $0 < 0 ? $0 + rank : $0 }
        guard axes.allSatisfy({ (0..<rank).contains($0) }) else {
            throw LayerKitError.invalidModel("axes \(axes) of rank \(rank)")
        }
        let mapped = rank == 4 ? axes.map { Self.nchwAxis[$0] } : axes
        if keepDims || rank != 4 {
            try emit("ReduceMean", [try value(input)], output: output,
                     ["axes": .ints(mapped), "keepdims": .int(keepDims ? 1 : 0)])
            return
        }
        let reduced = unique(tensors[output].name + ".kept")
        addNode("ReduceMean", [try value(input)], reduced, ["axes": .ints(mapped), "keepdims": .int(1)])
        let nhwc = unique(reduced + ".nhwc")
        addNode("Transpose", [reduced], nhwc, ["perm": .ints(Self.nchwAxis)])
        let target = tensors[output].shape
        emit("Reshape", inTFLiteLayout: [nhwc, constant(nhwc + ".shape", [target.count], int64s: target)], output: output)
    }

    /// STRIDED_SLICE with constant begin, end and strides as ONNX Slice in
    /// TFLite's layout: a begin or end mask bit takes the whole axis, a shrink
    /// bit one element, whose axis the reshape to the output's shape drops;
    /// the reshape also makes the output's new axes (`new_axis_mask`), and an
    /// ellipsis stands for the whole of every input axis the spec leaves out.
    private mutating func stridedSlice(_ op: TFLiteOperator, _ options: FlatTable?) throws {
        guard op.inputs.count == 4 else { throw LayerKitError.invalidModel("STRIDED_SLICE has \(op.inputs.count) inputs") }
        let input = op.inputs[0], output = op.outputs[0], rank = tensors[input].shape.count
        let begin = try integers(op.inputs[1], "begin"), end = try integers(op.inputs[2], "end")
        let steps = try integers(op.inputs[3], "strides")
        let names = ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"]
        let masks = try names.indices.map { try options?.integer($0, names[$0]) ?? 0 }
        let endIsOffset = try options?.bool(5, "offset") ?? false
        guard begin.count == end.count, begin.count == steps.count, !steps.contains(0), begin.count <= 32 else {
            throw LayerKitError.invalidModel("begin \(begin), end \(end), strides \(steps) for rank \(rank)")
        }
        var starts = Array(repeating: 0, count: rank), ends = Array(repeating: Int(Int32.max), count: rank)
        var denseSteps = Array(repeating: 1, count: rank)
        // TensorFlow's dense spec: entry i of the sparse spec is one input axis, none (a new
        // axis), or for the first ellipsis bit as many whole axes as the other entries leave.
        let ellipsisAt = (0..<begin.count).first { masks[2] & (1 << $0) != 0 }
        let consuming = (0..<begin.count).filter { masks[3] & (1 << $0) == 0 && $0 != ellipsisAt }.count
        guard consuming <= rank else {
            throw LayerKitError.invalidModel("a slice spec of \(consuming) axes for an input of rank \(rank)")
        }
        var axis = 0
        for entry in begin.indices {
            let bit = 1 << entry
            if entry == ellipsisAt {
                axis += rank - consuming
                continue
            }
            if masks[3] & bit != 0 || masks[2] & bit != 0 { continue }
            let forward = steps[entry] > 0
            var (start, stop) = (begin[entry], endIsOffset ? begin[entry] + end[entry] : end[entry])
            if masks[0] & bit != 0 { start = forward ? 0 : Int(Int32.max) }
            if masks[1] & bit != 0 { stop = forward ? Int(Int32.max) : Int(Int32.min) }
            if masks[4] & bit != 0 { stop = start == -1 ? Int(Int32.max) : start + 1 }
            (starts[axis], ends[axis], denseSteps[axis]) = (start, stop, steps[entry])
            axis += 1
        }
        let name = tensors[output].name
        let sliced = unique(name + ".slice")
        addNode("Slice", [try tfliteLayout(input), constant(name + ".starts", [rank], int64s: starts),
                          constant(name + ".ends", [rank], int64s: ends),
                          constant(name + ".axes", [rank], int64s: Array(0..<rank)),
                          constant(name + ".steps", [rank], int64s: denseSteps)], sliced)
        let target = tensors[output].shape
        emit("Reshape", inTFLiteLayout: [sliced, constant(name + ".shape", [target.count], int64s: target)],
             output: output)
    }

    /// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR to the output tensor's size,
    /// with TensorFlow's coordinate rules in ONNX's names.
    private mutating func resize(_ op: TFLiteOperator, bilinear: Bool, alignCorners: Bool, halfPixel: Bool) throws {
        let input = op.inputs[0], output = op.outputs[0], shape = tensors[output].shape
        guard shape.count == 4, tensors[input].shape.count == 4 else {
            throw LayerKitError.invalidModel("resizing shape \(tensors[input].shape) to \(shape)")
        }
        let coordinates = alignCorners ? "align_corners"
            : halfPixel ? (bilinear ? "half_pixel" : "tf_half_pixel_for_nn") : "asymmetric"
        var attributes: [String: ONNXAttribute] = ["mode": .string(bilinear ? "linear" : "nearest"),
                                                   "coordinate_transformation_mode": .string(coordinates)]
        if !bilinear { attributes["nearest_mode"] = .string(alignCorners ? "round_prefer_ceil" : "floor") }
        let sizes = constant(tensors[output].name + ".sizes", [4], int64s: Self.toNCHW.map { shape[$0] })
        try emit("Resize", [try value(input), "", "", sizes], output: output, attributes)
    }

    // MARK: Custom operators

    /// A custom operator: mediapipe's Convolution2DTransposeBias translated
    /// here; any other becomes a node of op type `custom_code` in the TFLite
    /// domain, run by the layer registered under that name.
    private mutating func custom(_ op: TFLiteOperator, name: String) throws {
        if name == "Convolution2DTransposeBias" {
            // Its options are TfLiteTransposeConvParams as bytes: padding
            // (1 SAME, 2 VALID), stride width, stride height, each an int32.
            let bytes = Array(op.customOptions)
            guard bytes.count >= 12, op.inputs.count == 3, op.inputs.allSatisfy({ $0 >= 0 }) else {
                throw LayerKitError.invalidModel("Convolution2DTransposeBias needs 3 inputs and 12 bytes of options")
            }
            let word = { (i: Int) in Int(Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[4 * i + $1]) << (8 * $1) })) }
            guard word(0) == 1 || word(0) == 2 else {
                throw LayerKitError.invalidModel("Convolution2DTransposeBias padding \(word(0)) is not SAME or VALID")
            }
            return try transposeConvolution(x: op.inputs[0], weights: op.inputs[1], bias: op.inputs[2],
                                            output: op.outputs[0], padding: word(0) == 1 ? 0 : 1,
                                            strides: [word(2), word(1)], activation: 0)
        }
        guard !name.isEmpty, op.outputs.count == 1 else {
            throw LayerKitError.invalidModel("a custom operator without a name, or with \(op.outputs.count) outputs")
        }
        try emit(name, try op.inputs.filter { $0 >= 0 }.map { try value($0) }, output: op.outputs[0],
                 domain: TFLiteModel.customDomain)
    }
}
