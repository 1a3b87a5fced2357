import Foundation

/// What one ONNX node becomes: a layer (nil for nodes that do no work) and
/// which of the node's inputs the layer takes, in order. Inputs not listed
/// (weights, shapes, bounds) were folded into the layer at import.
struct ConvertedNode {
    let layer: Layer?
    let inputs: [Int]
    /// Constant inputs the layer takes in another form than the file's
    /// (by node input index), such as a broadcast operand padded to rank.
    var reshapedConstants: [Int: Tensor] = [:]
}

/// A standard ONNX op LayerKit converts: how many inputs and outputs
/// (empty names for omitted optional ones included) a node may list at an
/// opset, from the ONNX operator spec (onnxruntime refuses a node outside
/// them, and so does the load-time validation, `ONNXValidation`), and the
/// conversion of a node to a layer.
struct ONNXOperator: Sendable {
    typealias Arity = (inputs: ClosedRange<Int>, outputs: ClosedRange<Int>)
    let arity: @Sendable (_ opset: Int) -> Arity
    let convert: ONNXOperators.Converter
    /// The newest version of the op's definition (an opset at which it
    /// changed, `ONNXOpVersions`) the converter implements; nil when it
    /// implements every version up to `ONNXOpVersions.newestOpset`.
    private(set) var newestVersion: Int?

    /// This op, implemented only through `version`: a model whose opset
    /// resolves the op to a newer definition is refused, naming both.
    func through(version: Int) -> ONNXOperator {
        var op = self
        op.newestVersion = version
        return op
    }

    /// An op whose arity does not change across opsets.
    init(inputs: ClosedRange<Int>, outputs: ClosedRange<Int> = 1...1, _ convert: @escaping ONNXOperators.Converter) {
        self.arity = { _ in (inputs, outputs) }
        self.convert = convert
    }

    /// An op whose arity depends on the opset.
    init(arity: @escaping @Sendable (_ opset: Int) -> Arity, _ convert: @escaping ONNXOperators.Converter) {
        self.arity = arity
        self.convert = convert
    }
}

/// The standard ONNX operators LayerKit runs, each a conversion from a node
/// to a layer. Attribute names and defaults follow the ONNX operator spec.
/// Each family of ops lives in a file of its own (`ONNXOperators+<Family>`)
/// and is listed once in `families`.
enum ONNXOperators {
    typealias Converter = @Sendable (ONNXNodeContext) throws -> ConvertedNode

    /// Every family's ops; a name listed twice is a programming error,
    /// caught by `OpTableTests`.
    static let families: [[String: ONNXOperator]] = [core, normalization, layout, data]

    /// The ops, by op type.
    static let table: [String: ONNXOperator] = families.reduce(into: [:]) { table, family in
        table.merge(family) { first, _ in first }
    }

    /// The ops this file converts: convolution, dense layers, pooling and
    /// the catalog's element-wise ops (reshapes are in `data`).
    static let core: [String: ONNXOperator] = {
        var ops: [String: ONNXOperator] = [
            "Conv": ONNXOperator(inputs: 2...3, convolution),
            "Gemm": ONNXOperator(arity: { ($0 >= 11 ? 2...3 : 3...3, 1...1) }, gemm),
            "MatMul": ONNXOperator(inputs: 2...2, matMul),
            "Add": ONNXOperator(inputs: 2...2) { try binary($0, .add) },
            "Sub": ONNXOperator(inputs: 2...2) { try binary($0, .sub) },
            "Mul": ONNXOperator(inputs: 2...2) { try binary($0, .mul) },
            "Div": ONNXOperator(inputs: 2...2) { try binary($0, .div) },
            "BatchNormalization": ONNXOperator(arity: { (5...5, $0 >= 14 ? 1...3 : 1...5) }, batchNormalization),
            "GlobalAveragePool": ONNXOperator(inputs: 1...1) { try globalPool($0, .globalAverage) },
            "GlobalMaxPool": ONNXOperator(inputs: 1...1) { try globalPool($0, .globalMax) },
            "AveragePool": ONNXOperator(inputs: 1...1) { try pool($0, average: true) },
            "MaxPool": ONNXOperator(arity: { (1...1, $0 >= 8 ? 1...2 : 1...1) }) { try pool($0, average: false) },
            "Identity": ONNXOperator(inputs: 1...1) { _ in ConvertedNode(layer: nil, inputs: [0]) },
            // Inference: Dropout passes its input through.
            "Dropout": ONNXOperator(arity: { ($0 >= 12 ? 1...3 : 1...1, 1...2) }) { _ in
                ConvertedNode(layer: nil, inputs: [0])
            },
        ]
        for name in catalogOps {
            switch name {
            case "PRelu", "Pow": ops[name] = ONNXOperator(inputs: 2...2, elementwise)
            case "Clip": ops[name] = ONNXOperator(arity: { ($0 >= 11 ? 1...3 : 1...1, 1...1) }, elementwise)
            default: ops[name] = ONNXOperator(inputs: 1...1, elementwise)
            }
        }
        return ops
    }()

