import LayerKitCore
import Foundation
// The Core ML layer types beyond the first reader's: shape and layout
// layers, element-wise functions, reductions, normalizations, and the N-D
// layers (specification version 4 on) that converters emit for common
// CNNs. Each follows NeuralNetwork.proto's definition; a setting LayerKit
// cannot honour is refused by name.
//
// The layers of the rank-5 era name their axes C, H and W: axes -3, -2 and
// -1 of a rank-4 [N, C, H, W] blob (`legacy` makes a rank-2 [N, C] blob
// [N, C, 1, 1] first).

extension CoreMLGraphBuilder {
    /// The N-D element-wise layers that are one ONNX op on their input.
    private static let unaryOps = [
        "ceil": "Ceil", "floor": "Floor", "sign": "Sign", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin",
        "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh", "asinh": "Asinh",
        "acosh": "Acosh", "atanh": "Atanh", "erf": "Erf",
    ]
    /// The N-D layers of two inputs with numpy broadcasting.
    private static let broadcastingOps = [
        "addBroadcastable": "Add", "subtractBroadcastable": "Sub", "multiplyBroadcastable": "Mul",
        "divideBroadcastable": "Div", "maxBroadcastable": "Max", "minBroadcastable": "Min", "powBroadcastable": "Pow",
    ]

    /// Adds the nodes of a layer of a type `add(_:)` does not handle itself.
    mutating func addMore(_ type: String, _ reader: inout ProtobufReader, _ layer: CoreMLLayer) throws {
        let input = layer.inputs.first ?? "", output = layer.outputs[0]
        if let op = Self.unaryOps[type] {
            addNode(op, [try blob(input)], output)
            return
        }
        if let op = Self.broadcastingOps[type] {
            guard layer.inputs.count == 2 else {
                throw LayerKitError.invalidModel("a \(type) layer reads 2 inputs, not \(layer.inputs.count)")
            }
            let operands = try layer.inputs.map(blob)
            addNode(op, operands, output, rank: operands.map { rank(of: $0) }.max())
            return
        }
        switch type {
        case "embedding": try embedding(&reader, input, output)
        case "mvn": try meanVarianceNormalization(&reader, input, output)
        case "l2normalize": try l2Normalization(&reader, input, output)
        case "lrn": try localResponseNormalization(&reader, input, output)
        case "crop": try crop(&reader, layer.inputs, output)
        case "padding": try pad(&reader, input, output)
        case "upsample": try upsample(&reader, input, output)
        case "unary": try unary(&reader, input, output)
        case "average", "max", "min":
            let operands = try sameRank(layer.inputs)
            addNode(["average": "Mean", "max": "Max", "min": "Min"][type] ?? "", operands, output)
        case "scale": try scale(&reader, input, output)
        case "bias": try bias(&reader, input, output)
        case "reduce": try reduce(&reader, input, output)
        case "loadConstant": try loadConstant(&reader, output)
        case "permute": try permute(&reader, input, output)
        case "split": try split(&reader, input, layer.outputs)
        case "reorganizeData": try reorganize(&reader, input, output)
        case "slice": try slice(&reader, input, output)
        case "copy": addNode("Identity", [try blob(input)], output)
        case "clip": try clip(&reader, input, output)
        case "exp2": addNode("Pow", [constant(output + ".two", [], [2]), try blob(input)], output, rank: rank(of: try blob(input)))
        case "gelu": try gelu(&reader, input, output)
        case "clampedReLU": try clampedReLU(&reader, input, output)
        case "softmaxND":
            let axis = try Self.int64Field(&reader, 1, "axis")
            addNode("Softmax", [try blob(input)], output, ["axis": .int(try self.axis(axis, of: input))])
        case "concatND":
            var axis: Int64 = 0
            while let field = try reader.nextField() {
                switch field.number {
                case 1: axis = try reader.int64(field, "axis")
                case 2 where try reader.uint64(field, "interleave") != 0:
                    throw reader.error("an interleaved concatND, which LayerKit does not translate", at: field.offset,
                                       reading: "interleave")
                default: try reader.skip(field)
                }
            }
            let operands = try layer.inputs.map(blob)
            addNode("Concat", operands, output, ["axis": .int(try self.axis(axis, of: input))])
        case "transpose":
            var axes: [Int64] = []
            while let field = try reader.nextField() {
                if field.number == 1 { try reader.appendInt64s(field, "axes", to: &axes) } else { try reader.skip(field) }
            }
            let x = try blob(input)
            guard axes.count == rank(of: x), Set(axes) == Set((0..<Int64(axes.count))) else {
                throw LayerKitError.invalidModel("axes \(axes) are not a permutation of the input's \(rank(of: x)) axes")
            }
            addNode("Transpose", [x], output, ["perm": .ints(axes.map { Int($0) })])
        case "flattenTo2D":
            let axis = try Self.int64Field(&reader, 1, "axis")
            let x = try blob(input)
            addNode("Flatten", [x], output, rank: 2, ["axis": .int(try self.axis(axis, of: x, inclusive: true))])
        default:
            throw LayerKitError.invalidModel("layers of type \(type) are not supported by LayerKit")
        }
    }

