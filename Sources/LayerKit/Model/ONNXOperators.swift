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
    /// Outputs known at load (by node output index), beside a layer-less
    /// node's pass-through output 0: Dropout's all-true mask at inference.
    var constantOutputs: [Int: Tensor] = [:]
}

/// A standard ONNX op LayerKit converts: how many inputs and outputs
/// (empty names for omitted optional ones included) a node may list at an
/// opset, from the ONNX operator spec (onnxruntime refuses a node outside
/// them, and so does the load-time validation, `ONNXValidation`), and the
/// conversion of a node to a layer. Which versions of the op's definition
/// the conversion implements is `ONNXOperators.implementedVersions`.
struct ONNXOperator: Sendable {
    typealias Arity = (inputs: ClosedRange<Int>, outputs: ClosedRange<Int>)
    let arity: @Sendable (_ opset: Int) -> Arity
    let convert: ONNXOperators.Converter

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
    static let families: [[String: ONNXOperator]] = [core, normalization, layout, data, math, convolution, folding]

    /// The ops, by op type.
    static let table: [String: ONNXOperator] = families.reduce(into: [:]) { table, family in
        table.merge(family) { first, _ in first }
    }

    /// The ops this file converts: the catalog's one-input element-wise ops
    /// and Identity (dense layers and broadcasting ops are in `math`,
    /// reshapes in `data`; convolution, pooling, BatchNormalization and
    /// Dropout in `convolution`).
    static let core: [String: ONNXOperator] = {
        var ops: [String: ONNXOperator] = [
            "Identity": ONNXOperator(inputs: 1...1) { _ in ConvertedNode(layer: nil, inputs: [0]) },
        ]
        for name in catalogOps.subtracting(mathCatalogOps) {
            switch name {
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

    // MARK: - Element-wise

    /// A catalog op: its attributes are its parameters; extra inputs that
    /// ONNX gives as tensors (Clip's bounds, Pow's scalar exponent) become
    /// parameters.
    static func elementwise(_ node: ONNXNodeContext) throws -> ConvertedNode {
        guard let definition = OpDefinition.catalog.first(where: { $0.name == node.node.opType }) else {
            throw node.error("not in the catalog")
        }
        var parameters = try node.parameters()
        if node.opset < 6 {
            // An in-place hint of opsets 1 to 5, with no bearing on the values.
            parameters["consumed_inputs"] = nil
            // Selu-1's defaults, the constants to four decimals (Selu-6 gives them to float precision).
            if definition.name == "Selu" {
                parameters["alpha"] = parameters["alpha"] ?? 1.6732
                parameters["gamma"] = parameters["gamma"] ?? 1.0507
            }
        }
        switch definition.name {
        case "Clip" where node.opset >= 11:
            for (i, name) in [(1, "min"), (2, "max")] {
                if let bound = try node.optionalConstant(i, name) { parameters[name] = Double(try scalar(bound, name, node)) }
            }
        case "Pow":
            parameters["exponent"] = Double(try scalar(node.constant(1, "Y"), "Y", node))
        default:
            guard node.node.inputs.count == 1 else { throw node.error("takes one input") }
        }
        return ConvertedNode(layer: try ElementwiseLayer(definition: definition, parameters: parameters), inputs: [0])
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
}