    /// How many inputs and outputs a node of `opType` may list at `opset`;
    /// nil for ops LayerKit does not convert.
    static func arity(of opType: String, opset: Int) -> ONNXOperator.Arity? {
        table[opType]?.arity(opset)
    }

    /// The catalog's element-wise ops that are standard ONNX ops (Swish and
    /// Linear are LayerKit's own, found as custom layers).
    static let catalogOps: Set<String> = Set(OpDefinition.catalog.map(\.name)).subtracting(["Swish", "Linear"])

    /// Every op type `converter(for:)` knows, for error messages and `inspect`.
    static var supportedOps: [String] { table.keys.sorted() }

    static func converter(for opType: String) -> Converter? { table[opType]?.convert }

    // MARK: - Convolution and dense layers

    static func convolution(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"])
        guard try node.shape(0).count == 4 else { throw node.error("only 2-D convolution (NCHW input) is supported") }
        let weights = try node.constant(1, "the weights")
        guard weights.shape.count == 4 else { throw node.error("weights must be rank 4, got \(Tensor.describe(weights.shape))") }
        if let kernel = try node.ints("kernel_shape"), kernel != Array(weights.shape[2...]) {
            throw node.error("kernel_shape \(kernel) does not match the weights \(Tensor.describe(weights.shape))")
        }
        let layer = try Convolution(weights: weights, bias: node.optionalConstant(2, "the bias"),
                                    strides: node.spatial("strides", default: [1, 1]),
                                    dilations: node.spatial("dilations", default: [1, 1]),
                                    padding: padding(node), group: node.int("group", default: 1))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func gemm(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["alpha", "beta", "transA", "transB"])
        let layer = try Gemm(b: node.constant(1, "B"), c: node.optionalConstant(2, "C"),
                             alpha: node.float("alpha", default: 1), beta: node.float("beta", default: 1),
                             transA: node.int("transA", default: 0) != 0, transB: node.int("transB", default: 0) != 0)
        return ConvertedNode(layer: layer, inputs: [0])
    }

    static func matMul(_ node: ONNXNodeContext) throws -> ConvertedNode {
        guard try node.shape(0).count == 2, try node.shape(1).count == 2 else {
            throw node.error("only 2-D MatMul is supported")
        }
        return ConvertedNode(layer: try Gemm(b: node.constant(1, "B"), name: "MatMul"), inputs: [0])
    }

    // MARK: - Element-wise

    /// Add/Sub/Mul/Div with ONNX broadcasting: the lower-rank side is
    /// padded with leading 1s, which for a constant is done here.
    static func binary(_ node: ONNXNodeContext, _ operation: BinaryLayer.Operation) throws -> ConvertedNode {
        try node.requireAttributes([])
        let (a, b) = (try node.shape(0), try node.shape(1))
        var converted = ConvertedNode(layer: BinaryLayer(operation), inputs: [0, 1])
        guard a.count != b.count else { return converted }
        let low = a.count < b.count ? 0 : 1
        guard node.initializers[low] != nil else {
            throw node.error("inputs of ranks \(a.count) and \(b.count): broadcasting a computed tensor of lower rank "
                             + "is not supported")
        }
        let constant = try node.constant(low, "input \(low)")
        let rank = max(a.count, b.count)
        converted.reshapedConstants[low] = try constant.reshaped(
            to: Array(repeating: 1, count: rank - constant.shape.count) + constant.shape)
        return converted
    }

