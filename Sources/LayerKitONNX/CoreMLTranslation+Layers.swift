import LayerKitCore
import Foundation
// Each Core ML layer type LayerKit runs, as standard ONNX ops (opset 13) or
// a custom-layer node. Parameters follow NeuralNetwork.proto; a parameter
// LayerKit cannot honour is refused by name rather than ignored.

extension CoreMLGraphBuilder {
    /// The layer types translated, by field number, for the refusal's list.
    static let supportedTypes = [
        100: "convolution", 120: "pooling", 130: "activation", 140: "innerProduct", 150: "embedding",
        160: "batchnorm", 165: "mvn", 170: "l2normalize", 175: "softmax", 180: "lrn", 190: "crop", 200: "padding",
        210: "upsample", 220: "unary", 230: "add", 231: "multiply", 240: "average", 245: "scale", 250: "bias",
        260: "max", 261: "min", 280: "reduce", 290: "loadConstant", 300: "reshape", 301: "flatten", 310: "permute",
        320: "concat", 330: "split", 345: "reorganizeData", 350: "slice", 400: "simpleRecurrent", 410: "gru",
        420: "uniDirectionalLSTM", 430: "biDirectionalLSTM", 500: "custom", 600: "copy", 660: "clip",
        665: "ceil", 670: "floor", 680: "sign", 700: "exp2", 710: "sin", 715: "cos", 720: "tan", 730: "asin",
        735: "acos", 740: "atan", 750: "sinh", 755: "cosh", 760: "tanh", 770: "asinh", 775: "acosh", 780: "atanh",
        790: "erf", 795: "gelu", 870: "minBroadcastable", 875: "maxBroadcastable", 880: "addBroadcastable",
        885: "powBroadcastable", 890: "divideBroadcastable", 900: "multiplyBroadcastable",
        905: "subtractBroadcastable", 950: "softmaxND", 980: "concatND", 985: "transpose", 1130: "flattenTo2D",
        1140: "reshapeStatic", 1460: "clampedReLU",
    ]

    /// Layer types that read no input (`loadConstant`) or several outputs (`split`, `custom`).
    private static let noInput: Set<String> = ["loadConstant"]
    private static let severalOutputs: Set<String> = ["custom", "split", "simpleRecurrent", "gru", "uniDirectionalLSTM",
                                                      "biDirectionalLSTM"]

    /// Adds `layer`'s nodes.
    mutating func add(_ layer: CoreMLLayer) throws {
        guard var params = layer.parameters, let type = Self.supportedTypes[layer.typeNumber] else {
            throw LayerKitError.invalidModel("layers of type \(layer.typeName) are not supported by LayerKit (supported: "
                                             + Self.supportedTypes.values.sorted().joined(separator: ", ") + ")")
        }
        guard !layer.outputs.isEmpty, layer.inputs.count >= (Self.noInput.contains(type) ? 0 : 1) else {
            throw LayerKitError.invalidModel("the layer has \(layer.inputs.count) inputs and \(layer.outputs.count) outputs")
        }
        let output = layer.outputs[0]
        guard layer.outputs.count == 1 || Self.severalOutputs.contains(type) else {
            throw LayerKitError.invalidModel("a \(type) layer has one output, not \(layer.outputs.count)")
        }
        currentLayerIsUpdatable = layer.isUpdatable
        defer { currentLayerIsUpdatable = false }
        let input = layer.inputs.first ?? ""
        switch type {
        case "convolution":
            guard layer.inputs.count == 1 else {
                throw LayerKitError.invalidModel("a convolution whose weights are its second input is not supported")
            }
            try convolution(&params, input, output)
        case "pooling": try pooling(&params, input, output)
        case "activation": try activation(&params, input, output)
        case "innerProduct": try innerProduct(&params, input, output)
        case "batchnorm": try batchnorm(&params, input, output)
        case "softmax": addNode("Softmax", [try blob(input)], output, ["axis": .int(exactMapping ? -3 : 1)])
        case "add", "multiply": try sumOrProduct(&params, type == "add" ? "Add" : "Mul", layer.inputs, output)
        case "concat": try concat(&params, layer.inputs, output)
        case "flatten": try flatten(&params, input, output)
        case "reshape", "reshapeStatic": try reshape(&params, static: type == "reshapeStatic", input, output)
        case "custom": try custom(&params, layer)
        case "simpleRecurrent", "gru", "uniDirectionalLSTM", "biDirectionalLSTM": try recurrent(type, &params, layer)
        default: try addMore(type, &params, layer)
        }
        for name in layer.outputs { producers[name] = layer.typeNumber }
    }