    // MARK: Fields and axes

    /// The int64 field numbered `number` of a parameters message (0 when absent).
    private static func int64Field(_ reader: inout ProtobufReader, _ number: Int, _ name: String) throws -> Int64 {
        var value: Int64 = 0
        while let field = try reader.nextField() {
            if field.number == number { value = try reader.int64(field, name) } else { try reader.skip(field) }
        }
        return value
    }

    /// The float fields of a parameters message by number, and its varint fields.
    private static func scalars(_ reader: inout ProtobufReader, _ message: String)
        throws -> (floats: [Int: Float], varints: [Int: UInt64]) {
        var floats: [Int: Float] = [:], varints: [Int: UInt64] = [:]
        while let field = try reader.nextField() {
            switch field.wireType {
            case .fixed32: floats[field.number] = try reader.float(field, "field \(field.number)")
            case .varint: varints[field.number] = try reader.uint64(field, "field \(field.number)")
            default: try reader.skip(field)
            }
        }
        return (floats, varints)
    }

    /// An N-D layer's axis of blob `name`, negative ones counted from the end,
    /// checked against its rank (`inclusive`: the rank itself is allowed, as Flatten's).
    private func axis(_ axis: Int64, of name: String, inclusive: Bool = false) throws -> Int {
        let rank = self.rank(of: try blob(name))
        let limit = inclusive ? rank : rank - 1
        guard axis >= Int64(-rank), axis <= Int64(limit) else {
            throw LayerKitError.invalidModel("axis \(axis) is outside the input's \(rank) axes")
        }
        return Int(axis)
    }

    /// The axes of a blob's last three (C, H, W) that a rank-5-era layer names.
    private static func trailing(_ names: String) -> [Int] {
        names.map { ["C": -3, "H": -2, "W": -1][$0] ?? 0 }
    }

    // MARK: Normalizations