    static func batchNormalization(_ node: ONNXNodeContext) throws -> ConvertedNode {
        try node.requireAttributes(["epsilon", "momentum", "training_mode", "spatial"])
        guard try node.int("training_mode", default: 0) == 0 else { throw node.error("training_mode is not supported") }
        guard node.node.outputs.filter({ !$0.isEmpty }).count == 1 else {
            throw node.error("the running mean/variance outputs (training) are not supported")
        }
        let layer = try BatchNormalization(scale: node.constant(1, "scale"), bias: node.constant(2, "B"),
                                           mean: node.constant(3, "input_mean"), variance: node.constant(4, "input_var"),
                                           epsilon: node.float("epsilon", default: 1e-5))
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// A catalog op: its attributes are its parameters; extra inputs that
    /// ONNX gives as tensors (PRelu's slope, Clip's bounds, Pow's exponent)
    /// become weights or parameters.
    static func elementwise(_ node: ONNXNodeContext) throws -> ConvertedNode {
        guard let definition = OpDefinition.catalog.first(where: { $0.name == node.node.opType }) else {
            throw node.error("not in the catalog")
        }
        var parameters = try node.parameters()
        var weights: [Data] = []
        switch definition.name {
        case "PRelu":
            let slope = try node.constant(1, "slope")
            weights = [try perChannel(slope, of: node.shape(0), node: node).littleEndianData]
        case "Clip" where node.opset >= 11:
            for (i, name) in [(1, "min"), (2, "max")] {
                if let bound = try node.optionalConstant(i, name) { parameters[name] = Double(try scalar(bound, name, node)) }
            }
        case "Pow":
            parameters["exponent"] = Double(try scalar(node.constant(1, "Y"), "Y", node))
        default:
            guard node.node.inputs.count == 1 else { throw node.error("takes one input") }
        }
        let layer = try ElementwiseLayer(definition: definition, parameters: parameters)
        if !weights.isEmpty { try layer.setWeightData(weights) }
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// A constant broadcast over the channel axis as one value per channel:
    /// a scalar, [C], [C,1,1] or [1,C,1,1].
    static func perChannel(_ tensor: Tensor, of shape: [Int], node: ONNXNodeContext) throws -> Tensor {
        let channels = shape.count > 1 ? shape[1] : 1
        // A scalar is spread over the channels: memory sized from a declared
        // shape, not from the file's bytes, so it is capped.
        guard channels <= ONNXImporter.maxChannels else {
            throw node.error("input \(Tensor.describe(shape)) has \(channels) channels, more than LayerKit's limit "
                             + "of \(ONNXImporter.maxChannels) for per-channel weights")
        }
        if tensor.count == 1 { return try Tensor(shape: [channels], values: Array(repeating: tensor[0], count: channels)) }
        let nonUnit = tensor.shape.enumerated().filter { $0.element != 1 }
        guard nonUnit.count == 1, nonUnit[0].element == channels,
              tensor.shape.count - nonUnit[0].offset == shape.count - 1 else {
            throw node.error("a constant of shape \(Tensor.describe(tensor.shape)) is not per-channel for input "
                             + "\(Tensor.describe(shape))")
        }
        return try tensor.reshaped(to: [channels])
    }

    static func scalar(_ tensor: Tensor, _ what: String, _ node: ONNXNodeContext) throws -> Float {
        guard tensor.count == 1 else { throw node.error("\(what) must be a scalar, got \(Tensor.describe(tensor.shape))") }
        return tensor[0]
    }

    // MARK: - Pooling

    static func globalPool(_ node: ONNXNodeContext, _ kind: Pooling.Kind) throws -> ConvertedNode {
        try node.requireAttributes([])
        guard try node.shape(0).count == 4 else { throw node.error("only NCHW input is supported") }
        return ConvertedNode(layer: try Pooling(kind: kind), inputs: [0])
    }

    static func pool(_ node: ONNXNodeContext, average: Bool) throws -> ConvertedNode {
        try node.requireAttributes(["auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads",
                                    "strides", "storage_order"])
        guard try node.shape(0).count == 4 else { throw node.error("only 2-D pooling (NCHW input) is supported") }
        guard node.node.outputs.filter({ !$0.isEmpty }).count == 1 else {
            throw node.error("the Indices output is not supported")
        }
        guard node.node.attributes["kernel_shape"] != nil else { throw node.error("kernel_shape is required") }
        let kernel = try node.spatial("kernel_shape", default: [])
        let kind: Pooling.Kind = average
            ? .average(countIncludePad: try node.int("count_include_pad", default: 0) != 0) : .max
        let layer = try Pooling(kind: kind, kernel: kernel, strides: node.spatial("strides", default: [1, 1]),
                                dilations: node.spatial("dilations", default: [1, 1]), padding: padding(node),
                                ceilMode: node.int("ceil_mode", default: 0) != 0)
        return ConvertedNode(layer: layer, inputs: [0])
    }

    /// `auto_pad` and `pads` as one padding.
    static func padding(_ node: ONNXNodeContext) throws -> Padding {
        switch try node.string("auto_pad", default: "NOTSET") {
        case "NOTSET": return .explicit(try node.spatial("pads", default: [0, 0, 0, 0]))
        case "SAME_UPPER": return .sameUpper
        case "SAME_LOWER": return .sameLower
        case "VALID": return .valid
        case let other: throw node.error("auto_pad '\(other)' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
        }
    }
}