    // MARK: Weights

    /// A `WeightParams`' values: float32 (`floatValue`) or float16
    /// (`float16Value`, little-endian halves); quantized weights are refused.
    func weights(_ reader: inout ProtobufReader, _ name: String, count: Int? = nil) throws -> [Float] {
        try weightValues(&reader, name, count: count).values
    }

    /// A `WeightParams`' values and where they lie in the file.
    func weightValues(_ reader: inout ProtobufReader, _ name: String,
                      count: Int? = nil) throws -> (values: [Float], location: CoreMLWeightLocation) {
        var values: [Float] = []
        var location = CoreMLWeightLocation(), full = false
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                let before = values.count
                try reader.appendFloats(field, "floatValue", to: &values)
                // Packed or one value: the values read are the field's last bytes.
                location.runs.append(reader.offset - 4 * (values.count - before)..<reader.offset)
                full = true
            case 2:
                let bytes = try reader.bytes(field, "float16Value")
                guard bytes.count % 2 == 0 else {
                    throw reader.error("an odd number of float16 bytes (\(bytes.count))", at: field.offset,
                                       reading: "float16Value")
                }
                values += stride(from: bytes.startIndex, to: bytes.endIndex, by: 2).map {
                    Float(halfBits: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
                }
                location.runs.append(bytes.startIndex..<bytes.endIndex)
                location.half = true
            case 30, 31, 40:
                throw reader.error("quantized weights, which LayerKit does not read", at: field.offset, reading: name)
            case 50: location.isUpdatable = try reader.uint64(field, "isUpdatable") != 0
            default: try reader.skip(field)
            }
        }
        if let count, values.count != count {
            throw LayerKitError.invalidModel("\(name) holds \(values.count) values where \(count) were expected")
        }
        guard !(full && location.half) else {
            throw LayerKitError.invalidModel("\(name) holds both float32 and float16 values")
        }
        return (values, location)
    }

    /// A `WeightParams` read as an initializer named `name` of `dims`
    /// (parameters keep their weights' readers until the sizes that shape them are read).
    mutating func weightConstant(_ reader: ProtobufReader, _ what: String, name: String, dims: [Int]) throws -> String {
        // Sizes from a hostile file may multiply past Int: no file holds that many values anyway.
        let count = dims.reduce(1) { $0.multipliedReportingOverflow(by: $1).overflow ? Int.max : $0 * $1 }
        var reader = reader
        let (values, location) = try weightValues(&reader, what, count: count)
        weightLocations[name] = location
        if currentLayerIsUpdatable && location.isUpdatable { updatable.append(name) }
        return constant(name, dims, values)
    }

    /// The `WeightParams` message of `field`, to read once its sizes are known.
    private func weightReader(_ reader: inout ProtobufReader, _ field: ProtobufReader.Field,
                              _ name: String) throws -> ProtobufReader {
        try reader.message(field, name, type: "WeightParams")
    }

    // MARK: Layers

    /// A convolution, or with `isDeconvolution` a ConvTranspose: weights
    /// [kernelChannels = C, O / nGroups, kH, kW] as Core ML stores them
    /// (ONNX's layout), no dilation; `same` gives H * stride (the crop of
    /// k - stride split as the asymmetry mode says, output padding where
    /// k < stride), `valid` crops its border amounts, `outputShape` takes
    /// precedence (the crop split as BOTTOM_RIGHT_HEAVY).
    private mutating func convolution(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var (outputChannels, kernelChannels, groups): (UInt64, UInt64, UInt64) = (0, 0, 1)
        var kernel: [Int64] = [], strides: [Int64] = [], dilations: [Int64] = [], outputShape: [Int64] = []
        var padding: [String: ONNXAttribute] = [:], hasBias = false, deconvolution = false
        var weights: ProtobufReader?, bias: ProtobufReader?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: outputChannels = try reader.uint64(field, "outputChannels")
            case 2: kernelChannels = try reader.uint64(field, "kernelChannels")
            case 10: groups = max(1, try reader.uint64(field, "nGroups"))
            case 20: try reader.appendInt64s(field, "kernelSize", to: &kernel)
            case 30: try reader.appendInt64s(field, "stride", to: &strides)
            case 40: try reader.appendInt64s(field, "dilationFactor", to: &dilations)
            case 50, 51: padding = try self.padding(&reader, field, same: field.number == 51)
            case 60: deconvolution = try reader.uint64(field, "isDeconvolution") != 0
            case 70: hasBias = try reader.uint64(field, "hasBias") != 0
            case 90: weights = try weightReader(&reader, field, "weights")
            case 91: bias = try weightReader(&reader, field, "bias")
            case 100: try reader.appendInt64s(field, "outputShape", to: &outputShape)
            default: try reader.skip(field)
            }
        }
        let k = try Self.pair(kernel, "kernelSize", default: 3), s = try Self.pair(strides, "stride", default: 1)
        let d = try Self.pair(dilations, "dilationFactor", default: 1)
        let (o, c) = (try Self.size(outputChannels, "outputChannels"), try Self.size(kernelChannels, "kernelChannels"))
        let g = try Self.size(groups, "nGroups")
        guard o % g == 0 else {
            throw LayerKitError.invalidModel("outputChannels \(o) is not a multiple of nGroups \(groups)")
        }
        guard let weights else { throw LayerKitError.invalidModel("the layer has no weights") }
        let dims = deconvolution ? [c, o / g, k[0], k[1]] : [o, c, k[0], k[1]]
        var inputs = [try rank4(input), try weightConstant(weights, "weights", name: output + ".weights", dims: dims)]
        if hasBias {
            guard let bias else { throw LayerKitError.invalidModel("hasBias is set, but the layer has no bias") }
            inputs.append(try weightConstant(bias, "bias", name: output + ".bias", dims: [o]))
        }
        var attributes: [String: ONNXAttribute] = ["kernel_shape": .ints(k), "strides": .ints(s), "group": .int(g)]
        guard deconvolution else {
            attributes["dilations"] = .ints(d)
            addNode("Conv", inputs, output, rank: 4, padding.merging(attributes) { $1 })
            return
        }
        if !outputShape.isEmpty {
            let shape = try Self.pair(outputShape, "outputShape", default: 1)
            attributes["output_shape"] = .ints(shape)
            attributes["auto_pad"] = .string("SAME_UPPER")  // the crop's odd cell at the end
        } else {
            attributes.merge(padding) { $1 }
            if padding["auto_pad"] != nil {
                // H * stride: natural (H - 1) * s + k, less k - s, or plus s - k where k < s.
                attributes["output_padding"] = .ints(zip(k, s).map { max(0, $1 - $0) })
            }
        }
        addNode("ConvTranspose", inputs, output, rank: 4, attributes)
    }

    /// A convolution's or pooling's `valid` (explicit border amounts) or `same` padding as ONNX attributes.
    private func padding(_ reader: inout ProtobufReader, _ field: ProtobufReader.Field,
                         same: Bool) throws -> [String: ONNXAttribute] {
        var sub = try reader.message(field, same ? "same" : "valid", type: same ? "SamePadding" : "ValidPadding")
        if same {
            var mode: Int32 = 0
            while let f = try sub.nextField() {
                if f.number == 1 { mode = try sub.int32(f, "asymmetryMode") } else { try sub.skip(f) }
            }
            return ["auto_pad": .string(mode == 1 ? "SAME_LOWER" : "SAME_UPPER")]
        }
        var edges: [(UInt64, UInt64)] = []
        while let f = try sub.nextField() {
            guard f.number == 1 else { try sub.skip(f); continue }
            var amounts = try sub.message(f, "paddingAmounts", type: "BorderAmounts")
            edges += try Self.borderAmounts(&amounts)
        }
        guard edges.isEmpty || edges.count == 2 else {
            throw LayerKitError.invalidModel("\(edges.count) border amounts where 2 (height, width) were expected")
        }
        let pads = edges.isEmpty ? [0, 0, 0, 0] : try [edges[0].0, edges[1].0, edges[0].1, edges[1].1].map {
            try Self.size($0, "a border amount", allowZero: true)
        }
        return ["pads": .ints(pads)]
    }

    private mutating func pooling(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var type: Int32 = 0, kernel: [Int64] = [], strides: [Int64] = [], global = false, excludePadding = false
        var padding: [String: ONNXAttribute] = [:]
        while let field = try reader.nextField() {
            switch field.number {
            case 1: type = try reader.int32(field, "type")
            case 10: try reader.appendInt64s(field, "kernelSize", to: &kernel)
            case 20: try reader.appendInt64s(field, "stride", to: &strides)
            case 30, 31: padding = try self.padding(&reader, field, same: field.number == 31)
            case 32:
                throw reader.error("includeLastPixel padding, which LayerKit's Core ML reader does not translate yet",
                                   at: field.offset, reading: "includeLastPixel")
            case 50: excludePadding = try reader.uint64(field, "avgPoolExcludePadding") != 0
            case 60: global = try reader.uint64(field, "globalPooling") != 0
            default: try reader.skip(field)
            }
        }
        guard type == 0 || type == 1 else {
            throw LayerKitError.invalidModel("pooling type \(type == 2 ? "L2" : String(type)) is not supported (MAX, AVERAGE)")
        }
        let x = try rank4(input)
        if global {
            addNode(type == 0 ? "GlobalMaxPool" : "GlobalAveragePool", [x], output, rank: 4)
            return
        }
        var attributes = padding.merging(["kernel_shape": .ints(try Self.pair(kernel, "kernelSize", default: 3)),
                                          "strides": .ints(try Self.pair(strides, "stride", default: 1))]) { $1 }
        if type == 1 { attributes["count_include_pad"] = .int(excludePadding ? 0 : 1) }
        addNode(type == 0 ? "MaxPool" : "AveragePool", [x], output, rank: 4, attributes)
    }

    /// An `ActivationParams`: the one function its oneof holds.
    private mutating func activation(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let x = try blob(input)
        guard let field = try reader.nextField() else { throw LayerKitError.invalidModel("the activation has no function") }
        var function = try reader.message(field, "function", type: "Activation")
        // Its float fields by number (alpha 1, beta 2), zero when absent, as protobuf has them;
        // PReLU's alpha and parametricSoftplus's alpha and beta are per-channel weights instead.
        var scalars: [Int: Float] = [:], perChannel: [Int: ProtobufReader] = [:]
        while let f = try function.nextField() {
            let name = f.number == 1 ? "alpha" : "beta"
            if (field.number == 25 && f.number == 1) || (field.number == 71 && (f.number == 1 || f.number == 2)) {
                perChannel[f.number] = try function.message(f, name, type: "WeightParams")
            } else if f.number == 1 || f.number == 2 {
                scalars[f.number] = try function.float(f, name)
            } else {
                try function.skip(f)
            }
        }
        let (alpha, beta) = (scalars[1] ?? 0, scalars[2] ?? 0)
        switch field.number {
        case 5:  // alpha * x + beta
            addNode("Mul", [x, constant(output + ".alpha", [], [alpha])], output + ".scaled")
            addNode("Add", [output + ".scaled", constant(output + ".beta", [], [beta])], output)
        case 10: addNode("Relu", [x], output)
        case 15: addNode("LeakyRelu", [x], output, ["alpha": .float(alpha)])
        case 20: addNode("ThresholdedRelu", [x], output, ["alpha": .float(alpha)])
        case 25:
            addNode("PRelu", [x, try channelConstant(&perChannel, 1, "alpha", of: x, output)], output)
        case 30: addNode("Tanh", [x], output)
        case 31:  // alpha * tanh(beta * x)
            addNode("Mul", [x, constant(output + ".beta", [], [beta])], output + ".inner")
            addNode("Tanh", [output + ".inner"], output + ".tanh")
            addNode("Mul", [output + ".tanh", constant(output + ".alpha", [], [alpha])], output)
        case 40: addNode("Sigmoid", [x], output)
        case 41: addNode("HardSigmoid", [x], output, ["alpha": .float(alpha), "beta": .float(beta)])
        case 50: addNode("Elu", [x], output, ["alpha": .float(alpha)])
        case 60: addNode("Softsign", [x], output)
        case 70: addNode("Softplus", [x], output)
        case 71:  // alpha * log(1 + exp(beta * x)): Softplus between two products
            addNode("Mul", [x, try channelConstant(&perChannel, 2, "beta", of: x, output)], output + ".scaled")
            addNode("Softplus", [output + ".scaled"], output + ".softplus")
            addNode("Mul", [output + ".softplus", try channelConstant(&perChannel, 1, "alpha", of: x, output)], output)
        default:
            throw LayerKitError.invalidModel("activation field \(field.number) is not supported (linear, ReLU, leakyReLU, "
                                             + "thresholdedReLU, PReLU, tanh, scaledTanh, sigmoid, sigmoidHard, ELU, "
                                             + "softsign, softplus, parametricSoftplus)")
        }
    }

    /// An activation's per-channel parameter (PReLU's alpha, parametricSoftplus's alpha and
    /// beta: field `number` of its message) as a constant against `x`'s channels (axis -3):
    /// [C, 1, 1] against [N, C, H, W] (or any rank from 3), [C] against [N, C]; one value for all.
    private mutating func channelConstant(_ fields: inout [Int: ProtobufReader], _ number: Int, _ name: String,
                                          of x: String, _ output: String) throws -> String {
        guard var reader = fields[number] else { throw LayerKitError.invalidModel("the activation has no \(name)") }
        let values = try weights(&reader, name)
        return constant(output + "." + name, (ranks[x] ?? 4) >= 3 ? [values.count, 1, 1] : [values.count], values)
    }

    private mutating func innerProduct(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var (inputChannels, outputChannels): (UInt64, UInt64) = (0, 0)
        var hasBias = false, weights: ProtobufReader?, bias: ProtobufReader?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: inputChannels = try reader.uint64(field, "inputChannels")
            case 2: outputChannels = try reader.uint64(field, "outputChannels")
            case 10: hasBias = try reader.uint64(field, "hasBias") != 0
            case 20: weights = try weightReader(&reader, field, "weights")
            case 21: bias = try weightReader(&reader, field, "bias")
            case 22 where try reader.uint64(field, "int8DynamicQuantize") != 0:
                throw reader.error("int8 dynamic quantization, which LayerKit does not read", at: field.offset,
                                   reading: "int8DynamicQuantize")
            default: try reader.skip(field)
            }
        }
        let (c, o) = (try Self.size(inputChannels, "inputChannels"), try Self.size(outputChannels, "outputChannels"))
        guard let weights else { throw LayerKitError.invalidModel("the layer has no weights") }
        let flat = output + ".flat"
        addNode("Flatten", [try blob(input)], flat, rank: 2, ["axis": .int(1)])
        var inputs = [flat, try weightConstant(weights, "weights", name: output + ".weights", dims: [o, c])]
        if hasBias {
            guard let bias else { throw LayerKitError.invalidModel("hasBias is set, but the layer has no bias") }
            inputs.append(try weightConstant(bias, "bias", name: output + ".bias", dims: [o]))
        }
        addNode("Gemm", inputs, output, rank: 2, ["transB": .int(1)])
    }

    private mutating func batchnorm(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var channels: UInt64 = 0, epsilon: Float = 0, instance = false, computeMeanVar = false
        let names = [15: "gamma", 16: "beta", 17: "mean", 18: "variance"]
        var readers: [Int: ProtobufReader] = [:]
        while let field = try reader.nextField() {
            switch field.number {
            case 1: channels = try reader.uint64(field, "channels")
            case 5: computeMeanVar = try reader.uint64(field, "computeMeanVar") != 0
            case 6: instance = try reader.uint64(field, "instanceNormalization") != 0
            case 10: epsilon = try reader.float(field, "epsilon")
            case 15...18: readers[field.number] = try weightReader(&reader, field, names[field.number] ?? "")
            default: try reader.skip(field)
            }
        }
        let c = try Self.size(channels, "channels")
        guard computeMeanVar == instance else {
            throw LayerKitError.invalidModel("computeMeanVar without instanceNormalization (batch statistics at "
                                             + "prediction) is not supported")
        }
        let needed = instance ? [15, 16] : [15, 16, 17, 18]
        var inputs = [try rank4(input)]
        for number in needed {
            let name = names[number] ?? ""
            guard let weights = readers[number] else { throw LayerKitError.invalidModel("the layer has no \(name)") }
            inputs.append(try weightConstant(weights, name, name: output + "." + name, dims: [c]))
        }
        addNode(instance ? "InstanceNormalization" : "BatchNormalization", inputs, output, rank: 4,
                ["epsilon": .float(epsilon)])
    }

    private mutating func sumOrProduct(_ reader: inout ProtobufReader, _ opType: String, _ inputs: [String],
                                       _ output: String) throws {
        var alpha: Float = opType == "Add" ? 0 : 1
        while let field = try reader.nextField() {
            if field.number == 1 { alpha = try reader.float(field, "alpha") } else { try reader.skip(field) }
        }
        // One input: alpha added or multiplied; several: their sum or product (alpha unused).
        var operands = try sameRank(inputs)
        if operands.count == 1 { operands.append(constant(output + ".alpha", [], [alpha])) }
        var result = operands[0]
        for (i, operand) in operands.dropFirst().enumerated() {
            let name = i == operands.count - 2 ? output : output + ".partial\(i)"
            addNode(opType, [result, operand], name)
            result = name
        }
    }

    private mutating func concat(_ reader: inout ProtobufReader, _ inputs: [String], _ output: String) throws {
        while let field = try reader.nextField() {
            guard field.number == 100, try reader.uint64(field, "sequenceConcat") != 0 else {
                if field.number != 100 { try reader.skip(field) }
                continue
            }
            throw reader.error("a sequence concat, which LayerKit does not translate", at: field.offset,
                               reading: "sequenceConcat")
        }
        // Axis -3: the channels ([N, C, ...] in a batch of items: axis 1, rank 2 or 4).
        addNode("Concat", try sameRank(inputs), output, ["axis": .int(exactMapping ? -3 : 1)])
    }

    private mutating func flatten(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var channelLast = false
        while let field = try reader.nextField() {
            if field.number == 1 { channelLast = try reader.int32(field, "mode") == 1 } else { try reader.skip(field) }
        }
        var x = try blob(input)
        if channelLast {
            // Core ML's CHANNEL_LAST order: H, W, C.
            x = try rank4(x)
            addNode("Transpose", [x], output + ".hwc", ["perm": .ints([0, 2, 3, 1])])
            x = output + ".hwc"
        }
        addNode("Flatten", [x], output, rank: 2, ["axis": .int(1)])
    }

    /// `reshape` (a [C, H, W] or [1, C, H, W] target, each item of the
    /// batch reshaped) or `reshapeStatic` (the whole target shape, as the
    /// N-D layers give it).
    private mutating func reshape(_ reader: inout ProtobufReader, static isStatic: Bool, _ input: String,
                                  _ output: String) throws {
        var target: [Int64] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1: try reader.appendInt64s(field, "targetShape", to: &target)
            case 2 where !isStatic:
                guard try reader.int32(field, "mode") == 0 else {
                    throw reader.error("a CHANNEL_LAST reshape, which LayerKit does not translate", at: field.offset,
                                       reading: "mode")
                }
            default: try reader.skip(field)
            }
        }
        var shape = target.map { Int($0) }
        if !isStatic {
            guard shape.count == 3 || (shape.count == 4 && shape[0] == 1) else {
                throw LayerKitError.invalidModel("targetShape \(shape) is not [C, H, W] or [1, C, H, W]")
            }
            shape = [0] + shape.suffix(3)
        }
        guard !shape.isEmpty, shape.allSatisfy({ $0 >= -1 }) else {
            throw LayerKitError.invalidModel("targetShape \(shape) is not a shape")
        }
        addNode("Reshape", [try blob(input), constant(output + ".shape", [shape.count], int64s: shape)], output,
                rank: shape.count)
    }

    /// A `custom` layer: a node of op type `className` in `CoreMLModel.customDomain`, its
    /// `parameters` the node's attributes, its `weights` constant inputs named `LAYER.weightsI`.
    private mutating func custom(_ reader: inout ProtobufReader, _ layer: CoreMLLayer) throws {
        var className = "", attributes: [String: ONNXAttribute] = [:], weightInputs: [String] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 10: className = try reader.string(field, "className")
            case 20:
                var sub = try reader.message(field, "weights", type: "WeightParams")
                let (values, location) = try weightValues(&sub, "weights")
                let name = "\(layer.name).weights\(weightInputs.count)"
                // Recorded, so that a trained custom layer's weights are written back too.
                weightLocations[name] = location
                weightInputs.append(constant(name, [values.count], values))
            case 30:
                var entry = try reader.message(field, "parameters", type: "CustomLayerParams.ParametersEntry")
                let (key, value) = try Self.parameter(&entry)
                attributes[key] = value
            default: try reader.skip(field)
            }
        }
        guard !className.isEmpty else { throw LayerKitError.invalidModel("the custom layer has no className") }
        let inputs = try layer.inputs.map(blob) + weightInputs
        graph.nodes.append(ONNXNode(name: layer.name, opType: className, domain: CoreMLModel.customDomain,
                                    inputs: inputs, outputs: layer.outputs, attributes: attributes))
        for output in layer.outputs { ranks[output] = ranks[inputs[0]] ?? 4 }
    }

    /// One entry of a custom layer's `parameters` map: its key and its
    /// `CustomLayerParamValue` as an attribute (a double a float, a bool 0 or 1).
    private static func parameter(_ reader: inout ProtobufReader) throws -> (String, ONNXAttribute) {
        var key = "", value: ONNXAttribute?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: key = try reader.string(field, "key")
            case 2:
                var sub = try reader.message(field, "value", type: "CustomLayerParamValue")
                while let f = try sub.nextField() {
                    switch f.number {
                    case 10: value = .float(Float(try sub.double(f, "doubleValue")))
                    case 20: value = .string(try sub.string(f, "stringValue"))
                    case 30: value = .int(Int(try sub.int32(f, "intValue")))
                    case 40: value = .int(Int(try sub.int64(f, "longValue")))
                    case 50: value = .int(try sub.uint64(f, "boolValue") != 0 ? 1 : 0)
                    default: try sub.skip(f)
                    }
                }
            default: try reader.skip(field)
            }
        }
        guard let value else { throw LayerKitError.invalidModel("parameter '\(key)' has no value") }
        return (key, value)
    }

    // MARK: Sizes

    /// A [height, width] pair from a repeated field: `fallback` twice when empty (Core ML's default).
    static func pair(_ values: [Int64], _ name: String, default fallback: Int) throws -> [Int] {
        guard !values.isEmpty else { return [fallback, fallback] }
        guard values.count == 2, values.allSatisfy({ (1...65536).contains($0) }) else {
            throw LayerKitError.invalidModel("\(name) \(values) is not two sizes from 1 to 65536")
        }
        return values.map { Int($0) }
    }

    /// A count from the file, checked to be a size (at least 1, or 0 when allowed).
    static func size(_ value: UInt64, _ name: String, allowZero: Bool = false) throws -> Int {
        guard value <= 1 << 24, allowZero || value > 0 else {
            throw LayerKitError.invalidModel("\(name) \(value) is not a size from \(allowZero ? 0 : 1) to \(1 << 24)")
        }
        return Int(value)
    }
}