    /// `embedding`: row `x` of the [outputChannels, inputDim] weights for
    /// each item's one value x (rounded to the nearest index), plus the
    /// bias: Gather along axis 1 of the weights, then Transpose to [N, O].
    private mutating func embedding(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var (inputDim, outputChannels): (UInt64, UInt64) = (0, 0)
        var hasBias = false, weights: ProtobufReader?, bias: ProtobufReader?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: inputDim = try reader.uint64(field, "inputDim")
            case 2: outputChannels = try reader.uint64(field, "outputChannels")
            case 10: hasBias = try reader.uint64(field, "hasBias") != 0
            case 20: weights = try reader.message(field, "weights", type: "WeightParams")
            case 21: bias = try reader.message(field, "bias", type: "WeightParams")
            default: try reader.skip(field)
            }
        }
        let (c, o) = (try Self.size(inputDim, "inputDim"), try Self.size(outputChannels, "outputChannels"))
        guard let weights else { throw LayerKitError.invalidModel("the layer has no weights") }
        let table = try weightConstant(weights, "weights", name: output + ".weights", dims: [o, c])
        // Each item holds one value: the indices are the batch's values in order.
        addNode("Reshape", [try blob(input), constant(output + ".flat.shape", [1], int64s: [-1])], output + ".flat", rank: 1)
        addNode("Round", [output + ".flat"], output + ".rounded")
        addNode("Cast", [output + ".rounded"], output + ".indices", ["to": .int(ONNXDataType.int64.rawValue)])
        addNode("Gather", [table, output + ".indices"], output + ".columns", rank: 2, ["axis": .int(1)])
        let rows = hasBias ? output + ".rows" : output
        addNode("Transpose", [output + ".columns"], rows, ["perm": .ints([1, 0])])
        if hasBias {
            guard let bias else { throw LayerKitError.invalidModel("hasBias is set, but the layer has no bias") }
            addNode("Add", [rows, try weightConstant(bias, "bias", name: output + ".bias", dims: [o])], output)
        }
    }

    /// `mvn`: x minus its mean over H and W (or C, H and W with
    /// `acrossChannels`), divided by sqrt(variance + epsilon) with
    /// `normalizeVariance` (epsilon 1e-6 when 0).
    private mutating func meanVarianceNormalization(_ reader: inout ProtobufReader, _ input: String,
                                                    _ output: String) throws {
        let (floats, varints) = try Self.scalars(&reader, "MeanVarianceNormalizeLayerParams")
        let across = varints[1] ?? 0 != 0, normalize = varints[2] ?? 0 != 0
        let epsilon = floats[3].flatMap { $0 == 0 ? nil : $0 } ?? 1e-6
        let x = try legacy(input), axes = Self.trailing(across ? "CHW" : "HW")
        let mean = output + ".mean", centered = normalize ? output + ".centered" : output
        addNode("ReduceMean", [x], mean, ["axes": .ints(axes), "keepdims": .int(1)])
        addNode("Sub", [x, mean], centered)
        guard normalize else { return }
        addNode("Mul", [centered, centered], output + ".squared")
        addNode("ReduceMean", [output + ".squared"], output + ".variance", ["axes": .ints(axes), "keepdims": .int(1)])
        addNode("Add", [output + ".variance", constant(output + ".epsilon", [], [epsilon])], output + ".shifted")
        addNode("Sqrt", [output + ".shifted"], output + ".deviation")
        addNode("Div", [centered, output + ".deviation"], output)
    }

    /// `l2normalize`: x / sqrt(sum of x^2 over C, H and W + epsilon) (epsilon 1e-6 when 0).
    private mutating func l2Normalization(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let (floats, _) = try Self.scalars(&reader, "L2NormalizeLayerParams")
        let epsilon = floats[1].flatMap { $0 == 0 ? nil : $0 } ?? 1e-6
        let x = try legacy(input)
        addNode("ReduceSumSquare", [x], output + ".sumSquare", ["axes": .ints(Self.trailing("CHW")), "keepdims": .int(1)])
        addNode("Add", [output + ".sumSquare", constant(output + ".epsilon", [], [epsilon])], output + ".shifted")
        addNode("Sqrt", [output + ".shifted"], output + ".norm")
        addNode("Div", [x, output + ".norm"], output)
    }

    /// `lrn`: ONNX's LRN (x / (k + alpha / size * the window's sum of squares)^beta), k 1 when 0.
    private mutating func localResponseNormalization(_ reader: inout ProtobufReader, _ input: String,
                                                     _ output: String) throws {
        let (floats, varints) = try Self.scalars(&reader, "LRNLayerParams")
        let size = try Self.size(varints[3] ?? 0, "localSize")
        let k = floats[4].flatMap { $0 == 0 ? nil : $0 } ?? 1
        addNode("LRN", [try rank4(input)], output, rank: 4, ["alpha": .float(floats[1] ?? 0), "beta": .float(floats[2] ?? 0),
                                                             "bias": .float(k), "size": .int(size)])
    }

    // MARK: Layout

    /// `crop`: one input loses its border amounts; with two, the first is
    /// cut at `offset` to the second's height and width.
    private mutating func crop(_ reader: inout ProtobufReader, _ inputs: [String], _ output: String) throws {
        var amounts: [(UInt64, UInt64)] = [], offset: [Int64] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "cropAmounts", type: "BorderAmounts")
                amounts = try Self.borderAmounts(&sub)
            case 5: try reader.appendInt64s(field, "offset", to: &offset)
            default: try reader.skip(field)
            }
        }
        let x = try rank4(inputs[0])
        if inputs.count == 2 {
            guard offset.isEmpty || (offset.count == 2 && offset.allSatisfy { (0...65536).contains($0) }) else {
                throw LayerKitError.invalidModel("offset \(offset) is not two offsets from 0 to 65536")
            }
            let offsets = offset.isEmpty ? [0, 0] : offset.map { Int($0) }
            let reference = try rank4(inputs[1])
            addNode("Shape", [reference], output + ".reference", rank: 1)
            addNode("Slice", [output + ".reference", constant(output + ".hw.start", [1], int64s: [2]),
                              constant(output + ".hw.end", [1], int64s: [4])], output + ".size", rank: 1)
            addNode("Add", [output + ".size", constant(output + ".offsets", [2], int64s: offsets)], output + ".ends", rank: 1)
            addNode("Slice", [x, output + ".offsets", output + ".ends", constant(output + ".axes", [2], int64s: [2, 3])],
                    output)
            return
        }
        guard inputs.count == 1 else { throw LayerKitError.invalidModel("a crop reads 1 or 2 inputs, not \(inputs.count)") }
        guard amounts.count == 2 else {
            throw LayerKitError.invalidModel("\(amounts.count) crop amounts where 2 (height, width) were expected")
        }
        let (top, bottom) = (try Self.size(amounts[0].0, "a crop amount", allowZero: true),
                             try Self.size(amounts[0].1, "a crop amount", allowZero: true))
        let (left, right) = (try Self.size(amounts[1].0, "a crop amount", allowZero: true),
                             try Self.size(amounts[1].1, "a crop amount", allowZero: true))
        // An end of 0 cut from the end is the axis' end.
        let ends = [bottom, right].map { $0 == 0 ? Int(Int64.max) : -$0 }
        addNode("Slice", [x, constant(output + ".starts", [2], int64s: [top, left]),
                          constant(output + ".ends", [2], int64s: ends), constant(output + ".axes", [2], int64s: [2, 3])],
                output)
    }

    /// A `BorderAmounts` message's [start, end] pairs, height first.
    static func borderAmounts(_ reader: inout ProtobufReader) throws -> [(UInt64, UInt64)] {
        var edges: [(UInt64, UInt64)] = []
        while let a = try reader.nextField() {
            guard a.number == 10 else { try reader.skip(a); continue }
            var edge = try reader.message(a, "borderAmounts", type: "EdgeSizes")
            var (start, end): (UInt64, UInt64) = (0, 0)
            while let e = try edge.nextField() {
                switch e.number {
                case 1: start = try edge.uint64(e, "startEdgeSize")
                case 2: end = try edge.uint64(e, "endEdgeSize")
                default: try edge.skip(e)
                }
            }
            edges.append((start, end))
        }
        return edges
    }

    /// `padding`: constant (its value), reflection or replication padding of H and W: Pad.
    private mutating func pad(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var mode = "constant", value: Float = 0, amounts: [(UInt64, UInt64)] = []
        while let field = try reader.nextField() {
            switch field.number {
            case 1:
                var sub = try reader.message(field, "constant", type: "PaddingConstant")
                while let f = try sub.nextField() {
                    if f.number == 1 { value = try sub.float(f, "value") } else { try sub.skip(f) }
                }
                mode = "constant"
            case 2: try reader.skip(field); mode = "reflect"
            case 3: try reader.skip(field); mode = "edge"
            case 10:
                var sub = try reader.message(field, "paddingAmounts", type: "BorderAmounts")
                amounts = try Self.borderAmounts(&sub)
            default: try reader.skip(field)
            }
        }
        guard amounts.isEmpty || amounts.count == 2 else {
            throw LayerKitError.invalidModel("\(amounts.count) padding amounts where 2 (height, width) were expected")
        }
        let edges = amounts.isEmpty ? [(0, 0), (0, 0)] : amounts
        let sizes = try [edges[0].0, edges[1].0, edges[0].1, edges[1].1].map {
            try Self.size($0, "a padding amount", allowZero: true)
        }
        let x = try rank4(input)
        var inputs = [x, constant(output + ".pads", [8], int64s: [0, 0, sizes[0], sizes[1], 0, 0, sizes[2], sizes[3]])]
        if mode == "constant" { inputs.append(constant(output + ".value", [], [value])) }
        addNode("Pad", inputs, output, rank: 4, ["mode": .string(mode)])
    }

    /// `upsample`: Resize by the scaling factors (whole, or fractional);
    /// nearest neighbour takes cell floor(i / s) (asymmetric), bilinear
    /// samples its grid as the linear mode says: DEFAULT i / s
    /// (asymmetric), ALIGN_CORNERS_TRUE (align_corners), ALIGN_CORNERS_FALSE
    /// (half_pixel, clamped to the input).
    private mutating func upsample(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var factors: [Int64] = [], fractional: [Float] = [], mode: Int32 = 0, linearMode: Int32 = 0
        while let field = try reader.nextField() {
            switch field.number {
            case 1: try reader.appendInt64s(field, "scalingFactor", to: &factors)
            case 7: try reader.appendFloats(field, "fractionalScalingFactor", to: &fractional)
            case 5: mode = try reader.int32(field, "mode")
            case 6: linearMode = try reader.int32(field, "linearUpsampleMode")
            default: try reader.skip(field)
            }
        }
        guard mode == 0 || mode == 1, (0...2).contains(linearMode) else {
            throw LayerKitError.invalidModel("upsample mode \(mode), linear mode \(linearMode) is not one Core ML defines")
        }
        let scales: [Float]
        if !fractional.isEmpty {
            guard factors.isEmpty, fractional.count == 2, fractional.allSatisfy({ $0.isFinite && $0 > 0 && $0 <= 65536 }) else {
                throw LayerKitError.invalidModel("fractionalScalingFactor \(fractional) is not two factors above 0 "
                                                 + "(without scalingFactor)")
            }
            guard mode == 1, linearMode != 0 else {
                throw LayerKitError.invalidModel("a fractional scaling factor needs bilinear upsampling with an "
                                                 + "align-corners mode")
            }
            scales = fractional
        } else {
            scales = try Self.pair(factors, "scalingFactor", default: 1).map(Float.init)
        }
        var attributes: [String: ONNXAttribute] = [
            "mode": .string(mode == 0 ? "nearest" : "linear"),
            "coordinate_transformation_mode": .string(mode == 0 || linearMode == 0 ? "asymmetric"
                                                      : linearMode == 1 ? "align_corners" : "half_pixel"),
        ]
        if mode == 0 { attributes["nearest_mode"] = .string("floor") }
        addNode("Resize", [try rank4(input), "", constant(output + ".scales", [4], [1, 1] + scales)], output, rank: 4,
                attributes)
    }

    /// `permute` of the rank-5 [Seq, B, C, H, W] (axis over Seq, C, H, W):
    /// with the sequence axis in place, a Transpose of [N, C, H, W].
    private mutating func permute(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var axes: [Int64] = []
        while let field = try reader.nextField() {
            if field.number == 1 { try reader.appendInt64s(field, "axis", to: &axes) } else { try reader.skip(field) }
        }
        if axes.isEmpty { axes = [0, 1, 2, 3] }
        guard axes.count == 4, Set(axes) == [0, 1, 2, 3] else {
            throw LayerKitError.invalidModel("axis \(axes) is not a permutation of [0, 1, 2, 3]")
        }
        guard axes[0] == 0 else {
            throw LayerKitError.invalidModel("axis \(axes) moves the sequence axis, which LayerKit does not translate")
        }
        addNode("Transpose", [try rank4(input)], output, rank: 4, ["perm": .ints([0] + axes.dropFirst().map { Int($0) })])
    }

    /// `split`: `nOutputs` equal parts along the channels.
    private mutating func split(_ reader: inout ProtobufReader, _ input: String, _ outputs: [String]) throws {
        let (_, varints) = try Self.scalars(&reader, "SplitLayerParams")
        let count = varints[1] ?? UInt64(outputs.count)
        guard count == UInt64(outputs.count) else {
            throw LayerKitError.invalidModel("nOutputs \(count) but the layer has \(outputs.count) outputs")
        }
        let x = try legacy(input)
        addNode("Split", [x], outputs: outputs, rank: rank(of: x), ["axis": .int(-3)])
    }

    /// `reorganizeData`: SpaceToDepth, DepthToSpace (DCR), or pixel shuffle (DepthToSpace CRD).
    private mutating func reorganize(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let (_, varints) = try Self.scalars(&reader, "ReorganizeDataLayerParams")
        let mode = varints[1] ?? 0, block = try Self.size(varints[2] ?? 0, "blockSize")
        guard block >= 2, mode <= 2 else {
            throw LayerKitError.invalidModel("reorganizeData mode \(mode) with block size \(block) is not one Core ML defines")
        }
        var attributes: [String: ONNXAttribute] = ["blocksize": .int(block)]
        if mode > 0 { attributes["mode"] = .string(mode == 1 ? "DCR" : "CRD") }
        addNode(mode == 0 ? "SpaceToDepth" : "DepthToSpace", [try rank4(input)], output, rank: 4, attributes)
    }

    /// `slice` of the rank-5 era: [startIndex, endIndex) by stride along C, H or W, as numpy slices.
    private mutating func slice(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var start: Int64 = 0, end: Int64 = 0, step: UInt64 = 1, axis: Int32 = 0
        while let field = try reader.nextField() {
            switch field.number {
            case 1: start = try reader.int64(field, "startIndex")
            case 2: end = try reader.int64(field, "endIndex")
            case 3: step = try reader.uint64(field, "stride")
            case 4: axis = try reader.int32(field, "axis")
            default: try reader.skip(field)
            }
        }
        guard (0...2).contains(axis), step >= 1, step <= 1 << 24 else {
            throw LayerKitError.invalidModel("slice axis \(axis), stride \(step) is not one Core ML defines")
        }
        let x = try legacy(input)
        addNode("Slice", [x, constant(output + ".starts", [1], int64s: [Int(start)]),
                          constant(output + ".ends", [1], int64s: [Int(end)]),
                          constant(output + ".axes", [1], int64s: [Int(axis) - 3]),
                          constant(output + ".steps", [1], int64s: [Int(step)])], output)
    }

    /// `loadConstant`: its [C, H, W] data as a [1, C, H, W] blob.
    private mutating func loadConstant(_ reader: inout ProtobufReader, _ output: String) throws {
        var shape: [Int64] = [], data: ProtobufReader?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: try reader.appendInt64s(field, "shape", to: &shape)
            case 2: data = try reader.message(field, "data", type: "WeightParams")
            default: try reader.skip(field)
            }
        }
        guard shape.count == 3, shape.allSatisfy({ (1...(1 << 24)).contains($0) }) else {
            throw LayerKitError.invalidModel("shape \(shape) is not [C, H, W]")
        }
        guard let data else { throw LayerKitError.invalidModel("the layer has no data") }
        let dims = exactMapping ? shape.map { Int($0) } : [1] + shape.map { Int($0) }
        addNode("Identity", [try weightConstant(data, "data", name: output + ".data", dims: dims)], output,
                rank: dims.count)
    }

    // MARK: Element-wise

    /// `unary`: f(scale * x + shift) for sqrt, rsqrt, inverse, power, exp, log, abs, threshold.
    private mutating func unary(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let (floats, varints) = try Self.scalars(&reader, "UnaryFunctionLayerParams")
        let type = varints[1] ?? 0, alpha = floats[2] ?? 0
        let epsilon = floats[3].flatMap { $0 == 0 ? nil : $0 } ?? 1e-6
        let shift = floats[4] ?? 0, scale = floats[5].flatMap { $0 == 0 ? nil : $0 } ?? 1
        var x = try blob(input)
        if scale != 1 {
            addNode("Mul", [x, constant(output + ".scale", [], [scale])], output + ".scaled")
            x = output + ".scaled"
        }
        if shift != 0 {
            addNode("Add", [x, constant(output + ".shift", [], [shift])], output + ".shifted")
            x = output + ".shifted"
        }
        func withEpsilon() -> String {
            addNode("Add", [x, constant(output + ".epsilon", [], [epsilon])], output + ".guarded")
            return output + ".guarded"
        }
        switch type {
        case 0: addNode("Sqrt", [x], output)
        case 1:
            addNode("Sqrt", [withEpsilon()], output + ".root")
            addNode("Reciprocal", [output + ".root"], output)
        case 2: addNode("Reciprocal", [withEpsilon()], output)
        case 3: addNode("Pow", [x, constant(output + ".alpha", [], [alpha])], output)
        case 4: addNode("Exp", [x], output)
        case 5: addNode("Log", [x], output)
        case 6: addNode("Abs", [x], output)
        case 7: addNode("Max", [x, constant(output + ".alpha", [], [alpha])], output)
        default: throw LayerKitError.invalidModel("unary operation \(type) is not one Core ML defines")
        }
    }

    /// `clip`: min(max(x, minVal), maxVal).
    private mutating func clip(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let (floats, _) = try Self.scalars(&reader, "ClipLayerParams")
        let (low, high) = (floats[1] ?? 0, floats[2] ?? 0)
        guard low <= high else { throw LayerKitError.invalidModel("minVal \(low) is above maxVal \(high)") }
        addNode("Clip", [try blob(input), constant(output + ".min", [], [low]), constant(output + ".max", [], [high])],
                output)
    }

    /// `gelu` in its three modes, of standard ops (opset 13 has no Gelu).
    private mutating func gelu(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let (_, varints) = try Self.scalars(&reader, "GeluLayerParams")
        let x = try blob(input)
        switch varints[1] ?? 0 {
        case 0:  // 0.5 x (1 + erf(x / sqrt 2))
            addNode("Mul", [x, constant(output + ".rsqrt2", [], [Float(1 / 2.0.squareRoot())])], output + ".inner")
            addNode("Erf", [output + ".inner"], output + ".erf")
        case 1:  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
            addNode("Mul", [x, x], output + ".square")
            addNode("Mul", [output + ".square", constant(output + ".c", [], [0.044715])], output + ".cubic0")
            addNode("Add", [output + ".cubic0", constant(output + ".one0", [], [1])], output + ".cubic1")
            addNode("Mul", [output + ".cubic1", x], output + ".cubic")
            addNode("Mul", [output + ".cubic", constant(output + ".k", [], [Float((2 / Double.pi).squareRoot())])],
                    output + ".inner")
            addNode("Tanh", [output + ".inner"], output + ".erf")
        case 2:  // x sigmoid(1.702 x)
            addNode("Mul", [x, constant(output + ".k", [], [1.702])], output + ".inner")
            addNode("Sigmoid", [output + ".inner"], output + ".sigmoid")
            addNode("Mul", [x, output + ".sigmoid"], output)
            return
        default: throw LayerKitError.invalidModel("GELU mode \(varints[1] ?? 0) is not one Core ML defines")
        }
        addNode("Add", [output + ".erf", constant(output + ".one", [], [1])], output + ".sum")
        addNode("Mul", [output + ".sum", constant(output + ".half", [], [0.5])], output + ".halfSum")
        addNode("Mul", [x, output + ".halfSum"], output)
    }

    /// `clampedReLU`: min(beta, x) for x >= 0, min(beta, alpha x) below.
    private mutating func clampedReLU(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let (floats, _) = try Self.scalars(&reader, "ClampedReLULayerParams")
        addNode("LeakyRelu", [try blob(input)], output + ".leaky", ["alpha": .float(floats[1] ?? 0)])
        addNode("Min", [output + ".leaky", constant(output + ".beta", [], [floats[2] ?? 0])], output)
    }

    /// `bias`: x plus a bias of shape [1], [C], [1, H, W] or [C, H, W].
    private mutating func bias(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var shape: [Int64] = [], values: ProtobufReader?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: try reader.appendInt64s(field, "shape", to: &shape)
            case 2: values = try reader.message(field, "bias", type: "WeightParams")
            default: try reader.skip(field)
            }
        }
        guard let values else { throw LayerKitError.invalidModel("the layer has no bias") }
        let x = try legacy(input)
        addNode("Add", [x, try broadcastConstant(values, "bias", shape, output + ".bias")], output)
    }

    /// `scale`: x times a scale, plus a bias with `hasBias`, each of shape [1], [C], [1, H, W] or [C, H, W].
    private mutating func scale(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        var scaleShape: [Int64] = [], biasShape: [Int64] = [], hasBias = false
        var scale: ProtobufReader?, bias: ProtobufReader?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: try reader.appendInt64s(field, "shapeScale", to: &scaleShape)
            case 2: scale = try reader.message(field, "scale", type: "WeightParams")
            case 3: hasBias = try reader.uint64(field, "hasBias") != 0
            case 4: try reader.appendInt64s(field, "shapeBias", to: &biasShape)
            case 5: bias = try reader.message(field, "bias", type: "WeightParams")
            default: try reader.skip(field)
            }
        }
        guard let scale else { throw LayerKitError.invalidModel("the layer has no scale") }
        let x = try legacy(input)
        let scaled = hasBias ? output + ".scaled" : output
        addNode("Mul", [x, try broadcastConstant(scale, "scale", scaleShape, output + ".scale")], scaled)
        guard hasBias else { return }
        guard let bias else { throw LayerKitError.invalidModel("hasBias is set, but the layer has no bias") }
        addNode("Add", [scaled, try broadcastConstant(bias, "bias", biasShape, output + ".bias")], output)
    }

    /// A bias or scale of shape [1], [C], [1, H, W] or [C, H, W] as an
    /// initializer that broadcasts against [N, C, H, W]: [1], [C, 1, 1],
    /// [1, H, W] or [C, H, W].
    private mutating func broadcastConstant(_ reader: ProtobufReader, _ what: String, _ shape: [Int64],
                                            _ name: String) throws -> String {
        guard shape.count == 1 || shape.count == 3, shape.allSatisfy({ (1...(1 << 24)).contains($0) }) else {
            throw LayerKitError.invalidModel("\(what) shape \(shape) is not [1], [C], [1, H, W] or [C, H, W]")
        }
        let dims = shape.count == 3 ? shape.map { Int($0) } : shape[0] == 1 ? [1] : [Int(shape[0]), 1, 1]
        return try weightConstant(reader, what, name: name, dims: dims)
    }

    // MARK: Reductions

    /// `reduce` over C, H, W, their H and W, or one of them, keeping the
    /// reduced axes as 1: sum, mean, product, sum of ln(x + epsilon), sum
    /// of squares, L1, L2, max, min, or argmax (one axis, as a float).
    private mutating func reduce(_ reader: inout ProtobufReader, _ input: String, _ output: String) throws {
        let (floats, varints) = try Self.scalars(&reader, "ReduceLayerParams")
        let mode = varints[1] ?? 0, axisCode = varints[3] ?? 0
        let epsilon = floats[2].flatMap { $0 == 0 ? nil : $0 } ?? 1e-6
        let axisNames = ["CHW", "HW", "C", "H", "W"]
        guard axisCode < UInt64(axisNames.count), mode <= 9 else {
            throw LayerKitError.invalidModel("reduce mode \(mode) over axis \(axisCode) is not one Core ML defines")
        }
        let axes = Self.trailing(axisNames[Int(axisCode)])
        var x = try legacy(input)
        let keep: [String: ONNXAttribute] = ["axes": .ints(axes), "keepdims": .int(1)]
        switch mode {
        case 0:
            addNode("ReduceSum", [x, constant(output + ".axes", [axes.count], int64s: axes)], output, ["keepdims": .int(1)])
        case 1: addNode("ReduceMean", [x], output, keep)
        case 2: addNode("ReduceProd", [x], output, keep)
        case 3:
            addNode("Add", [x, constant(output + ".epsilon", [], [epsilon])], output + ".shifted")
            addNode("Log", [output + ".shifted"], output + ".log")
            x = output + ".log"
            addNode("ReduceSum", [x, constant(output + ".axes", [axes.count], int64s: axes)], output, ["keepdims": .int(1)])
        case 4: addNode("ReduceSumSquare", [x], output, keep)
        case 5: addNode("ReduceL1", [x], output, keep)
        case 6: addNode("ReduceL2", [x], output, keep)
        case 7: addNode("ReduceMax", [x], output, keep)
        case 8: addNode("ReduceMin", [x], output, keep)
        default:
            guard axes.count == 1 else {
                throw LayerKitError.invalidModel("argmax over \(axisNames[Int(axisCode)]): Core ML's argmax takes one axis")
            }
            addNode("ArgMax", [x], output + ".index", ["axis": .int(axes[0]), "keepdims": .int(1)])
            addNode("Cast", [output + ".index"], output, ["to": .int(ONNXDataType.float.rawValue)])
        }
    }
}
